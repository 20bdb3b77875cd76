"""The sweep engine: a resizable worker pool on anyio that emits events and takes control commands.

Importing the package loads only the event vocabulary (a leaf: no runner, scoring, plan or `regex`), which the store
writer, live metrics, tuning and load runs need; the runner is loaded when `Runner` is first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from arenatui.engine.retry import RetryPolicy
from arenatui.kernel.events import (
    CallFinished,
    CallResult,
    CallRetrying,
    CallStarted,
    ConcurrencyChanged,
    Event,
    RunFinished,
    RunPaused,
    RunResumed,
)

if TYPE_CHECKING:
    from arenatui.engine.runner import Runner

__all__ = [
    "CallFinished",
    "CallResult",
    "CallRetrying",
    "CallStarted",
    "ConcurrencyChanged",
    "Event",
    "RetryPolicy",
    "RunFinished",
    "RunPaused",
    "RunResumed",
    "Runner",
]


def __getattr__(name: str) -> Any:
    if name == "Runner":
        from arenatui.engine.runner import Runner

        return Runner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The sweep engine: a resizable worker pool on anyio that emits events and takes control commands."""

from arenatui.engine.events import (
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
from arenatui.engine.retry import RetryPolicy
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

"""User code off the event loop in daemon threads: a python scorer, a code_exec launcher, a sync python solver."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

T = TypeVar("T")


async def in_daemon_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a daemon thread of its own. Cancelling the wait abandons the thread, and being a daemon it
    never holds the process at exit: Ctrl-C ends a sweep at once even while user code (a python scorer that never
    returns, a code_exec sandbox whose launcher dies with its thread) is running. anyio's worker threads are not
    daemons, and the interpreter waits for them at exit."""
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    box: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            box.append((True, fn(*args)))
        except BaseException as e:
            box.append((False, e))
        try:
            anyio.from_thread.run_sync(done.set, token=token)
        except BaseException:  # the loop is gone (the sweep ended without waiting): nobody to tell
            pass

    threading.Thread(target=run, name="arena user code", daemon=True).start()
    await done.wait()
    ok, value = box[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]

"""What a view may do to a running sweep, and read of it: the narrow control surface (the shape of Inspect AI's
display protocol), the same one the user has through the keys and the auto-tuner has through the sweep.

Views hold a `SweepControl` (`Sweep.control`), never the runner: its queues, lanes and workers are the engine's.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from anyio.abc import TaskGroup

from arenatui.kernel.events import ConcurrencyChanged, Event, RunPaused, RunResumed
from arenatui.kernel.limits import concurrency_bounded

if TYPE_CHECKING:
    from arenatui.engine.lanes import Lane, Scheduler


class SweepControl(Protocol):
    @property
    def target(self) -> int:
        """The global concurrency limit now."""
        ...

    @property
    def paused(self) -> bool: ...

    @property
    def cancelled(self) -> bool: ...

    def set_concurrency(self, n: int, source: str = "user") -> None:
        """Change the global limit (bounded to [1, limits.MAX_CONCURRENCY]); raising starts calls at once, lowering
        lets running calls finish."""
        ...

    def set_model_cap(self, model_key: str, cap: int | None, source: str = "user") -> None:
        """Cap one model's calls in flight at its provider (None: no cap)."""
        ...

    def model_cap(self, model_key: str) -> int | None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def cancel(self) -> None:
        """Stop now: calls in flight end as 'cancelled' (resume runs them again); finished ones stay."""
        ...


class Controls:
    """The runner's side of SweepControl: each control changes a limit the scheduler reads, says so in an event
    (ConcurrencyChanged, RunPaused, RunResumed) and wakes the workers waiting on a change. The runner provides the
    state and the three hooks declared here."""

    target: int
    paused: bool
    cancelled: bool
    _sched: Scheduler
    _by_key: dict[str, Lane]
    _tg: TaskGroup | None

    def emit(self, ev: Event) -> None:
        raise NotImplementedError

    def _spawn(self) -> None:
        raise NotImplementedError

    def _notify(self) -> None:
        raise NotImplementedError

    def set_concurrency(self, n: int, source: str = "user") -> None:
        """Change the global limit. Raising starts calls at once; lowering lets running calls finish.

        Out of bounds (below 1, above limits.MAX_CONCURRENCY) it is set to the nearest bound, and the
        ConcurrencyChanged event says what was asked."""
        asked = int(n)
        n = concurrency_bounded(asked)
        old, self.target = self.target, n
        self._sched.target = n
        if old != n or asked != n:
            self.emit(ConcurrencyChanged(old, n, None, source, time.monotonic(), time.time(),
                                         None if asked == n else asked))
        self._spawn()
        self._notify()

    def set_model_cap(self, model_key: str, cap: int | None, source: str = "user") -> None:
        """Cap one model's calls in flight at its provider (None: no cap), bounded like set_concurrency."""
        lane = self._by_key[model_key]
        old = lane.cap
        asked = None if cap is None else int(cap)
        lane.cap = None if asked is None else concurrency_bounded(asked)
        if old != lane.cap or asked != lane.cap:
            self.emit(ConcurrencyChanged(old or 0, lane.cap or 0, model_key, source, time.monotonic(), time.time(),
                                         None if asked == lane.cap else asked))
        self._notify()

    def model_cap(self, model_key: str) -> int | None:
        return self._by_key[model_key].cap

    def pause(self) -> None:
        if not self.paused:
            self.paused = True
            self.emit(RunPaused(time.monotonic()))

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            self.emit(RunResumed(time.monotonic()))
            self._notify()

    def cancel(self) -> None:
        """Stop now: calls in flight end as 'cancelled' (resume runs them again); finished ones stay."""
        self.cancelled = True
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

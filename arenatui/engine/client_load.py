"""The client's own CPU load, so a run can tell when the instrument, not the provider, was the bottleneck.

Every millisecond this process spends per call is queueing inside the latencies it reports. A
`CpuSampler` runs beside the engine and emits `ClientLoadSampled` about once a second (process CPU
time over wall time); `OverloadTracker` turns samples into the one verdict that views, the store
and the report share: above `OVERLOAD_CPU` of a core for at least `OVERLOAD_S` seconds in a row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import anyio

from arenatui.kernel.events import ClientLoadSampled

OVERLOAD_CPU = 0.8
"""Fraction of one core above which the client's own work starts to show in the latencies (one event loop)."""
OVERLOAD_S = 5.0
"""How long the load must last to count: a burst at start-up or at the end is not a bottleneck."""
SAMPLE_S = 1.0


class CpuSampler:
    """`await run()` emits a sample every `interval_s` until `stop()`, which emits the last, partial one."""

    def __init__(self, emit: Callable[[ClientLoadSampled], None], *, interval_s: float = SAMPLE_S,
                 clock: Callable[[], float] = time.monotonic, cpu_clock: Callable[[], float] = time.process_time,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self._emit = emit
        self.interval_s = interval_s
        self._clock = clock
        self._cpu_clock = cpu_clock
        self._wall = wall_clock
        self._t = clock()
        self._cpu = cpu_clock()
        self._scope: anyio.CancelScope | None = None
        self._stopped = False

    def sample(self, min_interval_s: float = 1e-3) -> ClientLoadSampled | None:
        """The load since the previous sample (None if too little time passed to say)."""
        t, cpu = self._clock(), self._cpu_clock()
        dt = t - self._t
        if dt < min_interval_s:
            return None
        ev = ClientLoadSampled(cpu=max(0.0, cpu - self._cpu) / dt, interval_s=dt, t=t, at=self._wall())
        self._t, self._cpu = t, cpu
        return ev

    async def run(self) -> None:
        self._t, self._cpu = self._clock(), self._cpu_clock()  # measure the run, not what came before it
        with anyio.CancelScope() as scope:
            self._scope = scope
            while not self._stopped:
                await anyio.sleep(self.interval_s)
                ev = self.sample()
                if ev is not None:
                    self._emit(ev)

    def stop(self) -> None:
        """End `run()`; the time since the last sample becomes one more (if it is long enough to mean anything)."""
        if self._stopped:
            return
        self._stopped = True
        if self._scope is not None:
            self._scope.cancel()
        ev = self.sample(min_interval_s=min(0.2, self.interval_s))
        if ev is not None:
            self._emit(ev)


class OverloadTracker:
    """Folds samples (O(1) each) into: overloaded now, and seconds spent in sustained overload so far."""

    __slots__ = ("min_s", "overload_s", "overloaded", "peak", "streak_s", "threshold")

    def __init__(self, threshold: float = OVERLOAD_CPU, min_s: float = OVERLOAD_S) -> None:
        self.threshold = threshold
        self.min_s = min_s
        self.streak_s = 0.0
        self.overloaded = False
        """In a stretch above the threshold that has lasted at least min_s."""
        self.overload_s = 0.0
        """Seconds inside such stretches (each counted from its start)."""
        self.peak = 0.0

    def add(self, cpu: float, interval_s: float) -> bool:
        """Fold one sample in; True when this sample starts a sustained overload."""
        self.peak = max(self.peak, cpu)
        if cpu < self.threshold:
            self.streak_s = 0.0
            self.overloaded = False
            return False
        self.streak_s += interval_s
        if self.overloaded:
            self.overload_s += interval_s
            return False
        if self.streak_s >= self.min_s - 1e-9:
            self.overloaded = True
            self.overload_s += self.streak_s
            return True
        return False


def sustained_overload(samples: Iterable[tuple[float, float]], threshold: float = OVERLOAD_CPU,
                       min_s: float = OVERLOAD_S) -> OverloadTracker:
    """The tracker after folding (cpu, interval_s) samples in order (e.g. a stored run's)."""
    tr = OverloadTracker(threshold, min_s)
    for cpu, interval_s in samples:
        tr.add(cpu, interval_s)
    return tr

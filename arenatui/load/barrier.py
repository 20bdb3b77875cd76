"""The start barrier of a run's shards: one wall-clock instant every machine starts its schedule at, and how far
each machine's clock may be from true time (its offset estimate), so a merged run can say its start skew.

Machines have no shared monotonic clock, so the barrier is on the wall clock: each shard converts the instant to
its own monotonic clock once (a later step of the wall clock does not move it) and anchors its schedule's zero
there. How well shards agree is then how well their clocks agree: the offset estimate is the kernel's view of its
NTP discipline (`adjtimex`, read-only: the offset still being corrected and the estimated error), with no network
traffic of our own. A clock the kernel marks unsynchronised has no estimate, and the shard says so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from arenatui.kernel.errors import ArenaError

if TYPE_CHECKING:
    from arenatui.store.run_shards import ShardRecord

MAX_WAIT_S = 7 * 24 * 3600.0
"""A start further ahead than a week is a typo (a wrong year, epoch milliseconds)."""


def parse_instant(value: str, where: str) -> float:
    """An instant as epoch seconds: ISO 8601 with a zone (2026-12-01T12:00:00Z, ...+01:00) or epoch seconds."""
    text = value.strip()
    try:
        x = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(x) and x > 0:
            return x
        raise ArenaError(f"{where}: expected an instant (ISO 8601 like 2026-12-01T12:00:00Z, or epoch seconds), "
                         f"got {value!r}")
    try:
        dt = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise ArenaError(f"{where}: expected an instant in ISO 8601 with its zone, like 2026-12-01T12:00:00Z, or "
                         f"epoch seconds; got {value!r}") from None
    if dt.tzinfo is None:
        raise ArenaError(f"{where}: {value!r} has no time zone; machines in different zones would start at "
                         "different instants. Add Z (UTC) or an offset like +01:00")
    return dt.timestamp()


def start_instant(start_at: str | None, start_in: float | None, base: str | None, *,
                  now: float | None = None) -> float | None:
    """The barrier's instant (epoch seconds) from `--start-at`, or `--start-in` counted from `--start-base` (a
    value the runner passes every shard alike), or None without a barrier."""
    if start_at is not None and start_in is not None:
        raise ArenaError("give one of --start-at and --start-in, not both")
    if start_in is not None:
        if base is None:
            raise ArenaError("--start-in counts from a value every shard shares: pass --start-base (ISO 8601 or "
                             "epoch seconds, e.g. the time the job was submitted) or set ARENA_START_BASE; counted "
                             "from each machine's own start, the shards would not start together")
        instant = parse_instant(base, "--start-base") + start_in
    elif start_at is not None:
        instant = parse_instant(start_at, "--start-at")
    else:
        return None
    ahead = instant - (time.time() if now is None else now)
    if ahead > MAX_WAIT_S:
        flag = "--start-in" if start_in is not None else "--start-at"
        raise ArenaError(f"{flag}: the start barrier is {ahead / 86400:.3g} days ahead ({format_instant(instant)}); "
                         "expected an instant within a week")
    return instant


def format_instant(epoch: float) -> str:
    try:
        return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):  # past year 9999 (--start-at 1e308): said as given
        return f"epoch {epoch:g} s, past any date"


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class _Timex(ctypes.Structure):
    """Linux `struct timex` (sys/timex.h), read with modes = 0 (no privilege needed, changes nothing)."""

    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long), ("status", ctypes.c_int),
                ("constant", ctypes.c_long), ("precision", ctypes.c_long), ("tolerance", ctypes.c_long),
                ("time", _Timeval), ("tick", ctypes.c_long), ("ppsfreq", ctypes.c_long), ("jitter", ctypes.c_long),
                ("shift", ctypes.c_int), ("stabil", ctypes.c_long), ("jitcnt", ctypes.c_long),
                ("calcnt", ctypes.c_long), ("errcnt", ctypes.c_long), ("stbcnt", ctypes.c_long),
                ("tai", ctypes.c_int), ("_reserved", ctypes.c_int * 11)]


_STA_UNSYNC = 0x0040
_STA_NANO = 0x2000
_TIME_ERROR = 5


def clock_estimate() -> tuple[float | None, float | None, str]:
    """(offset s, error bound s, source) of this machine's wall clock against true time, as its kernel's NTP
    discipline estimates them; (None, None, why) when there is no estimate."""
    if not sys.platform.startswith("linux"):
        return None, None, f"no estimate on {sys.platform} (adjtimex is Linux)"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        tx = _Timex()
        state = libc.adjtimex(ctypes.byref(tx))
    except (OSError, AttributeError) as e:
        return None, None, f"no estimate (adjtimex: {e})"
    if state < 0:
        return None, None, f"no estimate (adjtimex failed, errno {ctypes.get_errno()})"
    if state == _TIME_ERROR or tx.status & _STA_UNSYNC:
        return None, None, "unsynchronised (the kernel's clock is not disciplined by NTP)"
    unit = 1e-9 if tx.status & _STA_NANO else 1e-6
    return tx.offset * unit, tx.esterror * 1e-6, "kernel NTP discipline (adjtimex)"


@dataclass(frozen=True, slots=True)
class StartSkew:
    """The shard of a run whose start may have been furthest from the barrier's instant on a true clock."""

    shard: ShardRecord
    skew_s: float
    """Its lateness (first request sent after its scheduled time, by its own clock) plus its clock's offset
    estimate and that estimate's error: an upper bound on how far from the instant it really started."""
    unknown_clocks: int
    """Shards on the barrier whose clock had no estimate: their skew is their lateness only."""
    on_barrier: int


def worst_start(shards: Sequence[ShardRecord]) -> StartSkew | None:
    """The merged run's worst start skew, or None when no shard started on a barrier."""
    timed = [s for s in shards if s.planned_start is not None and s.start_lag_s is not None]
    if not timed:
        return None

    def skew(s: ShardRecord) -> float:
        assert s.start_lag_s is not None
        return abs(s.start_lag_s) + abs(s.clock_offset_s or 0.0) + (s.clock_error_s or 0.0)

    worst = max(timed, key=skew)
    return StartSkew(worst, skew(worst), sum(1 for s in timed if s.clock_offset_s is None), len(timed))


def monotonic_at(instant: float) -> float:
    """The monotonic-clock time of a wall-clock instant, read now (later wall-clock steps do not move it)."""
    return time.monotonic() + (instant - time.time())


def start_skew_line(shards: list[ShardRecord]) -> str | None:
    """The merged run's worst start: the shard whose start may have been furthest from the planned instant."""
    from arenatui.kernel.units import ms

    found = worst_start(shards)
    if found is None:
        return None
    worst = found.shard
    assert worst.planned_start is not None and worst.start_lag_s is not None
    clock = (f"clock offset {ms(abs(worst.clock_offset_s) * 1000)} ms ± {ms((worst.clock_error_s or 0) * 1000)} ms"
             if worst.clock_offset_s is not None else f"clock offset unknown: {worst.clock_source or 'not recorded'}")
    caveat = (f"; {found.unknown_clocks} of {found.on_barrier} shards' clocks had no offset estimate, so the skew "
              "counts only their lateness") if found.unknown_clocks else ""
    return (f"Start barrier {format_instant(worst.planned_start)}: worst start skew {ms(found.skew_s * 1000)} ms "
            f"(shard {worst.shard}/{worst.shards} on {worst.host}: first request {ms(worst.start_lag_s * 1000)} ms "
            f"late, {clock}){caveat}")

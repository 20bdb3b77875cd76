"""Arrival processes as pure functions: when each request of a load run is due, relative to its segment's start.

An open-loop run fires requests at these times whatever happened to earlier ones. Each process is a
sequence of gaps with mean 1/rate: constant (gap exactly 1/rate), poisson (exponential gaps, CV 1),
gamma:CV (gamma gaps with shape 1/CV², so CV above 1 is burstier than poisson and below 1 more regular),
and trace:FILE (offsets in seconds from a JSONL or CSV file, optionally naming the case to send).

Generators are lazy (a rate change mid-run starts a new segment, so nothing is drawn that will not be
used) and seeded: every shard of a run draws the same schedule and keeps its own share of it.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import random
import stat
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, TextIO

from arenatui.kernel.errors import ConfigError
from arenatui.kernel.units import plural

ArrivalKind = Literal["constant", "poisson", "gamma", "trace"]

STREAM_ABOVE_BYTES = 8 << 20
"""A trace file larger than this is read as the run goes (it must be in offset order), never whole: a 10M-line
trace took 60 s and 1.7 GB before its first request. Smaller ones are read at once, validated and sorted."""
MAX_TRACE_LINE_BYTES = 1 << 20
"""The longest line a trace may have (1 MiB; a row is an offset and a case id): longer ones are refused naming this
limit, and no line is ever read whole past it (a 20 MB line was read, then called 'not JSON')."""
MAX_TRACE_OFFSET_S = 7 * 24 * 3600.0
"""The latest a trace may schedule a request (7 days): an offset of 1e308 was accepted and the run waited forever."""


@dataclass(frozen=True, slots=True)
class TraceRow:
    offset_s: float
    """Seconds after the run's start."""
    case_id: str | None = None
    """The case to send, or None to cycle through the project's cases."""


@dataclass(frozen=True, slots=True)
class Arrival:
    """How requests arrive: the parsed `--arrival` value."""

    kind: ArrivalKind = "constant"
    cv: float = 1.0
    """Coefficient of variation of the gaps (gamma; poisson is 1, constant 0)."""
    trace: tuple[TraceRow, ...] = ()
    trace_file: str | None = None
    """A trace streamed from this file as the run goes (`trace` is then empty): see STREAM_ABOVE_BYTES."""
    trace_requests: int = 0
    """A streamed trace's request count, estimated from its size and first lines."""
    trace_end_s: float = 0.0
    """A streamed trace's last offset (read from its last line)."""
    source: str = ""
    """The trace's file as given (a message about its rows names it)."""

    def describe(self) -> str:
        if self.kind == "gamma":
            return f"gamma:{self.cv:g}"
        if self.kind == "trace":
            if self.trace_file is not None:
                return f"trace (streamed, about {self.trace_requests} requests)"
            return f"trace ({plural(len(self.trace), 'request')})"
        return self.kind

    @property
    def trace_duration_s(self) -> float:
        if self.trace_file is not None:
            return self.trace_end_s
        return self.trace[-1].offset_s if self.trace else 0.0

    @property
    def planned_trace_requests(self) -> int:
        return self.trace_requests if self.trace_file is not None else len(self.trace)

    def rows(self) -> Iterator[TraceRow]:
        """The trace's rows in offset order: held, or read from the file as they are needed."""
        if self.trace_file is not None:
            return stream_trace(Path(self.trace_file))
        return iter(self.trace)


def parse_arrival(value: str, *, where: str = "--arrival") -> Arrival:
    """`constant`, `poisson`, `gamma:CV` or `trace:FILE`; a ConfigError naming what was expected otherwise."""
    kind, _, arg = value.partition(":")
    kind = kind.strip().lower()
    if kind in ("constant", "poisson") and not arg:
        return Arrival(kind)  # type: ignore[arg-type]
    if kind == "gamma":
        try:
            cv = float(arg)
        except ValueError:
            cv = math.nan
        if not (math.isfinite(cv) and 0.0 < cv <= 100.0):
            raise ConfigError(where, None, f"gamma:CV needs a coefficient of variation above 0 and at most 100 "
                                           f"(1 is poisson, 2 is bursty), got {value!r}")
        return Arrival("gamma", cv=cv)
    if kind == "trace":
        if not arg:
            raise ConfigError(where, None, "trace:FILE needs a JSONL or CSV file of offsets in seconds")
        path = Path(arg)
        try:
            st = path.stat()
        except OSError as e:
            raise ConfigError(str(path), None, f"a readable UTF-8 trace file ({e.__class__.__name__}: {e})") from None
        if not stat.S_ISREG(st.st_mode):  # /dev/zero was read whole (16 GB a minute); a FIFO blocked for good
            raise ConfigError(str(path), None, "a trace in a regular file; this is not a regular file (a device, a "
                                               "FIFO or /dev/stdin): save the trace to a file first")
        big = st.st_size > STREAM_ABOVE_BYTES
        arrival = streamed_trace(path) if big else Arrival("trace", cv=math.nan, trace=read_trace(path))
        return replace(arrival, source=str(path))
    raise ConfigError(where, None, f"expected constant, poisson, gamma:CV or trace:FILE, got {value!r}")


def _offset(file: Path, where: str, raw: object) -> float:
    try:
        t = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        t = math.nan
    if isinstance(raw, bool) or not math.isfinite(t) or t < 0 or t > MAX_TRACE_OFFSET_S:
        raise ConfigError(str(file), where, f"an offset in seconds, a number from 0 to {MAX_TRACE_OFFSET_S:.0f} (7 "
                                            f"days), got {raw!r}")
    return t


def read_trace(file: Path) -> tuple[TraceRow, ...]:
    """Rows sorted by offset (ties keep file order). JSONL: `{"offset": s, "case": id}` per line
    (`t` or `timestamp` for the offset also read); CSV: a header with `offset` and optionally `case`."""
    try:
        with open(file, "rb") as f:
            data = f.read(STREAM_ABOVE_BYTES + 1)  # bounded even if the file grew since it was measured
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(str(file), None, f"a readable UTF-8 trace file ({e.__class__.__name__}: {e})") from None
    for n, line in enumerate(text.splitlines(), start=1):
        if len(line) > MAX_TRACE_LINE_BYTES:
            raise _line_too_long(file, n)
    rows: list[TraceRow] = []
    if file.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        fields = [f.strip().lower() for f in reader.fieldnames or []]
        if "offset" not in fields:
            raise ConfigError(str(file), "header", f"a CSV header with an 'offset' column, got {fields!r}")
        for n, rec in enumerate(reader, start=2):
            rec = {(k or "").strip().lower(): (v or "").strip() for k, v in rec.items()}
            rows.append(TraceRow(_offset(file, f"line {n}: offset", rec.get("offset")), rec.get("case") or None))
    else:
        lines: Iterator[tuple[int | str, str]] = enumerate(text.splitlines(), start=1)
        rows = [row for _, row in _rows(file, lines, False)]
    if not rows:
        raise ConfigError(str(file), None, "at least one request (an offset per JSONL line or CSV row)")
    rows.sort(key=lambda r: r.offset_s)  # stable: equal offsets keep the file's order
    return tuple(rows)


def _rows(file: Path, lines: Iterator[tuple[int | str, str]], csv_file: bool) -> Iterator[tuple[int | str, TraceRow]]:
    """(line number, row) from numbered lines (a CSV's header already read), each validated, in file order."""
    if csv_file:
        for n, line in lines:
            if not line.strip():
                continue
            rec = next(csv.reader([line]), [])
            yield n, TraceRow(_offset(file, f"line {n}: offset", rec[0] if rec else None),
                              (rec[1].strip() or None) if len(rec) > 1 else None)
        return
    for n, line in lines:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: a line nested 100,000 deep
            raise ConfigError(str(file), f"line {n}", "a JSON object per line (JSONL)") from None
        if not isinstance(obj, dict):
            raise ConfigError(str(file), f"line {n}", f"a JSON object, got {type(obj).__name__}")
        key = next((k for k in ("offset", "t", "timestamp") if k in obj), None)
        if key is None:
            raise ConfigError(str(file), f"line {n}", "an 'offset' key (seconds from the start)")
        case = obj.get("case", obj.get("case_id"))
        if case is not None and not isinstance(case, str):
            raise ConfigError(str(file), f"line {n}: case", f"a case id (string), got {case!r}")
        yield n, TraceRow(_offset(file, f"line {n}: {key}", obj[key]), case)


def _line_too_long(file: Path, n: int | str) -> ConfigError:
    return ConfigError(str(file), f"line {n}", f"a line of at most {MAX_TRACE_LINE_BYTES} bytes "
                                               f"(MAX_TRACE_LINE_BYTES: an offset and a case id), got a longer one")


def _capped_lines(file: Path, f: TextIO) -> Iterator[tuple[int, str]]:
    """(line number, line) without its line break, never reading a line past MAX_TRACE_LINE_BYTES."""
    n = 0
    while True:
        line = f.readline(MAX_TRACE_LINE_BYTES + 1)
        if not line:
            return
        n += 1
        if len(line) > MAX_TRACE_LINE_BYTES and not line.endswith("\n"):
            raise _line_too_long(file, n)
        yield n, line.rstrip("\r\n")


def _csv_header(file: Path, header: str) -> None:
    fields = [f.strip().lower() for f in next(csv.reader([header]), [])]
    if fields[:1] != ["offset"] or (len(fields) > 1 and fields[1] != "case"):
        raise ConfigError(str(file), "header", f"a streamed CSV trace's header 'offset' or 'offset,case' (the "
                                               f"order its rows are read in), got {fields!r}")


def stream_trace(file: Path) -> Iterator[TraceRow]:
    """A big trace's rows as the run reaches them, validated line by line; offsets must not go back (a streamed
    file cannot be sorted first): a row earlier than the one before it is an error naming its line."""
    with open(file, encoding="utf-8") as f:
        numbered = _capped_lines(file, f)
        csv_file = file.suffix.lower() == ".csv"
        if csv_file:
            _, header = next(numbered, (1, ""))
            _csv_header(file, header)
        last = 0.0
        lines: Iterator[tuple[int | str, str]] = iter(numbered)
        for n, row in _rows(file, lines, csv_file):
            if row.offset_s < last:
                raise ConfigError(str(file), f"line {n}", f"offsets in order (a streamed trace is never sorted "
                                                          f"first: sort the file by offset), got {row.offset_s:g} "
                                                          f"after {last:g}")
            last = row.offset_s
            yield row


def streamed_trace(file: Path) -> Arrival:
    """An Arrival that streams `file`: its first lines and its last are read and checked now (a bad head or tail
    fails before anything is recorded), the request count is estimated from the size."""
    try:
        size = file.stat().st_size
        with open(file, "rb") as f:
            head = f.read(64 << 10)
            # the tail holds the whole last line unless that line is longer than the limit
            start = max(0, size - MAX_TRACE_LINE_BYTES - 2)
            f.seek(start)
            tail = f.read(MAX_TRACE_LINE_BYTES + 2)
        if start > 0 and b"\n" not in tail.rstrip(b"\r\n"):
            raise _line_too_long(file, "last")
        head_text, tail_text = head.decode("utf-8", "replace"), tail.decode("utf-8", "replace")
    except OSError as e:
        raise ConfigError(str(file), None, f"a readable UTF-8 trace file ({e.__class__.__name__}: {e})") from None
    first = list(itertools.islice(stream_trace(file), 1000))
    if not first:
        raise ConfigError(str(file), None, "at least one request (an offset per JSONL line or CSV row)")
    lines = head_text.splitlines()[:-1] or head_text.splitlines()
    per_line = max(1.0, len(head) / max(1, len(lines)))
    last_line = next((ln for ln in reversed(tail_text.splitlines()) if ln.strip()), "")
    tail_rows = [r for _, r in _rows(file, iter([("last", last_line)]), file.suffix.lower() == ".csv")]
    last = tail_rows[-1] if tail_rows else first[-1]
    return Arrival("trace", cv=math.nan, trace_file=str(file), trace_requests=int(size / per_line),
                   trace_end_s=last.offset_s)


def gaps(arrival: Arrival, rate: float, rng: random.Random) -> Iterator[float]:
    """Endless gaps in seconds with mean 1/rate (not for traces, which have their own times)."""
    mean = 1.0 / rate
    if arrival.kind == "constant":
        while True:
            yield mean
    elif arrival.kind == "poisson":
        expo = rng.expovariate
        while True:
            yield expo(rate)
    elif arrival.kind == "gamma":
        shape = 1.0 / (arrival.cv * arrival.cv)
        scale = mean / shape
        gamma = rng.gammavariate
        while True:
            yield gamma(shape, scale)
    else:
        raise ValueError("a trace has no gaps: use trace_times")


def arrival_times(arrival: Arrival, rate: float, duration_s: float, rng: random.Random) -> Iterator[float]:
    """Offsets in [0, duration_s) from the segment's start. The first request is due at once for constant
    (a run starts working immediately) and after one drawn gap for the random processes (memoryless)."""
    if arrival.kind == "trace":
        for row in arrival.rows():
            if row.offset_s >= duration_s:
                return
            yield row.offset_s
        return
    t = 0.0 if arrival.kind == "constant" else None
    g = gaps(arrival, rate, rng)
    if t is None:
        t = next(g)
    i = 0
    start = t
    while t < duration_s:
        yield t
        i += 1
        # constant: multiply, never add, so rounding does not drift over a million requests
        t = start + i / rate if arrival.kind == "constant" else t + next(g)


def segment_rng(seed: int, segment: int) -> random.Random:
    """One generator per segment, the same in every shard: shards agree on the schedule without talking."""
    return random.Random(f"arena-load|{seed}|{segment}")

"""`--processes N`: the arrival schedule sharded across N engine processes, one store writer, exact merged figures.

Each shard is `python -m arenatui.load.processes`, its own event loop and provider, walking the same seeded
schedule and sending request i when i % N is its index. The parent (this side) starts them together on a
shared monotonic zero (CLOCK_MONOTONIC is one clock for every process on a machine), forwards rate
changes (applied a moment ahead, so every shard switches at the same scheduled time), and receives each
finished request as a raw sample: the parent's `Samples` and store writer see exactly what one process
would have, so merged percentiles are exact.

Wire: parent -> shard, JSON lines on stdin (the setup, then `start`, `rate`, `cancel`); shard -> parent,
frames on stdout (4-byte little-endian length + `marshal` payload): ("ready",), ("r", in_flight, rows, sent),
("s", window, source), ("c", cpu sample), ("done",).
"""

from __future__ import annotations

import dataclasses
import json
import marshal
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from arenatui.config.schema import Project
from arenatui.engine.client_load import CpuSampler, OverloadTracker
from arenatui.kernel.errors import ArenaError
from arenatui.kernel.events import ClientLoadSampled
from arenatui.load.arrivals import Arrival, TraceRow
from arenatui.load.driver import LoadPlan, OpenLoopDriver, SegmentStarted
from arenatui.load.metrics import LoadRequest, Window
from arenatui.plan import Shard

START_AHEAD_S = 0.05
"""The shared zero is this far ahead of the start message: every shard is waiting for it when it comes."""
CHANGE_AHEAD_S = 0.1
"""A rate change takes effect this far ahead, so each shard hears of it before it is due."""
FLUSH_S = 0.02


def _frame(obj: Any) -> bytes:
    payload = marshal.dumps(obj)
    return len(payload).to_bytes(4, "little") + payload


class ShardSet:
    """The same interface as `OpenLoopDriver` (rate, windows, in_flight, change_rate, cancel, run) over N shards."""

    def __init__(self, plan: LoadPlan, project: Project, processes: int, *,
                 on_request: Callable[[LoadRequest], None], on_segment: Callable[[SegmentStarted], None],
                 on_cpu: Callable[[ClientLoadSampled], None], machine: Shard | None = None) -> None:
        self.plan = plan
        self.project = project
        self.n = processes
        self.machine = machine or Shard(0, 1)
        """This machine's shard of the run (`--shard K/N`): its process i takes the requests whose index modulo
        N × processes is K + N × i, so together they take exactly those whose index is K modulo N."""
        self.on_request, self.on_segment, self.on_cpu = on_request, on_segment, on_cpu
        self.rate = plan.rates[0] if plan.rates else 0.0
        self.windows: list[Window] = []
        self.t0: float | None = None
        self.cancelled = False
        self._in_flight = [0] * processes
        self._sent = [0] * processes
        self._dropped: dict[tuple[int, int], int] = {}
        """(shard, segment) -> requests that shard dropped unsent in that segment (Window.dropped, summed)."""
        self._source = "plan"
        self._procs: list[Process] = []
        self.overload = [OverloadTracker() for _ in range(processes)]
        """One per shard: a streak of one process's samples says whether that process was CPU-bound."""

    @property
    def in_flight(self) -> int:
        return sum(self._in_flight)

    def _segment_drops(self, segment: int) -> int:
        return sum(n for (_, seg), n in self._dropped.items() if seg == segment)

    @property
    def sent(self) -> int:
        return sum(self._sent)

    def now_s(self) -> float:
        return time.monotonic() - self.t0 if self.t0 is not None else 0.0

    def _setup(self, shard: int) -> dict[str, Any]:
        from arenatui.project import project_to_dict

        p = self.plan
        cap = None if p.max_in_flight is None else max(1, math.ceil(p.max_in_flight / self.n))
        return {"project": project_to_dict(self.project), "project_path": str(self.project.path),
                "model": p.model.key, "kind": p.arrival.kind, "cv": p.arrival.cv,
                "trace": [[r.offset_s, r.case_id] for r in p.arrival.trace], "trace_file": p.arrival.trace_file,
                "trace_requests": p.arrival.trace_requests, "trace_end_s": p.arrival.trace_end_s,
                "rates": list(p.rates),
                "duration_s": p.duration_s, "warmup_s": p.warmup_s, "max_in_flight": cap, "timeout_s": p.timeout_s,
                "seed": p.seed, "shard": self.machine.index + self.machine.count * shard,
                "shards": self.machine.count * self.n, "segments": shard == 0}

    async def _send(self, proc: Process, obj: dict[str, Any]) -> None:
        assert proc.stdin is not None
        try:
            await proc.stdin.send((json.dumps(obj) + "\n").encode())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the shard ended; its reader reports why

    def change_rate(self, rate: float, at_s: float | None = None) -> None:
        if self.plan.arrival.kind == "trace":
            raise ValueError("a trace sets its own times; its rate cannot be changed")
        at = self.now_s() + CHANGE_AHEAD_S if at_s is None else at_s
        for proc in self._procs:
            self._tg_start(self._send, proc, {"rate": rate, "at": at})

    def cancel(self) -> None:
        self.cancelled = True
        for proc in self._procs:
            self._tg_start(self._send, proc, {"cancel": True})

    def _tg_start(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._tg is not None:
            self._tg.start_soon(fn, *args)

    _tg: anyio.abc.TaskGroup | None = None

    async def _read(self, shard: int, stream: BufferedByteReceiveStream, ready: anyio.Event | None) -> bool:
        """Frames of one shard until it says done (True) or its output ends (False)."""
        while True:
            try:
                size = int.from_bytes(await stream.receive_exactly(4), "little")
                msg = marshal.loads(await stream.receive_exactly(size))
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                return False
            kind = msg[0]
            if kind == "r":
                self._in_flight[shard] = msg[1]
                self._sent[shard] = msg[3]
                for row in msg[2]:
                    self.on_request(LoadRequest(*row))
            elif kind == "s":
                seg, rate, start, end, warm, dropped = msg[1]
                self._dropped[(shard, seg)] = dropped
                w = Window(seg, rate, start, end, warm, self._segment_drops(seg))
                if self.windows and self.windows[-1].segment == w.segment:
                    self.windows[-1] = w
                else:
                    self.windows.append(w)
                self.rate = w.rate
                self._source = msg[2]
                self.on_segment(SegmentStarted(w, msg[2]))
            elif kind == "d":  # another shard's drops in a segment (shard 0's come with its segment reports)
                seg, dropped = msg[1]
                self._dropped[(shard, seg)] = dropped
                for i, w in enumerate(self.windows):
                    if w.segment == seg:
                        self.windows[i] = w = dataclasses.replace(w, dropped=self._segment_drops(seg))
                        self.on_segment(SegmentStarted(w, self._source if i == len(self.windows) - 1 else "cut"))
            elif kind == "c":
                ev = ClientLoadSampled(*msg[1])
                self.overload[shard].add(ev.cpu, ev.interval_s)
                self.on_cpu(ev)
            elif kind == "ready" and ready is not None:
                ready.set()
            elif kind == "done":
                self._in_flight[shard] = 0
                return True

    async def run(self) -> None:
        try:
            await self._run()
        finally:
            # cancelled from outside (the console closed): no shard outlives the run, and each is reaped before the
            # run returns (killed is not yet ended: on a busy machine its exit came after the event loop closed)
            with anyio.CancelScope(shield=True):
                for proc in self._procs:
                    if proc.returncode is None:
                        try:
                            proc.kill()
                        except ProcessLookupError:
                            pass  # it ended on its own meanwhile
                with anyio.move_on_after(10):  # a killed process ends at once; a bound all the same
                    for proc in self._procs:
                        await proc.wait()

    async def _run(self) -> None:
        cmd = [sys.executable, "-m", "arenatui.load.processes"]
        errors: list[str] = []
        async with anyio.create_task_group() as tg:
            self._tg = tg
            readies = [anyio.Event() for _ in range(self.n)]
            for i in range(self.n):
                proc = await anyio.open_process(cmd)
                self._procs.append(proc)
                await self._send(proc, self._setup(i))

            async def watch(i: int, proc: Process) -> None:
                assert proc.stdout is not None and proc.stderr is not None
                ok = await self._read(i, BufferedByteReceiveStream(proc.stdout), readies[i])
                if proc.stdin is not None:
                    await proc.stdin.aclose()
                err = b""
                async for chunk in proc.stderr:
                    err += chunk
                await proc.wait()
                if not ok and not self.cancelled:
                    last = err.decode(errors="replace").strip().splitlines()
                    errors.append(f"load shard {i} stopped ({last[-1] if last else f'exit code {proc.returncode}'})")
                    readies[i].set()
                    for other in self._procs:
                        await self._send(other, {"cancel": True})

            for i, proc in enumerate(self._procs):
                tg.start_soon(watch, i, proc)
            for ev in readies:
                await ev.wait()
            if not errors:
                # a start barrier's zero stays where it is even when this machine is late: its lateness shows
                # in every late request's lag, and the machines' schedules stay interleaved
                self.t0 = self.t0 if self.t0 is not None else time.monotonic() + START_AHEAD_S
                for proc in self._procs:
                    await self._send(proc, {"start": self.t0})
        self._tg = None
        if errors:
            raise ArenaError("; ".join(errors))


# ---- the shard's side ------------------------------------------------------------------------------


async def _shard_main() -> None:
    from arenatui.project import project_from_dict
    from arenatui.providers.base import prepared
    from arenatui.providers.registry import make_provider

    inp = sys.stdin.buffer
    out = sys.stdout.buffer

    async def readline() -> bytes:
        return await anyio.to_thread.run_sync(inp.readline, abandon_on_cancel=True)

    setup = json.loads(await readline())
    project = project_from_dict(setup["project"], Path(setup["project_path"]))
    model = next(m for m in project.models if m.key == setup["model"])
    arrival = Arrival(setup["kind"], setup["cv"], tuple(TraceRow(t, c) for t, c in setup["trace"]),
                      setup["trace_file"], setup["trace_requests"], setup["trace_end_s"])
    plan = LoadPlan(model, project.cases, project.defaults, arrival, tuple(setup["rates"]), setup["duration_s"],
                    setup["warmup_s"], setup["max_in_flight"], setup["timeout_s"], setup["seed"])
    shard = setup["shard"]
    provider = make_provider(model, project.run, concurrency_hint=setup["max_in_flight"] or 64)
    rows: list[tuple[Any, ...]] = []

    def send(obj: object) -> None:
        out.write(_frame(obj))
        out.flush()

    def on_segment(s: SegmentStarted) -> None:
        w = s.window
        if setup["segments"]:  # every process walks the same segments; one reports them
            send(("s", (w.segment, w.rate, w.start_s, w.end_s, w.warmup_s, w.dropped), s.source))
        elif w.dropped:
            send(("d", (w.segment, w.dropped)))

    driver = OpenLoopDriver(plan, provider, on_request=lambda r: rows.append(tuple(r)), on_segment=on_segment,
                            shard=shard, shards=setup["shards"])
    cpu = CpuSampler(lambda ev: send(("c", (ev.cpu, ev.interval_s, ev.t, ev.at))))
    await prepared(provider)  # before "ready": the schedule's zero comes after it
    send(("ready",))
    start = json.loads(await readline())
    if "start" not in start:
        return
    driver.t0 = float(start["start"])

    async def control() -> None:
        while True:
            line = await readline()
            if not line:
                driver.cancel()
                return
            msg = json.loads(line)
            if msg.get("cancel"):
                driver.cancel()
            elif "rate" in msg:
                driver.change_rate(float(msg["rate"]), float(msg["at"]))

    async def flush() -> None:
        while True:
            await anyio.sleep(FLUSH_S)
            if rows:
                batch = rows[:]
                rows.clear()
                send(("r", driver.in_flight, batch, driver.sent))

    async with anyio.create_task_group() as tg:
        tg.start_soon(control)
        tg.start_soon(flush)
        tg.start_soon(cpu.run)
        await driver.run()
        cpu.stop()
        tg.cancel_scope.cancel()
    with anyio.CancelScope(shield=True):
        await provider.aclose()
    if rows:
        send(("r", 0, rows[:], driver.sent))
    send(("done",))


if __name__ == "__main__":
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group; the parent decides
    anyio.run(_shard_main)
    sys.stdout.flush()
    os._exit(0)  # the stdin reader thread may still block in readline(); everything is sent and closed

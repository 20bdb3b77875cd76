"""Short real load runs: each arrival kind on a simulated model, one over HTTP against the mock server on
127.0.0.1, two processes, a rate change mid-run, the store, and bad flags (exit 2)."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import tomli_w

from arenatui.cli import main
from arenatui.load.arrivals import Arrival, parse_arrival
from arenatui.load.run import LoadOptions, LoadRun
from arenatui.load.store import stored_figures
from arenatui.store import Store
from arenatui.store.load_queries import read_segments, run_kinds

SIM = {"base_latency_s": 0.02, "per_token_s": 0.001, "jitter": 0.0, "output_tokens": 6}


def project(tmp_path: Path, **model: Any) -> Path:
    m = {"key": "m", "provider": "sim", "model": "m", "sim": SIM, **model}
    raw = {"project": {"name": "load-test"}, "run": {"seed": 2, "timeout_s": 5.0}, "models": [m],
           "cases": [{"id": f"c{i}", "input": f"question {i}"} for i in range(3)]}
    p = tmp_path / "p.toml"
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return p


async def _schedule_reaches(r: LoadRun, t: float) -> None:
    """Wait until the run's own schedule clock reads `t` seconds (a ceiling of two minutes against a hang): a busy
    machine starts a run late, and sleeping a fixed time from here would cut its first segment short."""
    for _ in range(6000):
        engine = getattr(r, "engine", None)
        if engine is not None and engine.now_s() >= t:
            return
        await anyio.sleep(0.02)
    raise AssertionError(f"the load run's schedule never reached {t} s")


async def _under_way(r: LoadRun) -> None:
    """Until the run's first request is sent: its clock starts only after the writer process is up."""
    with anyio.fail_after(60):
        while r.engine.sent == 0:  # noqa: ASYNC110 - polling a counter the driver keeps; it has no event
            await anyio.sleep(0.01)


def run(opts: LoadOptions) -> LoadRun:
    r = LoadRun(opts)
    assert anyio.run(r.run) == "finished"
    return r


@pytest.mark.parametrize("arrival", ["constant", "poisson", "gamma:2", "trace"])
def test_each_arrival_kind_runs_and_stores_every_request(tmp_path: Path, arrival: str) -> None:
    if arrival == "trace":
        trace = tmp_path / "t.jsonl"
        trace.write_text("".join(f'{{"offset": {i * 0.02:.2f}, "case": "c{i % 2}"}}\n' for i in range(20)))
        arr = parse_arrival(f"trace:{trace}")
    else:
        arr = parse_arrival(arrival)
    db = tmp_path / "db.sqlite"
    r = run(LoadOptions(project(tmp_path), (40.0,), 0.5, arr, db=db, slo=None))
    n = len(r.samples)
    assert n > 5
    if arrival == "constant":
        assert n == 20
    if arrival == "trace":
        assert n == 20
        assert sorted(r.samples.scheduled) == pytest.approx([i * 0.02 for i in range(20)])
    outcome = r.figures()
    assert outcome.run.outcomes == {"ok": outcome.run.requests}
    assert outcome.run.latency_send[50.0] >= 25.0  # the model sleeps 20 ms + 6 x 1 ms: never less (no upper bound)
    with Store(db) as store:
        assert run_kinds(store, [r.run_id])[r.run_id] == ("load", n)
        assert store.get_run(r.run_id).status == "finished"
    again, _ = stored_figures(db, r.run_id)
    assert again.latency_schedule == outcome.run.latency_schedule  # a report reads back the same figures


def test_trace_case_ids_are_sent(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("offset,case\n0,c2\n0.01,c2\n0.02,\n")
    r = run(LoadOptions(project(tmp_path), (1.0,), 1.0, parse_arrival(f"trace:{trace}"), db=tmp_path / "d"))
    with Store(tmp_path / "d") as store:
        cases = [row[0] for row in store.conn.execute(
            "SELECT case_id FROM load_requests WHERE run_id = ? ORDER BY seq", (r.run_id,))]
    # the third names none: the third of the seeded shuffled order (the project's seed, 2)
    order = ["c0", "c1", "c2"]
    random.Random(2).shuffle(order)
    assert cases == ["c2", "c2", order[2]]


def test_in_flight_cap_makes_lag_visible(tmp_path: Path) -> None:
    # 100/s offered to a 50 ms model with at most 2 in flight: the client can send 40/s, the rest is lag
    r = run(LoadOptions(project(tmp_path, sim={**SIM, "base_latency_s": 0.05, "per_token_s": 0.0}), (100.0,), 0.6,
                        Arrival("constant"), max_in_flight=2, db=tmp_path / "d"))
    f = r.figures().run
    assert f.lag[99.0] > 100.0
    assert f.latency_schedule[99.0] > f.latency_send[99.0] + 100.0
    assert f.lag_warning


def test_rate_change_mid_run_is_a_new_segment(tmp_path: Path) -> None:
    r = LoadRun(LoadOptions(project(tmp_path), (20.0,), 2.0, Arrival("constant"), db=tmp_path / "d"))

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await _schedule_reaches(r, 0.4)  # the schedule's clock, not ours: a busy machine starts it later
            r.change_rate(60.0)

    anyio.run(go)
    windows = r.engine.windows
    assert [w.rate for w in windows] == [20.0, 60.0]
    assert windows[0].end_s == pytest.approx(windows[1].start_s) and windows[1].end_s == pytest.approx(2.0)
    with Store(tmp_path / "d") as store:
        segs = read_segments(store, r.run_id)
    assert [(s[0], s[1], s[5], s[6]) for s in segs] == [(0, 20.0, "cut", 0), (1, 60.0, "user", 0)]
    figs = r.figures().segments
    assert figs[1].offered_rate > 2 * figs[0].offered_rate  # three times the rate


def test_two_processes_merge_exactly_into_one_store(tmp_path: Path) -> None:
    db = tmp_path / "d"
    one = run(LoadOptions(project(tmp_path), (30.0, 60.0), 0.5, Arrival("poisson"), db=db))
    two = run(LoadOptions(project(tmp_path), (30.0, 60.0), 0.5, Arrival("poisson"), db=db, processes=2))
    assert sorted(two.samples.scheduled) == pytest.approx(sorted(one.samples.scheduled))  # the same schedule
    with Store(db) as store:
        shards = {row[0] for row in store.conn.execute(
            "SELECT DISTINCT shard FROM load_requests WHERE run_id = ?", (two.run_id,))}
    assert shards == {0, 1}
    run_figs, seg_figs = stored_figures(db, two.run_id)
    live = two.figures()
    assert run_figs.latency_send == live.run.latency_send and len(seg_figs) == 2


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-m", "arenatui", "mock-server", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", proc.stdout.readline())
    assert m, "mock-server did not start"
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    try:
        yield m.group(1)
    finally:
        proc.terminate()
        proc.wait(10)


def test_against_the_mock_server_over_http(tmp_path: Path, mock_url: str) -> None:
    p = project(tmp_path, provider="openai", model="mock-a", base_url=f"{mock_url}/v1", stream=True)
    r = run(LoadOptions(p, (30.0,), 0.5, Arrival("poisson"), db=tmp_path / "d", warmup_s=0.1))
    f = r.figures()
    assert f.run.requests > 3 and f.run.outcomes == {"ok": f.run.requests}
    assert f.run.ttft_send[50.0] <= f.run.latency_send[50.0]
    # 0.5 s, but against a server on this machine that declares no limit: no rate-limit window to speak of
    assert not any("rate-limit window" in w for w in f.warnings)


@pytest.mark.parametrize(("argv", "needle"), [
    (["--rate", "abc"], "--rate"),
    (["--rate", "1", "--rates", "1,2"], "one of"),
    (["--rate-sweep", "1:2"], "--rate-sweep"),
    (["--rate", "1", "--processes", "0"], "--processes"),
    (["--rate", "1", "--max-in-flight", "0"], "--max-in-flight"),
    (["--rate", "1", "--duration", "0"], "--duration"),
    (["--rate", "1", "--duration", "1", "--warmup", "2"], "--warmup"),
    (["--rate", "1", "--model", "nope"], "nope"),
    (["--rate", "1", "--arrival", "lumpy"], "--arrival"),
    (["--rate", "1", "--slo", "p99=1s"], "--slo"),
    (["--rate", "1", "--arrival", "trace:/no/such/file.jsonl"], "file.jsonl"),
    # issue 34 items 19 and 26: an OverflowError each, and 28 hours of segments accepted
    (["--rate", "5", "--duration", "1e308s"], "--duration"),
    (["--rate", "5", "--duration", "1e308"], "--duration"),
    (["--rate", "5", "--duration", "1", "--warmup", "1e308"], "--warmup"),
    (["--rate", "5", "--duration", "1", "--start-at", "1e308"], "--start-at"),
    (["--rate", "5", "--duration", "1", "--start-at=-1e308"], "--start-at"),
    (["--rate-sweep", "1:64:100000", "--duration", "1"], "--rate-sweep"),
    (["--rates", ",".join(["1"] * 100_000), "--duration", "1"], "--rates"),
])
def test_bad_flags_exit_2_with_one_paragraph(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                             needle: str) -> None:
    code = main(["load", "--project", str(project(tmp_path)), "--db", str(tmp_path / "d"), *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error:") and needle in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()  # nothing recorded for bad input


def test_a_trace_naming_an_unknown_case_names_the_trace_file(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "requests.jsonl"
    trace.write_text('{"offset": 0.25, "case": "nope"}\n', encoding="utf-8")
    code = main(["load", "--project", str(project(tmp_path)), "--db", str(tmp_path / "d"), "--arrival",
                 f"trace:{trace}"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"error: {trace}: case: expected the id of a case in") and "unknown: nope" in err


@pytest.mark.parametrize("verb", ["evaluate", "run"])
def test_resume_last_refuses_a_load_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: str) -> None:
    """`--resume last` right after `arena load` ran the load run's project as a sweep into the load run's id (8
    sweep results stored in a load run); it is refused before anything is written."""
    db = str(tmp_path / "d")
    assert main(["load", "--project", str(project(tmp_path)), "--db", db, "--rate", "20", "--duration", "0.2",
                 "--quiet"]) == 0
    capsys.readouterr()
    code = main([verb, "--resume", "last", "--db", db, "--quiet"] if verb == "evaluate" else
                [verb, "--resume", "last", "--db", db])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "is a load run" in err and "Traceback" not in err, err
    with Store(db) as store:
        assert store.conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 0


def test_cli_headless_prints_the_tables_and_runs_lists_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "d")
    code = main(["load", "--project", str(project(tmp_path)), "--db", db, "--rates", "20,40", "--duration", "0.4",
                 "--slo", "latency=1s", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "per segment" in out and "Percentiles" in out and "goodput" in out and "Run id:" in out
    assert main(["runs", "--db", db]) == 0
    assert "load" in capsys.readouterr().out
    assert main(["load", "--show", "last", "--db", db]) == 0  # a later report, recomputed from the stored rows
    shown = capsys.readouterr().out
    # into a pipe: the segment table tab-separated (issue 37), then the run's line
    assert shown.splitlines()[0].startswith("seg\trate/s\t") and "(finished)" in shown


def test_report_and_export_read_a_load_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 14: every request is stored, so `arena report` and `arena export` show load runs too."""
    import csv
    import io
    import json

    db = str(tmp_path / "d")
    assert main(["load", "--project", str(project(tmp_path)), "--db", db, "--rates", "20,40", "--duration", "0.4",
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", "last", "--db", db, "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["run"]["kind"] == "load" and len(rep["segments"]) == 2
    assert rep["run_figures"]["requests"] > 0 and "p99" in rep["run_figures"]["latency_from_schedule_ms"]
    assert main(["report", "last", "--db", db, "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert "## Segments" in md and "| all |" in md
    assert main(["report", "last", "--db", db, "--format", "html"]) == 0
    assert "<h2>Percentiles, whole run</h2>" in capsys.readouterr().out
    assert main(["export", "last", "--db", db, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) >= rep["run_figures"]["requests"] > 0  # every stored request, warm-up ones included
    assert {"scheduled_s", "sent_s", "latency_ms", "outcome"} <= set(rows[0])
    assert main(["export", "last", "--db", db, "--format", "jsonl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(rows) and json.loads(lines[0])["run_id"] == rep["run"]["run_id"]


def test_show_refuses_a_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "d")
    assert main(["evaluate", "--project", str(project(tmp_path)), "--db", db, "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    assert main(["load", "--show", "last", "--db", db]) == 2
    assert "not a load run" in capsys.readouterr().err


def test_a_rate_change_reaches_every_shard(tmp_path: Path) -> None:
    r = LoadRun(LoadOptions(project(tmp_path), (20.0,), 2.0, Arrival("constant"), db=tmp_path / "d", processes=2))

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await _schedule_reaches(r, 0.5)  # shards take a moment to start; the schedule's zero comes after
            r.change_rate(60.0)

    anyio.run(go)
    assert r.status == "finished"
    assert [w.rate for w in r.engine.windows] == [20.0, 60.0]
    with Store(tmp_path / "d") as store:
        per_shard = dict(store.conn.execute("SELECT shard, COUNT(*) FROM load_requests WHERE run_id = ? AND "
                                            "segment = 1 GROUP BY shard", (r.run_id,)).fetchall())
    assert set(per_shard) == {0, 1} and abs(per_shard[0] - per_shard[1]) <= 1  # both switched, in step


def test_a_stopped_run_measures_until_the_stop(tmp_path: Path) -> None:
    r = LoadRun(LoadOptions(project(tmp_path), (40.0,), 30.0, Arrival("constant"), db=tmp_path / "d"))

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            await _schedule_reaches(r, 0.5)
            r.cancel()

    anyio.run(go)
    assert r.status == "cancelled"
    f = r.figures().run
    assert f.measured_s < 10.0  # not the planned 30 s, which would understate the offered rate
    assert f.offered_rate == pytest.approx(40.0, rel=0.3)


def test_warnings_for_a_short_metered_run_and_a_busy_client(tmp_path: Path) -> None:
    from arenatui.kernel.events import ClientLoadSampled

    r = LoadRun(LoadOptions(project(tmp_path, sim={**SIM, "rpm": 600}), (5.0,), 30.0, db=tmp_path / "d"))
    try:
        for i in range(6):  # six seconds at 95% of a core: a sustained overload
            r._on_cpu(ClientLoadSampled(0.95, 1.0, float(i), 1000.0 + i))
        warnings = r.figures().warnings
    finally:
        r.writer.close()
    assert any("rate-limit window" in w and "30 s" in w for w in warnings)
    assert any("CPU was above 80%" in w for w in warnings)


def test_no_window_warning_for_an_unmetered_sim_a_local_server_or_a_long_segment(tmp_path: Path) -> None:
    """The warning speaks of an rpm limit: only where one exists (a hosted API) or is declared (rpm, tpm)."""
    from arenatui.load.run import rate_limit_warning
    from arenatui.project import load_project

    def model(**m: Any) -> Any:
        return load_project(project(tmp_path, **m)).models[0]

    sim = model()
    hosted = model(provider="openai", base_url="https://api.example.com/v1")
    assert rate_limit_warning(sim, 10.0) is None
    assert rate_limit_warning(hosted, 10.0) is not None and rate_limit_warning(hosted, 60.0) is None
    for url in ("http://127.0.0.1:9/v1", "http://localhost:8080/v1", "http://192.168.1.20:8000/v1"):
        assert rate_limit_warning(model(provider="openai", base_url=url), 10.0) is None, url  # a local model
        assert rate_limit_warning(model(provider="openai", base_url=url, rpm=60), 10.0) is not None, url


def test_cancelling_a_sharded_run_from_outside_leaves_no_shard(tmp_path: Path) -> None:
    r = LoadRun(LoadOptions(project(tmp_path), (20.0,), 30.0, Arrival("constant"), db=tmp_path / "d", processes=2))

    async def go() -> None:
        async with anyio.create_task_group() as tg:  # what closing the console does to the run's worker
            tg.start_soon(r.run)
            for _ in range(6000):  # until both shards run (a ceiling of two minutes against a hang)
                if len(getattr(r.engine, "_procs", ())) == 2:
                    break
                await anyio.sleep(0.02)
            await anyio.sleep(0.2)
            tg.cancel_scope.cancel()

    anyio.run(go)
    procs = r.engine._procs  # type: ignore[attr-defined]
    assert len(procs) == 2
    for p in procs:
        assert p.returncode is not None

"""`arena tune`, `arena sweep`, `--tune` and the stored attempt history, on simulated models of a few ms."""

from __future__ import annotations

import re
import sqlite3
import tomllib
from pathlib import Path

import pytest

from arenatui.cli import main

PROJECT = """\
# tuning scenarios: every comment here must survive `arena tune --write`
[project]
name = "tuning"   # a name

[run]
concurrency = 4
max_attempts = 20
backoff_base_s = 0.05
backoff_cap_s = 1.0
seed = 3

[[models]]
key = "ceiling"   # a provider that answers 429 past 6 at once
provider = "sim"
max_concurrency = 2  # was set by hand
sim = { base_latency_s = 0.04, per_token_s = 0.0, jitter = 0.1, max_concurrent = 6, accuracy = 1.0 }

[[models]]
key = "rpm"   # a hosted model limited to 200 requests/s: 200/s × 50 ms = 10 in flight
provider = "sim"
sim = { base_latency_s = 0.05, per_token_s = 0.0, jitter = 0.1, rpm = 12000, burst = 10, accuracy = 1.0 }

[[models]]
# a local server that serves one request at a time
key = "local"
provider = "sim"
sim = { base_latency_s = 0.03, per_token_s = 0.0, jitter = 0.1, serial = true, accuracy = 1.0 }

[[cases]]
id = "c1"
input = "q1"
expected = "yes"

[[cases]]
id = "c2"
input = "q2"
expected = "yes"
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    p = tmp_path / "arena.toml"
    p.write_text(PROJECT, encoding="utf-8")
    return p


def test_tune_recommends_each_models_optimum_and_write_keeps_comments(
        proj: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line per recommendation (Rich folds at 80 columns in a pipe)
    db = tmp_path / "t.db"
    code = main(["tune", "--project", str(proj), "--models", "ceiling,local", "--budget", "400", "--db", str(db),
                 "--write"])
    out = capsys.readouterr().out
    assert code == 0
    # the user's cap of 2 stopped the climb: said, and nothing written for it (2 stays as the user wrote it)
    assert "ceiling: capped at 2 by max_concurrency" in out
    assert "recommended max_concurrency for ceiling: none written (capped at 2 by max_concurrency)" in out
    data = tomllib.loads(proj.read_text(encoding="utf-8"))
    levels = {m["key"]: m.get("max_concurrency") for m in data["models"]}
    assert levels["ceiling"] == 2
    assert levels["local"] == 1, out  # a serial server: nothing above 1 does better
    # a bare --write leaves [run] timeout_s as it was: measured on this run's short answers, it is a suggestion
    assert data.get("run", {}).get("timeout_s") == tomllib.loads(PROJECT).get("run", {}).get("timeout_s")
    assert "[run] timeout_s" not in out.split("wrote ")[-1]
    # 'flat' or 'lower' is the machine's say, not the server's: a stall at a higher level (a busy CI box) makes its
    # measured goodput lower, and the verdict reports what was measured
    assert re.search(r"local: optimum ≈ 1: (goodput (flat|lower)|the server queues) above 1", out), out
    text = proj.read_text(encoding="utf-8")
    for comment in ("# tuning scenarios", "# a name", "# a provider that answers 429 past 6 at once",
                    "# was set by hand", "# a local server that serves one request at a time"):
        assert comment in text
    assert text.replace("max_concurrency = 2  # was set by hand", "").count("max_concurrency") == 1
    assert "max_concurrency = 2  # was set by hand" in text
    assert "key = \"rpm\"   # a hosted model limited to 200 requests/s" in text  # untouched: not tuned
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM tuning_levels").fetchone()[0] >= 2
        assert c.execute("SELECT COUNT(*) FROM results").fetchone()[0] <= 2 * 400


def test_tune_finds_a_ceiling_and_a_rate_limit_near_their_optimum(proj: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    proj.write_text(PROJECT.replace("max_concurrency = 2  # was set by hand\n", ""), encoding="utf-8")
    code = main(["tune", "--project", str(proj), "--models", "ceiling,rpm", "--budget", "1000",
                 "--db", str(tmp_path / "t.db"), "--write"])
    cap = capsys.readouterr()
    out = cap.out
    assert code == 0
    # progress while it runs: one line per tuner decision and per verdict that changed, with the calls made so far
    assert re.search(r"^  \d+ of \d+ calls · (ceiling|rpm) \d+ → \d+: ", cap.err, re.M), cap.err
    assert re.search(r"^  \d+ of \d+ calls · (ceiling|rpm): ", cap.err, re.M), cap.err
    data = tomllib.loads(proj.read_text(encoding="utf-8"))
    levels = {m["key"]: m.get("max_concurrency") for m in data["models"]}
    # exit 0: at least one measured optimum was written; what is written is near the truth, and a model left
    # alone says why (a loaded machine can leave a level short of its 20 answered calls in 1000)
    assert levels["ceiling"] is not None or levels["rpm"] is not None, out
    if levels["ceiling"] is not None:
        assert 5 <= levels["ceiling"] <= 7, out  # the ceiling is 6
    else:
        assert "recommended max_concurrency for ceiling: none written (" in out
    if levels["rpm"] is not None:
        assert 8 <= levels["rpm"] <= 12, out  # Little's law: 10 (a loaded machine stretches latencies)
    else:
        assert "recommended max_concurrency for rpm: none written (" in out
    assert levels["local"] is None


def test_write_with_no_measured_optimum_leaves_the_file_byte_identical_and_exits_1(
        proj: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget of 5 calls measures nothing (20 answered calls make a level measured): nothing is written, each
    model says why in one line, and the exit code says no model got an optimum."""
    monkeypatch.setenv("COLUMNS", "200")  # one line per recommendation
    before = proj.read_bytes()
    code = main(["tune", "--project", str(proj), "--models", "rpm,local", "--budget", "5", "--db",
                 str(tmp_path / "t.db"), "--write"])
    out = capsys.readouterr().out
    assert code == 1
    assert proj.read_bytes() == before
    assert "max_concurrency: not written (no model has a measured optimum)" in out
    assert "wrote nothing: no recommendation rests on enough evidence" in out
    for key in ("rpm", "local"):
        line = next(x for x in out.splitlines() if x.startswith(f"recommended max_concurrency for {key}"))
        assert "none written (not enough evidence: " in line, out
    assert "budget was spent" in out


def test_sweep_prints_errored_beside_wall_clock_marks_the_knee_and_stores_one_run_per_level(
        proj: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # pytest may export its own width; the table needs its columns
    db = tmp_path / "s.db"
    code = main(["sweep", "--project", str(proj), "--models", "local", "--levels", "1,2,4", "--trials", "10",
                 "--db", str(db)])
    cap = capsys.readouterr()
    out = cap.out
    assert code == 0
    header = next(line for line in out.splitlines() if "wall s" in line)
    assert header.index("wall s") < header.index("errored") < header.index("goodput")
    knee = next(line for line in out.splitlines() if "◀ knee" in line)
    assert knee.index("◀ knee") == header.index("verdict")  # the mark sits under a header that names it
    # The verdict names the knee row. A serial server's goodput is flat at every level, so which level that is, and
    # whether the words are 'optimum ≈ 1: goodput flat/lower above 1' or 'still rising at 4' (a stall at 1 or 2 on
    # a busy machine), is what this machine measured over 20 calls a level: read, not assumed. The rule itself is
    # pinned on fixed evidence in tests/unit/test_tuning_evidence.py.
    said = re.search(r"verdict: (?:optimum ≈ (\d+): (?:goodput (?:flat|lower)|the server queues) above \1"
                     r"|still rising at (\d+): try higher)", out)
    assert said, out
    assert "level 1 (1 of 3): " in cap.err and "level 4 (3 of 3): " in cap.err  # progress as each level ends
    assert "level 4 (3 of 3): running…" in cap.err  # and as each starts: a level can take minutes
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT level, run_id, knee FROM level_sweeps ORDER BY level").fetchall()
        assert [r[0] for r in rows] == [1, 2, 4]
        assert len({r[1] for r in rows}) == 3
        assert sum(r[2] for r in rows) == 1
        assert [r[0] for r in rows if r[2]] == [int(said.group(1) or said.group(2))]
        assert c.execute("SELECT COUNT(DISTINCT run_id) FROM results").fetchone()[0] == 3


def test_tune_show_names_the_verdict_column_at_80_columns(proj: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "t.db"
    main(["tune", "--project", str(proj), "--models", "local", "--budget", "30", "--db", str(db)])
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["tune", "--show", "last", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "level" in line and "goodput" in line)
    assert len(header) <= 80 and header.rstrip("┃ ").endswith("verdict"), out
    marks = [line for line in out.splitlines() if line.startswith("│")]
    assert marks and all(line[header.index("verdict"):].strip("│ ") in ("◀ best", "short", "") for line in marks), out


def test_sweep_says_when_a_models_cap_bounds_the_levels(proj: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--project", str(proj), "--models", "ceiling", "--levels", "1,4", "--trials", "3",
                 "--db", str(tmp_path / "s.db")])
    out = capsys.readouterr().out
    assert code == 0
    assert "ceiling: max_concurrency = 2 in " in out and "bounds its calls at levels above 2" in out


def test_sweep_levels_bad_input_is_a_usage_error(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["sweep", "--project", str(proj), "--levels", "1,x"])
    assert e.value.code == 2
    assert "--levels" in capsys.readouterr().err


def test_evaluate_tune_stores_decisions_readout_and_every_failed_attempt(
        proj: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj.write_text(PROJECT.replace("max_concurrency = 2  # was set by hand\n", ""), encoding="utf-8")
    db = tmp_path / "e.db"
    code = main(["evaluate", "--project", str(proj), "--models", "ceiling", "--trials", "300", "--db", str(db),
                 "--quiet", "--no-report", "--tune"])
    assert code == 0
    with sqlite3.connect(db) as c:
        sources = {r[0] for r in c.execute("SELECT source FROM concurrency_changes")}
        assert "tuner" in sources
        reasons = [r[0] for r in c.execute("SELECT reason FROM tuning_decisions ORDER BY at, rowid")]
        assert reasons[0].startswith("tuner on: starting at ceiling ")
        assert any(r.startswith("ceiling ") and " → " in r and "429s" in r for r in reasons)
        levels = c.execute("SELECT level, enough, best, verdict FROM tuning_levels").fetchall()
        assert any(r[2] for r in levels) and all(r[3] == levels[0][3] for r in levels)
        retried = c.execute("SELECT SUM(attempts) - COUNT(*) FROM results").fetchone()[0]
        failed = c.execute("SELECT COUNT(*) FROM failed_attempts").fetchone()[0]
        errored = c.execute("SELECT COUNT(*) FROM results WHERE status = 'errored'").fetchone()[0]
        assert retried > 0  # the tuner doubled past the ceiling of 6 once
        assert failed == retried + errored
        row = c.execute("SELECT attempt, error_class, retry_after_s, delay_s, at FROM failed_attempts "
                        "LIMIT 1").fetchone()
        assert row[0] >= 1 and row[1] == "rate_limited" and row[2] is not None and row[3] >= row[2] and row[4] > 0


def test_a_tiny_budget_never_climbs_past_what_its_calls_left_can_fill(proj: Path, tmp_path: Path) -> None:
    """20 calls against a limit of 10 in flight: the tuner knows the calls left (the plan's, counted down as calls
    end) and moves to no level they cannot fill four times, so it never reaches the limit nor pays a retry."""
    import anyio

    from arenatui.kernel.events import CallFinished, Event
    from arenatui.plan import Filters
    from arenatui.session.sweep import Sweep, SweepOptions

    attempts: list[int] = []

    def sink(ev: Event) -> None:
        if type(ev) is CallFinished:
            attempts.append(ev.result.attempts)

    sweep = Sweep(SweepOptions(project=proj, filters=Filters(models=("rpm",), limit=2, trials=10),
                               db=tmp_path / "t.db", tune=True), live_metrics=False, extra_sinks=(sink,))
    anyio.run(sweep.run)
    assert len(attempts) == 20 and max(attempts) == 1
    assert sweep.tuner.controllers["rpm"].left == 0
    assert all(d.new <= 20 // 4 for d in sweep.tuner.decisions)


def test_write_with_no_optimum_writes_no_timeout_either_and_exits_1(
        proj: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A model capped at its level has no optimum: `--write` still wrote `[run] timeout_s` (measured on answers of a
    few ms) and exited 0, where the README says nothing is written and the exit code is 1 (issue 34 item 14)."""
    monkeypatch.setenv("COLUMNS", "200")
    proj.write_text(PROJECT.replace("max_concurrency = 2  # was set by hand", "max_concurrency = 1  # by hand"),
                    encoding="utf-8")
    before = proj.read_bytes()
    code = main(["tune", "--project", str(proj), "--models", "ceiling", "--budget", "120", "--db",
                 str(tmp_path / "t.db"), "--write"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert proj.read_bytes() == before, out
    assert "wrote nothing" in out and "no model has a measured optimum" in out


def test_a_written_timeout_measured_on_answers_below_the_floor_says_so_on_its_own_line(
        proj: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from arenatui.tuning.budgets import TIMEOUT_FLOOR_S

    monkeypatch.setenv("COLUMNS", "200")
    code = main(["tune", "--project", str(proj), "--models", "local", "--budget", "200", "--db",
                 str(tmp_path / "t.db"), "--write", "concurrency,timeout_s"])
    out = capsys.readouterr().out
    written = tomllib.loads(proj.read_text(encoding="utf-8")).get("run", {}).get("timeout_s")
    if written is None:  # a loaded machine can leave too few answers for a timeout verdict: nothing to check
        pytest.skip(f"no timeout written: {out}")
    assert code == 0 and written < TIMEOUT_FLOOR_S
    line = next(x for x in out.splitlines() if "floor" in x)
    assert line.startswith("[run] timeout_s") and f"{TIMEOUT_FLOOR_S:g} s" in line, out

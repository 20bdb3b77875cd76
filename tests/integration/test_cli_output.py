"""What every command prints, as a person or a pipe meets it: quiet when stdout's reader goes away (`| head`), and
table commands readable at 80 columns (no model name or headline figure cut, no line over 80 characters)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from arenatui.kernel.units import score

MODELS = ("sim-large-instruct-2026", "sim-limited", "sim-small")
"""A long name among them: at 80 columns it is the first thing a squeezed table cut."""
WORKTREE = Path(__file__).resolve().parents[2]
SERIES = "nightly-load-of-sim-limited"
"""A series name as long as a generated one: `arena runs` labels its runs S1 and names it in full below."""


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(ARENATUI_HOME=str(home), PYTHONPATH=str(WORKTREE), **extra)
    return env


def _project(path: Path, seed: int = 3, latency: float = 0.0) -> Path:
    sim = {"base_latency_s": latency, "per_token_s": 0.0, "jitter": 0.0}
    raw = {"project": {"name": "cli-output"}, "run": {"seed": seed, "concurrency": 8, "trials": 2},
           "models": [{"key": k, "provider": "sim", "model": k, "price_in_per_mtok": 0.3, "price_out_per_mtok": 0.9,
                       "sim": {**sim, "accuracy": acc}} for k, acc in zip(MODELS, (0.9, 0.7, 0.5), strict=True)],
           "cases": [{"id": f"case-{i:02d}", "input": f"question {i}", "expected": "yes",
                      "stratum": ("easy", "hard")[i % 2]} for i in range(12)]}
    path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return path


def _arena(home: Path, *args: str, stdout: int | None = subprocess.PIPE, timeout: float = 120,
           **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arenatui", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env=_env(home, **env), timeout=timeout, cwd=home)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two sweeps of one project and a load run (of a series), in one database."""
    home = tmp_path_factory.mktemp("cli-output")
    project = _project(home / "p.toml")
    db = str(home / "r.db")
    runs = []
    for seed in ("3", "4"):
        p = _arena(home, "evaluate", "--project", str(project), "--db", db, "--quiet", "--no-report", "--seed", seed)
        assert p.returncode == 0, p.stderr
        runs.append(re.search(r"Run id: (\S+)", p.stdout).group(1))  # type: ignore[union-attr]
    p = _arena(home, "load", "--project", str(project), "--db", db, "--model", MODELS[1], "--rates", "20",
               "--duration", "0.4", "--quiet", "--series", SERIES)
    assert p.returncode == 0, p.stderr
    load = re.search(r"Run id: (\S+)", p.stdout).group(1)  # type: ignore[union-attr]
    # calls of 50 ms: the tuner's windows are held for their time, not raced by calls that take none (at zero
    # latency a busy machine could end the 60 calls before any window closed, and the run had no readout)
    slow = _project(home / "slow.toml", latency=0.05)
    p = _arena(home, "tune", "--project", str(slow), "--db", db, "--budget", "60")
    assert p.returncode == 0, p.stderr
    tuned = re.search(r"Run id: (\S+)", p.stdout).group(1)  # type: ignore[union-attr]
    return {"home": str(home), "project": str(project), "db": db, "run": runs[0], "run2": runs[1], "load": load,
            "tuned": tuned}


def _commands(s: dict[str, str], fresh: str) -> dict[str, list[str]]:
    db = ["--db", s["db"]]
    return {
        "version": ["--version"],
        "help": ["--help"],
        "evaluate": ["evaluate", "--project", s["project"], "--db", fresh, "--quiet"],
        "runs": ["runs", *db],
        "compare": ["compare", s["run"], *db],
        "compare --all": ["compare", s["run"], "--all", *db],
        "compare --json": ["compare", s["run"], "--json", *db],
        "compare two runs": ["compare", s["run"], s["run2"], *db],
        "report md": ["report", s["run"], *db],
        "report json": ["report", s["run"], "-f", "json", *db],
        "report html": ["report", s["run"], "-f", "html", *db],
        "report load run": ["report", s["load"], *db],
        "export jsonl": ["export", s["run"], *db],
        "export csv": ["export", s["run"], "-f", "csv", *db],
        "export load run": ["export", s["load"], *db],
        "load --show": ["load", "--show", s["load"], *db],
        "tune --show": ["tune", "--show", s["run"], *db],
        "tune --show tuned": ["tune", "--show", s["tuned"], *db],
        "tune": ["tune", "--project", s["project"], "--budget", "60", "--db", fresh],
        "sweep": ["sweep", "--project", s["project"], "--levels", "1,2", "--limit", "2", "--db", fresh],
        "init": ["init", str(Path(fresh).parent / "starter")],
        "plan": ["plan", "--project", s["project"], "--table"],
    }


TABLES = ("evaluate", "runs", "compare", "compare --all", "compare two runs", "load --show", "tune",
          "tune --show tuned", "sweep")
"""The commands that print tables for people."""
LEVEL_TABLES = ("tune", "tune --show tuned", "sweep")
"""Tables of concurrency levels: their headline columns are the goodput and the 429 share."""


STORED = ("project", "db", "run", "run2", "load", "tuned")


@pytest.mark.parametrize("name", list(_commands(dict.fromkeys(STORED, "x"), "f")))
def test_a_closed_pipe_ends_the_command_quietly(stored: dict[str, str], tmp_path: Path, name: str) -> None:
    """`arena … | head`: the reader is gone before the first byte; the command stops with exit 0 or 141 (the shell's
    code for SIGPIPE), never a traceback or Rich's exit 1."""
    args = _commands(stored, str(tmp_path / "fresh.db"))[name]
    read, write = os.pipe()
    os.close(read)
    try:
        p = _arena(Path(stored["home"]), *args, stdout=write)
    finally:
        os.close(write)
    assert p.returncode in (0, 141), (name, p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and "BrokenPipeError" not in p.stderr, p.stderr


def test_mock_server_stops_quietly_when_its_reader_goes(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        p = _arena(tmp_path, "mock-server", "--port", "0", stdout=write, timeout=30)
    finally:
        os.close(write)
    assert p.returncode in (0, 141), p.stderr
    assert "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("name", TABLES)
def test_tables_at_80_columns_cut_no_name_and_no_headline_figure(stored: dict[str, str], tmp_path: Path,
                                                                  name: str, width: int) -> None:
    args = _commands(stored, str(tmp_path / "fresh.db"))[name]
    p = _arena(Path(stored["home"]), *args, COLUMNS=str(width))
    assert p.returncode == 0, p.stderr
    out = p.stdout
    long = [line for line in out.splitlines() if len(line) > width]
    assert not long, long
    assert "…" not in out, out  # Rich's mark of a cut cell
    # every model the command names is named in full (a cut one would have failed the "…" check)
    named = {"load --show": (), "compare": MODELS[:2], "sweep": ()}.get(name, MODELS)
    for model in named:
        assert model in out, (model, out)
    if name in LEVEL_TABLES:  # a table (not one block per level) with its headline columns whole
        assert re.search(r"┃ +level ┃.*┃ +goodput/s \(95%\) ┃ +429s \(95%\) ┃", out), out
    if name == "evaluate":
        rep = json.loads(_arena(Path(stored["home"]), "report", "last", "-f", "json", "--db",
                                str(tmp_path / "fresh.db")).stdout)
        for m in rep["leaderboard"]:
            assert score(m["quality"]["estimate"]) in out, (m["model"], out)
            line = next(line for line in out.splitlines() if m["model"] in line)
            assert score(m["quality"]["estimate"]) in line, line  # the figure beside its model's name


def test_sweep_progress_into_a_log_is_one_line_per_level(stored: dict[str, str], tmp_path: Path) -> None:
    """stderr into a CI log: each level's progress line whole (Rich alone wraps at 80, the run id on a line of its
    own)."""
    p = _arena(Path(stored["home"]), *_commands(stored, str(tmp_path / "fresh.db"))["sweep"])
    assert p.returncode in (0, 1), p.stderr
    lines = [line for line in p.stderr.splitlines() if line.startswith("  level ") and not line.endswith("running…")]
    assert len(lines) == 2 and all(re.search(r", run \d{8}-\d{6}-\w+$", line) for line in lines), p.stderr
    started = [line for line in p.stderr.splitlines() if line.startswith("  level ") and line.endswith("running…")]
    assert len(started) == 2, p.stderr  # and a line as each level starts (a level can take minutes)


def test_runs_shows_the_series_of_a_load_run_at_80_columns(stored: dict[str, str]) -> None:
    p = _arena(Path(stored["home"]), "runs", "--db", stored["db"], COLUMNS="80")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    row = next(line for line in lines if stored["load"] in line)
    assert "S1 1/1" in row and "series" in lines[1], p.stdout  # the column, and the load run's label in it
    sweep = next(line for line in lines if stored["run"] in line)
    assert "S1" not in sweep  # a sweep is in no series
    assert f"S1 = series {SERIES} (1 load run)" in lines, p.stdout
    assert f"Compare a series' runs by its name: arena compare {SERIES}" in lines


def test_a_resume_says_what_it_made_apart_from_the_runs_total(tmp_path: Path) -> None:
    """Issue 22 item 6: `--retry-errored` that made 3 calls must not print "… = 24 calls in 1.2s" as if it made 24;
    the summary says "cases", in the field order scripts parse."""
    sim = {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0, "transient_rate": 0.3}
    project = tmp_path / "p.toml"
    project.write_text(tomli_w.dumps({
        "project": {"name": "resume"}, "run": {"seed": 4, "max_attempts": 1, "trials": 2},
        "models": [{"key": k, "provider": "sim", "model": k, "sim": sim} for k in ("a", "b")],
        "cases": [{"id": f"c{i}", "input": f"q{i}", "expected": "yes"} for i in range(6)]}), encoding="utf-8")
    db = str(tmp_path / "r.db")
    first = _arena(tmp_path, "evaluate", "--project", str(project), "--db", db, "--quiet", "--no-report",
                   "--fail-on-error", "1")
    assert first.returncode == 0, first.stderr
    assert re.search(r"^2 models × 6 cases × 2 trials = 24 calls in [\d.]+s$", first.stdout, re.M), first.stdout
    errored = int(re.search(r"Errored: (\d+) of 24 calls", first.stdout).group(1))  # type: ignore[union-attr]
    assert errored > 0
    again = _arena(tmp_path, "evaluate", "--resume", "last", "--retry-errored", "--db", db, "--quiet",
                   "--no-report", "--fail-on-error", "1")
    assert again.returncode == 0, again.stderr
    assert re.search(rf"^2 models × 6 cases × 2 trials = 24 calls in the run; this invocation made {errored} "
                     r"in [\d.]+s$", again.stdout, re.M), again.stdout


def test_every_listing_reads_as_json_or_tab_separated_columns(stored: dict[str, str]) -> None:
    """Issue 37 item 10: `arena runs | head -1` printed box-drawing and each model on its own line. Into a pipe each
    listing prints tab-separated columns (a header, then one line a row); `--json` prints JSON."""
    home, db = Path(stored["home"]), ["--db", stored["db"]]
    p = _arena(home, "runs", *db)
    head, *rows = p.stdout.splitlines()
    assert p.returncode == 0 and head.split("\t")[:3] == ["run id", "kind", "status"], p.stdout
    assert not any(ch in p.stdout for ch in "┃│━─")
    by_id = {r.split("\t")[0]: r.split("\t") for r in rows}
    assert by_id[stored["load"]][1] == "load" and by_id[stored["run"]][1] == "evaluate"  # not `run`: the console
    assert by_id[stored["tuned"]][1] == "tune"
    assert ", ".join(MODELS) in by_id[stored["run"]]  # every model on the run's one line
    listed = json.loads(_arena(home, "runs", "--json", *db).stdout)
    assert {r["run_id"]: r["kind"] for r in listed}[stored["load"]] == "load"
    assert {r["run_id"] for r in listed} == set(by_id)
    shown = json.loads(_arena(home, "tune", "--show", stored["tuned"], "--json", *db).stdout)
    assert shown["run_id"] == stored["tuned"] and {m["model"] for m in shown["models"]} <= set(MODELS)
    assert all("level" in lv and "answered" in lv for m in shown["models"] for lv in m["levels"])
    plain = _arena(home, "tune", "--show", stored["tuned"], *db).stdout.splitlines()
    assert plain[0].split("\t")[:2] == ["model", "level"]
    load = json.loads(_arena(home, "load", "--show", stored["load"], "--json", *db).stdout)
    assert load["run"]["run_id"] == stored["load"] and "run_figures" in load
    assert "\t" in _arena(home, "load", "--show", stored["load"], *db).stdout.splitlines()[0]
    table = _arena(home, "plan", "--table").stdout.splitlines()
    assert table[0].split("\t")[0] == "cases" and all(len(r.split("\t")) == len(table[0].split("\t"))
                                                      for r in table[1:])


def test_load_show_into_a_pipe_prints_every_table_tab_separated(stored: dict[str, str]) -> None:
    """Issue 37 item 10: into a pipe `load --show` printed the segment table alone; the percentile table follows it,
    after a blank line, each a header line and rows of as many fields."""
    p = _arena(Path(stored["home"]), "load", "--show", stored["load"], "--db", stored["db"])
    assert p.returncode == 0, p.stderr
    blocks = [b.splitlines() for b in p.stdout.split("\n\n")]
    tables = [b for b in blocks if b and "\t" in b[0]]
    assert [t[0].split("\t")[:2] for t in tables] == [["seg", "rate/s"], ["seg", "figure"]], p.stdout
    assert all(len(row.split("\t")) == len(t[0].split("\t")) for t in tables for row in t[1:])
    assert {row.split("\t")[1] for row in tables[1][1:]} >= {"latency from schedule", "TTFT from send"}
    assert p.stdout.rstrip().splitlines()[-1].startswith(f"Run id: {stored['load']}")


def test_compare_and_plan_say_why_their_power_figures_differ(stored: dict[str, str]) -> None:
    """Issue 37 item 5: `arena plan` said the demo's cases detect 0.338, `compare` 0.153 for the same cases, neither
    saying why. Each names the other's basis: the observed pairing against independent errors."""
    home, db = Path(stored["home"]), ["--db", stored["db"]]
    pairs = _arena(home, "compare", stored["run"], "--all", *db, COLUMNS="200")
    assert pairs.returncode == 0, pairs.stderr
    assert "80% power:" in pairs.stdout  # the fixture's run has an undecided pair with a power figure
    assert "this pair showed" in pairs.stdout and "`arena plan` assumes independent errors" in pairs.stdout
    plan = json.loads(_arena(home, "plan", "--project", stored["project"], "--json").stdout)["assumption"]
    assert "errors are independent" in plan and "`arena compare`, which reads a run's observed pairing" in plan


def test_the_verdict_columns_marks_are_explained_under_the_tables(stored: dict[str, str]) -> None:
    """Issue 37 item 14: at 80 columns `short of` is left out and `short` (and `◀ best`) stood unexplained."""
    from arenatui.commands.tune import marks_legend

    assert marks_legend(["", "short", "◀ best", "short"]) == (
        "verdict column: ◀ best: the level the verdict names; short: not held long enough or too few answers to "
        "judge yet (`short of` says what it lacks)")
    assert marks_legend(["", "faster: calls gave up"]) is None
    p = _arena(Path(stored["home"]), "tune", "--show", stored["tuned"], "--db", stored["db"], COLUMNS="80")
    assert p.returncode == 0, p.stderr
    table = [line for line in p.stdout.splitlines() if line.startswith("│")]
    shown = {m for m in ("◀ best", "short") if any(m in line for line in table)}
    assert shown, p.stdout  # the tuned run has marks to explain
    legend = " ".join(p.stdout.split()).partition("verdict column: ")[2]  # folded to the width: unfolded here
    assert legend and all(m + ":" in legend for m in shown), p.stdout

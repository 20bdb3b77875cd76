"""Every shell command in README.md accounted for (issue 37 item 15): each concrete one is run as written by a test
(here, in a temporary folder with its own data directory, or in the test named for it), or is listed with why it
cannot run offline; every synopsis (`arena load --project P [--model M] ...`) names a verb and flags that exist; and
what the README says a command prints is checked against what it prints.

A command added to the README fails `test_every_readme_command_is_accounted_for` until it is placed here."""

from __future__ import annotations

import os
import re
import shlex
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from arenatui.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

PLACEHOLDER = re.compile(r"\.\.\.|…|\[|\||\$|\b(P|M|R|D|N|K|RUN|RUN_ID|ID|OLD|NEW|NAME|FILE|DIR|X|Y|RATE|PATH|"
                         r"SERIES_ID|LOAD_RUN|OTHER_LOAD_RUN|OLD_RUN|NEW_RUN|IN|OUT)\b")
"""What makes a command a synopsis, not something to type: a placeholder, an alternative, an optional part."""


def readme_commands() -> list[str]:
    """Every shell command of the README: each line of its bash, sh and unlabelled code blocks (continuations
    joined, comments dropped), and each inline code span starting with arena, python, bash or pip."""
    text = README.read_text(encoding="utf-8")
    found: list[str] = []
    for lang, body in re.findall(r"^ *```(\w*)\n(.*?)^ *```", text, re.S | re.M):
        if lang == "ini":  # a crontab line or a systemd unit's ExecStart: the arena command in it
            found += [" ".join(m.split()) for m in re.findall(r"(?:&& |ExecStart=)(arena [^\n]+)", body)]
        if lang not in ("bash", "sh", ""):
            continue
        for line in re.sub(r"\\\n\s*", " ", body).splitlines():
            words = re.sub(r"(^|\s)#.*", "", line).split()  # a comment: at the start or after a space
            if words:
                found.append(" ".join(words))
    for span in re.findall(r"(?<!`)`((?:arena|python|bash|pip) [^`]+)`(?!`)", text):
        found.append(" ".join(span.replace("\\|", "|").split()))
    return list(dict.fromkeys(found))


def _verb_only(cmd: str) -> bool:
    return bool(re.fullmatch(r"arena [a-z-]+", cmd)) and cmd not in RUN_HERE


def _synopsis(cmd: str) -> bool:
    return bool(PLACEHOLDER.search(cmd)) and cmd not in RUN_HERE and cmd not in ELSEWHERE


RUN_HERE: dict[str, str] = {
    "arena evaluate --project sample_configs/demo.toml": "demo",
    "arena runs": "demo",
    "arena plan --mde 0.15": "demo",
    "arena plan --table": "demo",
    "arena export RUN | head": "demo (RUN: last)",
    "arena tune --show RUN_ID|last": "demo (last)",
    "arena compare RUN [--a X --b Y | --all] [--json] [--cluster-by cluster|stratum|tag:NAME]": "demo (last --all)",
    "arena report RUN --format md|json|html [-o FILE] [--cluster-by ...]": "demo (last --format html -o FILE)",
    "arena init [DIR]": "demo (DIR: starter)",
    "arena init": "demo",
    "arena evaluate --project arena.toml --shard $K/10 --run-id sweep-42 --db shard-$K.db --quiet": "shards",
    "arena merge merged.db shard-*.db": "shards (the shell's glob)",
    "arena report load-42 --db merged.db": "shards (the sweep's id, sweep-42: the load shards run 5 minutes)",
    "arena mock-server --config sample_configs/mock_http.toml": "mock_http",
    "arena evaluate --project sample_configs/mock_http.toml": "mock_http",
}
"""Concrete commands this module runs (with the part substituted, where one is, named)."""

ELSEWHERE: dict[str, str] = {
    **dict.fromkeys([
        "arena evaluate --project sample_configs/bakeoff.toml --quiet",
        "arena load --project sample_configs/bakeoff.toml --model quick --rate 4 --duration 5s --slo latency=2s "
        "--quiet",
        "arena load --project sample_configs/bakeoff.toml --model sharp --rate 4 --duration 5s --slo latency=2s "
        "--quiet",
        "arena load --project sample_configs/bakeoff.toml --model steady --rates 2,4 --duration 5s --slo "
        "latency=2s --quiet",
        "arena bakeoff last", "arena bakeoff last -f html -o bakeoff.html", "arena bakeoff --show last"],
        "tests/integration/test_bakeoff_sample.py (the walk-through, as written)"),
    **dict.fromkeys(["arena mock-server --config examples/retrieval/arena.toml", "python examples/retrieval/run.py",
                     "python examples/stateful/run.py", "arena evaluate --project examples/chained"],
                    "tests/integration/test_examples.py"),
    **dict.fromkeys(["arena control last --concurrency 32", "arena control last --pause",
                     "arena control last --tune on", "arena control last --rate 50"],
                    "tests/integration/test_watch_control.py (against a run another process runs)"),
    **dict.fromkeys(["arena watch last", "arena browse last", "arena watch --db runs.db",
                     "arena watch --db 'shards/*.db'", "arena watch wide --db 'shards/*.db'"],
                    "the console: tests/tui/ (test_watch_console.py, test_results_screens.py) drive it with Pilot"),
    **dict.fromkeys([
        "python benchmarks/decision_coverage.py --only-issue35 --variant-sims 3000",
        "python benchmarks/decision_coverage.py --seeds 40",
        "python benchmarks/http_overhead.py --transports aiohttp --only cpu --calls 1500",
        "python benchmarks/http_overhead.py --calls 1500 --transports aiohttp",
        "python benchmarks/engine_against.py --ref 0bbfb11 --instructions",
        "python benchmarks/load_accuracy.py --parts saturation", "python benchmarks/load_rates.py",
        "python benchmarks/tuner.py --seeds 10 --modes tuner", "python benchmarks/tuner.py --seeds 8 --modes tuner",
        "python benchmarks/tuner.py --seeds 8 --modes tuner --calls 2000",
        "python benchmarks/tuner.py --seeds 20 --modes tuner --calls 2000",
        "python benchmarks/tuner.py --seeds 20 --verbose",
        "python benchmarks/tuner.py --shapes serial --fixed 1,2,4,16 --seeds 6",
        "python benchmarks/tuner.py --shapes serial_small --seeds 10 --modes tuner --verbose",
        "python benchmarks/watch_overhead.py"],
        "a benchmark: minutes of CPU as written; tests/unit/test_benchmarks_smoke.py runs each with its smallest "
        "arguments"),
}
"""Concrete commands another test runs."""

NOT_RUN: dict[str, str] = {
    "pip install -e '.[dev]' && arena demo": "installs from the package index (network); `arena demo` is the "
                                            "console: tests/tui/test_demo_terminal.py",
    "bash scripts/test.sh": "the whole suite, this test among it",
    "bash scripts/install_servers.sh": "downloads llama.cpp and litellm (network)",
    "python -m pytest -m servers": "the conformance tier: real servers, installed by install_servers.sh",
    "python benchmarks/llamacpp_server.py": "needs llama-cpp-python's server and a model (the conformance tier)",
    "python -m llama_cpp.server": "a real server, not arenatui",
    "python -I": "an interpreter flag named in prose (how code_exec runs answers), not a command",
    "python -c pass": "the start-up benchmark's baseline, named in prose",
    "arena evaluate --quiet --db runs.db &": "a fragment of prose (no project); the Watching section's block runs "
                                             "the same in tests/integration/test_watch_control.py",
    "arena tune --show": "the verb and flag named in prose; `arena tune --show RUN_ID|last` is run here",
    "arena tune --write": "named in prose: writes a project file after minutes of tuning; "
                          "tests/integration/test_tune_commands.py runs it on a copy",
    "arena tune --write concurrency": "as above",
    "arena evaluate --project sample_configs/demo.toml --tune --quiet":
        "a measurement named in prose (20 s a run, its figure is the machine's wall clock, which no test may "
        "depend on); the tuner's moves and verdicts: tests/unit/test_tuning_*.py, tests/integration/"
        "test_tune_commands.py",
    "arena tune --budget 60": "named in prose (no project): tests/integration/test_cli_output.py runs "
                              "`tune --project ... --budget 60`",
    "arena load --project arena.toml --model m --rate 8 --duration 15m --series daily --quiet":
        "the cron and systemd examples: 15 minutes, from /srv/bench; tests/integration/test_cli_output.py runs a "
        "short --series",
    "arena compare series-20261202-090000-1a2b": "an example series id: tests/integration/test_bakeoff_cli.py "
                                                 "compares a real series",
    "arena load --project arena.toml --model m --rate 2000 --duration 5m --seed 7 --shard $K/10 --run-id load-42 "
    "--start-at 2026-12-01T12:00:00Z --db shard-$K.db --quiet":
        "five minutes at 2,000 requests/s from a start time in the past; tests/integration/test_sharded_machines.py "
        "runs load shards on a barrier",
}
"""Concrete commands no test runs as written, with why."""


def _verb_and_flags(cmd: str) -> list[tuple[str, list[str]]]:
    """(verb, the flags the command names) for each verb an `arena` command names (`evaluate|load` is two)."""
    words = cmd.split()
    if words[0] != "arena" or len(words) < 2:
        return []
    flags = [w.split("=")[0].strip("[]()") for w in words[2:] if re.match(r"\[?-", w)]
    return [(verb, flags) for verb in words[1].split("|")]


def _options(verb: str) -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    choices: dict[str, object] = sub.choices  # type: ignore[assignment]
    if verb not in choices:
        return set()
    return {s for a in choices[verb]._actions for s in a.option_strings}  # type: ignore[attr-defined]


def test_the_readme_commands_are_found() -> None:
    found = readme_commands()
    assert "arena evaluate --project sample_configs/demo.toml" in found
    assert "arena merge merged.db shard-*.db" in found  # the indented blocks of the sharding steps
    assert len(found) > 80


def test_every_readme_command_is_accounted_for() -> None:
    """Run here, run elsewhere, a synopsis or a verb (checked below), or not runnable with a reason."""
    loose = [c for c in readme_commands() if not (c in RUN_HERE or c in ELSEWHERE or c in NOT_RUN or _verb_only(c)
                                                  or _synopsis(c))]
    assert loose == [], "README commands no test runs: run them here, or say in NOT_RUN why they cannot run"
    stale = [c for c in (*RUN_HERE, *ELSEWHERE, *NOT_RUN) if c not in readme_commands()]
    assert stale == [], "commands listed here that the README no longer has"


def test_every_verb_and_flag_the_readme_names_exists() -> None:
    """A synopsis is not run, but its verb and every flag it names must be the CLI's (a renamed flag fails)."""
    unknown = []
    for cmd in readme_commands():
        for verb, flags in _verb_and_flags(cmd):
            options = _options(verb)
            if not options:
                unknown.append(f"{cmd}: no verb {verb!r}")
            unknown += [f"{cmd}: {verb} has no {f}" for f in flags if f not in options]
    assert unknown == []


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, "ARENATUI_HOME": str(home / "data-home"), "PYTHONPATH": str(ROOT)}


def shell(cmd: str, cwd: Path, *, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess[str]:
    """`cmd` as a person types it, in bash, `arena` being this checkout's (python -m arenatui)."""
    env = {**_env(cwd), **extra}
    prelude = f'arena() {{ {shlex.quote(sys.executable)} -m arenatui "$@"; }}; '
    return subprocess.run(["bash", "-c", prelude + cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _folder(tmp: Path) -> Path:
    """A folder where the README's relative paths resolve (sample_configs, examples) and anything written stays."""
    for name in ("sample_configs", "examples"):
        (tmp / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, subprocess.CompletedProcess[str]]]:
    """The Quick start's headless demo, then the commands that read its database (the default one)."""
    d = _folder(tmp_path_factory.mktemp("readme-demo"))
    runs: dict[str, subprocess.CompletedProcess[str]] = {}
    for cmd in ("arena evaluate --project sample_configs/demo.toml", "arena runs", "arena plan --mde 0.15",
                "arena plan --table", "arena export last | head", "arena tune --show last", "arena compare last --all",
                "arena report last --format html -o report.html", "arena init starter", "arena init"):
        runs[cmd] = p = shell(cmd, d)
        assert p.returncode == 0, (cmd, p.stderr[-2000:])
        assert "Traceback" not in p.stderr, (cmd, p.stderr[-2000:])
    return d, runs


def test_the_demo_and_what_reads_it_run_as_written(demo: tuple[Path, dict[str, subprocess.CompletedProcess[str]]]
                                                   ) -> None:
    d, runs = demo
    assert "Run id:" in runs["arena evaluate --project sample_configs/demo.toml"].stdout
    assert (d / "report.html").read_text(encoding="utf-8").startswith("<!doctype html>")
    assert (d / "arena.toml").exists() and (d / "starter" / "arena.toml").exists()
    assert len(runs["arena export last | head"].stdout.splitlines()) == 10


def test_arena_runs_shows_what_the_readme_says(demo: tuple[Path, dict[str, subprocess.CompletedProcess[str]]]
                                               ) -> None:
    """The Commands table: each run's kind, status, calls, models; into a pipe, tab-separated, a header first."""
    _, runs = demo
    head, row = runs["arena runs"].stdout.splitlines()[:2]
    assert head.split("\t") == ["run id", "kind", "status", "calls", "models", "started", "project"]
    fields = row.split("\t")
    assert fields[1:4] == ["evaluate", "finished", "384/384"], row  # `evaluate`, not `run` (the console's)
    assert set(fields[4].split(", ")) == {"sim-large", "sim-limited", "sim-small", "sim-flaky"}  # on one line
    assert fields[6] == "demo"


def test_what_the_commands_table_says_they_print(demo: tuple[Path, dict[str, subprocess.CompletedProcess[str]]]
                                                ) -> None:
    """`arena evaluate` ends with `N models × M cases × K trials = T calls in S s`; `last` is named on stderr's
    first line as `last = run ID (kind, status, started, project)`; `| head` ends the command with 0 or 141."""
    d, runs = demo
    assert re.search(r"^4 models × 12 cases × 8 trials = 384 calls in [\d.]+ ?s$",
                     runs["arena evaluate --project sample_configs/demo.toml"].stdout, re.M)
    first = runs["arena tune --show last"].stderr.splitlines()[0]
    assert re.fullmatch(r"last = run \S+ \(evaluate, finished, started [\d-]+ [\d:]+, project demo\)", first), first
    p = shell('arena export last | head -1 >/dev/null; echo "exit ${PIPESTATUS[0]}"', d)
    assert p.stdout.strip() in ("exit 0", "exit 141") and "Traceback" not in p.stderr, (p.stdout, p.stderr)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_demos_html_report_lays_out(demo: tuple[Path, dict[str, subprocess.CompletedProcess[str]]],
                                        tmp_path: Path, width: int) -> None:
    """Issue 37 item 16 on the demo's report (it has goodput-by-level charts, which the layout tests' own report
    lacks): nothing off the page, every chart label inside its drawing (the legend ran off a 240-unit chart), and no
    chart shrunk below 0.85 of its drawing."""
    from test_html_report_browser import CHROMIUM, layout_of

    if CHROMIUM is None:
        pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium)")
    d, _ = demo
    layout = layout_of(d / "report.html", tmp_path, width)
    # cost and latency frontiers, and a goodput chart per model whose tuner readout held a level (which models did
    # depends on how busy the machine was while the demo ran: three or four of them)
    charts = (d / "report.html").read_text(encoding="utf-8").count(": goodput by level</h3>")
    assert charts >= 1 and layout["frontiers"] == 2 + charts, layout
    assert layout["overflowing"] == [] and layout["scrollWidth"] <= layout["width"], layout
    assert layout["outside"] == [], layout
    assert min(layout["scales"]) >= 0.85, layout


def test_the_results_query_of_the_design_runs_as_printed(
        demo: tuple[Path, dict[str, subprocess.CompletedProcess[str]]]) -> None:
    """The README's SQL (a user's rate-limit diagnosis) against the demo's database, `<id>` its run id."""
    d, runs = demo
    sql = README.read_text(encoding="utf-8").split("```sql\n", 1)[1].split("```", 1)[0]
    run_id = re.search(r"Run id: (\S+)", runs["arena evaluate --project sample_configs/demo.toml"].stdout)
    assert run_id
    with sqlite3.connect(d / "data-home" / "data" / "arena.db") as c:
        rows = c.execute(sql.replace("<id>", run_id.group(1))).fetchall()
    assert sorted(r[0] for r in rows) == ["sim-flaky", "sim-large", "sim-limited", "sim-small"]
    assert sum(r[1] for r in rows) == 384 and any(r[4] > 0 for r in rows)  # sim-limited's 429s are retried


def test_the_sharding_steps_run_as_written(tmp_path: Path) -> None:
    """Step 1's sweep shard on each of ten "machines" (K = 0..9), step 3's merge and report, and what the README
    says `arena runs` shows of a shard and of the merged run."""
    d = _folder(tmp_path)
    sim = {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0}
    (d / "arena.toml").write_text(tomli_w.dumps({
        "project": {"name": "sharded"}, "run": {"seed": 7},
        "models": [{"key": k, "provider": "sim", "model": k, "sim": sim} for k in ("m", "n")],
        "cases": [{"id": f"c{i}", "input": f"q{i}", "expected": "yes"} for i in range(20)]}), encoding="utf-8")
    step1 = next(c for c in RUN_HERE if "--shard $K/10" in c)
    p = shell(f"for K in 0 1 2 3 4 5 6 7 8 9; do {step1} || exit 1; done", d)
    assert p.returncode == 0, p.stderr[-2000:]
    p = shell("arena merge merged.db shard-*.db", d)
    assert p.returncode == 0, p.stderr[-2000:]
    p = shell("arena report sweep-42 --db merged.db", d)
    assert p.returncode == 0 and "sweep-42" in p.stdout, p.stderr[-2000:]
    shard = shell("arena runs --db shard-3.db", d).stdout.splitlines()[1].split("\t")
    assert shard[1:3] == ["shard", "finished, shard 3/10"], shard  # "kind `shard`, status `finished, shard 3/10`"
    merged = shell("arena runs --db merged.db", d).stdout.splitlines()[1].split("\t")
    assert merged[1] == "merged" and merged[2].endswith("10 shards"), merged  # "then `10 shards` in `arena runs`"


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_the_mock_server_and_its_sweep_run_as_written(tmp_path: Path) -> None:
    """Terminal 1: `arena mock-server --config sample_configs/mock_http.toml` (127.0.0.1:8765); terminal 2: the
    sweep over the real HTTP providers against it."""
    if not _port_free(8765):
        pytest.skip("127.0.0.1:8765, the port the README's command and mock_http.toml name, is taken")
    d = _folder(tmp_path)
    server = subprocess.Popen([sys.executable, "-m", "arenatui", "mock-server", "--config",
                               "sample_configs/mock_http.toml"], cwd=d, env=_env(d), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if "8765" not in line:
            server.kill()
            pytest.skip(f"the mock server did not listen on 8765 (taken meanwhile?): {line!r}")
        p = shell("arena evaluate --project sample_configs/mock_http.toml", d)
        assert p.returncode == 0, p.stderr[-2000:]
        assert all(k in p.stdout for k in ("mock-gpt", "mock-claude", "mock-local")), p.stdout
    finally:
        server.terminate()
        server.wait(timeout=30)

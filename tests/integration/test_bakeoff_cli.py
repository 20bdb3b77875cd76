"""The bake-off end to end against the bundled mock server on 127.0.0.1: a sweep of two HTTP candidates and a python
solver that refuses a category, load runs at the target rate (one that never gets there), terms with a failing
requirement, then `arena bakeoff` (md, html, json) with every section checked, `--show`, `arena report --load`, and
repeated load runs on a fake clock compared as a series."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomli_w
from httpkit import start_server, stop_server

from arenatui.bakeoff import series
from arenatui.bakeoff.terms import ASK
from arenatui.cli import main

SIM = {"base_latency_s": 0.004, "per_token_s": 0.0002, "jitter": 0.0, "output_tokens": 8}
CASES = [{"id": f"c{i}", "input": f"question {i}", "expected": f"a{i}",
          "stratum": "billing" if i % 3 == 0 else "tech"} for i in range(30)]
SHY = '''
def make(ctx):
    def solve(req):
        if int(req.case_id[1:]) % 3 == 0:
            return "I'm sorry, but I can't help with billing questions."
        return "a" + req.case_id[1:]
    return solve
'''


@dataclass
class Bakeoff:
    db: Path
    project: Path
    sweep: str
    loads: dict[str, str]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The exit code, stdout, and stderr with its wrapping undone (an error paragraph wraps at the terminal)."""
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, " ".join(err.split())


def _run_id(out: str) -> str:
    m = re.findall(r"Run id: (\S+)", out)
    assert m, out
    return m[-1]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    d = tmp_path_factory.mktemp("bakeoff")
    server = d / "server.toml"
    server.write_text(tomli_w.dumps({
        "models": [{"key": "strong", "provider": "openai", "sim": {**SIM, "accuracy": 0.95}},
                   {"key": "steady", "provider": "anthropic", "sim": {**SIM, "accuracy": 0.8}}],
        "cases": CASES}), encoding="utf-8")
    proc, m, _ = start_server([sys.executable, "-m", "arenatui", "mock-server", "--port", "0", "--config",
                               str(server)], r"listening on (http://127\.0\.0\.1:\d+)")
    try:
        yield d, m.group(1)
    finally:
        stop_server(proc)


@pytest.fixture(scope="module")
def bakeoff(served: tuple[Path, str]) -> Iterator[Bakeoff]:
    d, url = served
    (d / "shy.py").write_text(SHY, encoding="utf-8")
    sys.path.insert(0, str(d))
    project = d / "arena.toml"
    project.write_text(tomli_w.dumps({
        "project": {"name": "bakeoff-e2e"},
        "run": {"concurrency": 8, "timeout_s": 5.0, "max_attempts": 2, "seed": 1},
        "bakeoff": {"target_rate": 8.0},
        "requirements": {"regions": ["eu"], "max_retention_days": 30, "trains_on_data": False},
        "models": [
            {"key": "strong", "provider": "openai", "base_url": f"{url}/v1", "max_tokens": 64,
             "terms": {"retention_days": 0, "trains_on_data": False, "region": "us",
                       "source": "<script>alert(1)</script> https://strong.example/dpa", "checked": "2026-11-30"}},
            {"key": "steady", "provider": "anthropic", "base_url": url,
             "terms": {"retention_days": 0, "trains_on_data": False, "region": "eu", "deprecation_notice_days": 365,
                       "source": "https://steady.example/terms"}},
            {"key": "shy", "provider": "python", "factory": "shy:make"},
        ],
        "cases": CASES}), encoding="utf-8")
    db = d / "db.sqlite"
    try:
        assert main(["evaluate", "--project", str(project), "--db", str(db), "--quiet", "--no-report"]) == 0
        with sqlite3.connect(db) as conn:
            sweep = conn.execute("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
        loads = {}
        for model, rates in (("steady", "4,8"), ("strong", "4")):
            assert main(["load", "--project", str(project), "--db", str(db), "-m", model, "--rates", rates,
                         "--duration", "1.5s", "--slo", "latency=2s", "--quiet"]) == 0
            with sqlite3.connect(db) as conn:
                loads[model] = conn.execute("SELECT run_id FROM runs WHERE kind = 'load' ORDER BY started_at DESC "
                                            "LIMIT 1").fetchone()[0]
        yield Bakeoff(db, project, sweep, loads)
    finally:
        sys.path.remove(str(d))


def test_the_page_decides_with_every_section(bakeoff: Bakeoff, capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    capsys.readouterr()
    out = tmp_path / "page.json"
    code, _, err = _run(["bakeoff", bakeoff.sweep, "--db", str(bakeoff.db), "--load",
                         f"{bakeoff.loads['steady']},{bakeoff.loads['strong']}", "-f", "json", "-o", str(out)], capsys)
    assert code == 0, err
    assert f"arena bakeoff --show {bakeoff.sweep}" in err
    page = json.loads(out.read_text())
    decisions = {d["model"]: d for d in page["decisions"]}
    # terms: one failing requirement eliminates, naming term, requirement and source
    assert decisions["strong"]["decision"] == "eliminated"
    assert any("region is us, the requirement is regions = eu" in r and "strong.example/dpa" in r
               for r in decisions["strong"]["reasons"])
    # a category refused: called out on its own, and it decides alone
    assert decisions["shy"]["decision"] == "eliminated"
    assert any("shy refuses stratum billing: 10 of 10 calls" in r for r in decisions["shy"]["reasons"])
    assert decisions["steady"]["decision"] == "contender"
    refusals = page["failures"]["refusals"]
    assert [(r["model"], r["category"], r["refused"]) for r in refusals] == [("shy", "stratum billing", 10)]
    modes = {(m["model"], m["mode"]): m for m in page["failures"]["modes"]}
    assert modes[("shy", "refusal")]["count"] == 10 and modes[("shy", "refusal")]["calls"] == 30
    assert modes[("shy", "refusal")]["low"] < 1 / 3 < modes[("shy", "refusal")]["high"]
    # the margin: paired verdicts with intervals; robustness across prompts not measured yet
    assert len(page["margin"]["pairs"]) == 3 and all("diff" in p and "p_holm" in p for p in page["margin"]["pairs"])
    assert page["margin"]["robustness"]["text"] == "one prompt: not measured"
    # behaviour at the target load: steady's 8/s segment; strong never offered 8/s, flagged
    rows = {r["model"]: r for r in page["load"]["rows"]}
    assert page["load"]["target"] == "8/s (target_rate)"
    assert rows["steady"]["load_run"] == bakeoff.loads["steady"] and rows["steady"]["offered_rate"] == \
        pytest.approx(8, rel=0.2)
    assert rows["steady"]["flag"] is None and rows["steady"]["latency_ms"]["p95"] > 0
    assert rows["steady"]["goodput_share"] is not None and rows["steady"]["slo"] == "latency<=2000ms"
    # its p95 rests on about a dozen answered requests: shown with its n, not evidence, off the front
    assert 0 < rows["steady"]["answered"] < 73 and rows["steady"]["p95_evidence"].startswith("not enough evidence")
    assert not rows["steady"]["on_front"]
    assert "never reached the target: offered at most 4/s of 8/s" in rows["strong"]["flag"]
    assert rows["shy"]["load_run"] is None and page["load"]["missing"] == ["shy"]
    # identical conditions: max tokens differ (strong 64, the others the default)
    assert [c["setting"] for c in page["conditions"]] == ["max_tokens"]
    # terms: unknowns are asked, never assumed
    shy_terms = {t["term"]: t for t in page["terms"]["models"]["shy"]}
    assert shy_terms["region"]["shown"] == ASK and shy_terms["region"]["met"] is None
    # saved with the run: --show prints the same decision
    code, shown, _ = _run(["bakeoff", "--show", bakeoff.sweep, "--db", str(bakeoff.db), "-f", "json"], capsys)
    assert code == 0 and json.loads(shown)["decisions"] == page["decisions"]



@pytest.mark.parametrize("where", ["opening", "saving"])
def test_a_database_that_cannot_be_written_still_gets_its_page(bakeoff: Bakeoff, capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              where: str) -> None:
    """A shared or archived results file: the page is made from it read-only, and the user is told the decision was
    not saved (so --show cannot print it again), instead of getting no page at all. (Tests run as root, whom file
    modes do not stop: SQLite's read-only refusal is stood in for where it would come.)"""
    import arenatui.store as store_mod
    import arenatui.store.bakeoff_queries as bq
    from arenatui.kernel.errors import ReadOnlyDatabase

    db = tmp_path / "shared.sqlite"
    # copied through SQLite: a plain file copy opens and closes the file in this process, which drops the POSIX
    # locks the module's other connections hold on it, and the next write fails with "disk I/O error"
    src, dst = sqlite3.connect(bakeoff.db), sqlite3.connect(db)
    src.backup(dst)
    src.close()
    before = dst.execute("SELECT COUNT(*) FROM bakeoff_decisions").fetchone()[0]
    dst.close()
    real = store_mod.Store
    if where == "opening":
        def store(path: object = None, *, read_only: bool = False, create: bool | None = None) -> object:
            if not read_only:
                raise ReadOnlyDatabase(f"the results database {str(path)!r} is read-only (attempt to write a "
                                       "readonly database): this command writes to it")
            return real(path, read_only=True)  # type: ignore[arg-type]
        monkeypatch.setattr(store_mod, "Store", store)
    else:
        def refuse(*_a: object) -> None:
            raise sqlite3.OperationalError("attempt to write a readonly database")
        monkeypatch.setattr(bq, "save_decision", refuse)
    capsys.readouterr()
    out = tmp_path / "page.json"
    code, _, err = _run(["bakeoff", bakeoff.sweep, "--db", str(db), "-f", "json", "-o", str(out)], capsys)
    assert code == 0, err
    assert {d["model"] for d in json.loads(out.read_text())["decisions"]} == {"strong", "steady", "shy"}
    assert f"the decision is NOT saved with run {bakeoff.sweep}" in err and "cannot be written here" in err
    assert "arena bakeoff --show cannot print it again" in err
    con = sqlite3.connect(db)
    after = con.execute("SELECT COUNT(*) FROM bakeoff_decisions").fetchone()[0]
    con.close()
    assert after == before


def test_compare_last_after_load_runs_means_the_sweep_where_only_a_sweep_can_be_meant(
        bakeoff: Bakeoff, capsys: pytest.CaptureFixture[str]) -> None:
    """After a bake-off's load runs, the newest run is a load run: `compare last --a X --b Y` (or alone, with the
    load run in no series) compares the sweep's models, as `bakeoff last` decides on the sweep."""
    capsys.readouterr()
    code, out, err = _run(["compare", "last", "--a", "steady", "--b", "strong", "--json", "--db", str(bakeoff.db)],
                          capsys)
    assert code == 0, err
    assert json.loads(out)["run_id"] == bakeoff.sweep
    code, out, err = _run(["compare", "last", "--json", "--db", str(bakeoff.db)], capsys)
    assert code == 0, err
    assert json.loads(out)["run_id"] == bakeoff.sweep
    # two load runs named: still load runs, compared run by run
    code, out, err = _run(["compare", bakeoff.loads["steady"], bakeoff.loads["strong"], "--json", "--db",
                           str(bakeoff.db)], capsys)
    assert code == 0, err
    assert {r["run_id"] for r in json.loads(out)["runs"]} == {bakeoff.loads["steady"], bakeoff.loads["strong"]}

def test_markdown_and_html_pages_carry_each_section(bakeoff: Bakeoff, capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    capsys.readouterr()
    load = f"{bakeoff.loads['steady']},{bakeoff.loads['strong']}"
    code, md, _ = _run(["bakeoff", bakeoff.sweep, "--db", str(bakeoff.db), "--load", load], capsys)
    assert code == 0
    first_page = md.split("## The margin")[0]
    assert "**Warning.**" in first_page and "max_tokens differs: strong 64 (sweep)" in first_page
    for heading in ("## Decision", "## The margin", "## Quality beside load at the target", "## Which errors each "
                    "makes", "### Refusals by category", "## Terms"):
        assert heading in md
    assert "| strong | eliminated | terms: region is us" in md
    assert "Robustness across prompt variants: one prompt: not measured." in md
    page = tmp_path / "page.html"
    code, _, _ = _run(["bakeoff", bakeoff.sweep, "--db", str(bakeoff.db), "--load", load, "-f", "html", "-o",
                       str(page)], capsys)
    html = page.read_text()
    assert code == 0 and html.startswith("<!doctype html>") and "width=device-width" in html
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for part in ('<div class="warn">', "<h2>Decision</h2>", '<td class="eliminated">eliminated</td>',
                 '<td class="contender">contender</td>', "<h2>The margin</h2>",
                 "<h2>Quality beside load at the target",
                 '<svg class="frontier"', "<h2>Which errors each makes</h2>", "<h3>Refusals by category</h3>",
                 "<h2>Terms</h2>", ASK):
        assert part in html, part


def test_report_sets_the_load_runs_beside_quality(bakeoff: Bakeoff, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code, md, _ = _run(["report", bakeoff.sweep, "--db", str(bakeoff.db), "--load",
                        f"{bakeoff.loads['steady']},{bakeoff.loads['strong']}"], capsys)
    assert code == 0
    assert md.index("**Warning.**") < md.index("## Leaderboard")
    section = md.split("## Quality beside load at the target")[1].split("\n## ")[0]
    assert bakeoff.loads["steady"] in section and "never reached the target" in section
    code, js, _ = _run(["report", bakeoff.sweep, "--db", str(bakeoff.db), "--load", bakeoff.loads["steady"], "-f",
                        "json"], capsys)
    rep = json.loads(js)
    assert {r["model"]: r["load_run"] for r in rep["at_load"]["rows"]} == \
        {"strong": None, "steady": bakeoff.loads["steady"], "shy": None}
    code, html, _ = _run(["report", bakeoff.sweep, "--db", str(bakeoff.db), "--load", bakeoff.loads["steady"], "-f",
                          "html"], capsys)
    assert code == 0 and html.index('<div class="warn">') < html.index("<h2>Leaderboard</h2>")
    assert "<h2>Quality beside load at the target</h2>" in html and "p95 latency from schedule at the target" in html


def test_bad_load_runs_are_refused_with_one_paragraph(bakeoff: Bakeoff, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code, _, err = _run(["bakeoff", bakeoff.sweep, "--db", str(bakeoff.db), "--load", bakeoff.sweep], capsys)
    assert code == 2 and "is a sweep, not a load run" in err and "Traceback" not in err
    code, _, err = _run(["bakeoff", bakeoff.loads["steady"], "--db", str(bakeoff.db)], capsys)
    assert code == 2 and "is a load run: pass the sweep's run id" in err
    code, _, err = _run(["report", bakeoff.loads["steady"], "--db", str(bakeoff.db), "--load",
                         bakeoff.loads["steady"]], capsys)
    assert code == 2 and "is itself a load run" in err
    code, _, err = _run(["bakeoff", "--db", str(bakeoff.db)], capsys)
    assert code == 2 and "--show RUN" in err


class FakeClock:
    def __init__(self, now: float) -> None:
        self.t = now
        self.slept = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept += seconds
        self.t += seconds


def test_repeated_load_runs_form_a_series_compared_with_its_spread(bakeoff: Bakeoff, capsys: pytest.CaptureFixture[
        str], monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    clock = FakeClock(time.time())
    monkeypatch.setattr(series, "CLOCK", clock)
    capsys.readouterr()
    code, out, err = _run(["load", "--project", str(bakeoff.project), "--db", str(bakeoff.db), "-m", "steady",
                           "--rate", "8", "--duration", "0.5s", "--repeat", "2", "--every", "6s"], capsys)
    assert code == 0, err
    assert clock.slept == pytest.approx(6.0, abs=1.0)  # waited on the fake clock, never on the wall's
    assert "Repetition 2 of 2 starts at" in err
    sid = re.search(r"Series (series-\S+):", out)
    assert sid is not None
    with sqlite3.connect(bakeoff.db) as conn:
        runs = [r[0] for r in conn.execute("SELECT run_id FROM runs WHERE series_id = ? ORDER BY started_at",
                                           (sid.group(1),))]
    assert len(runs) == 2
    code, js, _ = _run(["compare", sid.group(1), "--db", str(bakeoff.db), "--json"], capsys)
    data = json.loads(js)
    assert [r["run_id"] for r in data["runs"]] == runs
    assert all(r["latency_ms"]["p95"] is not None and "rate_limited_share" in r for r in data["runs"])
    assert data["spread"]["ratio"] >= 1.0 and {data["spread"]["slowest"], data["spread"]["fastest"]} == set(runs)
    code, table, _ = _run(["compare", runs[0], runs[1], "--db", str(bakeoff.db)], capsys)
    assert code == 0 and "Spread: " in table and "p95 ms" in table
    code, _, err = _run(["compare", runs[0], "--all", "--db", str(bakeoff.db)], capsys)
    assert code == 2 and "--all compare the models of sweeps" in err
    # the bake-off reads the series' spread beside the newest run of it
    code, md, _ = _run(["bakeoff", bakeoff.sweep, "--db", str(bakeoff.db), "--load", runs[-1]], capsys)
    assert code == 0 and "steady: p95 spread" in md and runs[0] in md
    code, _, err = _run(["load", "--project", str(bakeoff.project), "--db", str(bakeoff.db), "-m", "steady",
                         "--rate", "8", "--repeat", "2"], capsys)
    assert code == 2 and "--every 4h or --at 09:00,14:00" in err


def test_runs_started_apart_join_a_named_series(bakeoff: Bakeoff, capsys: pytest.CaptureFixture[str]) -> None:
    """What a cron line or a systemd timer does: each start its own process, the same --series name."""
    capsys.readouterr()
    ids = []
    for _ in range(2):
        code, out, err = _run(["load", "--project", str(bakeoff.project), "--db", str(bakeoff.db), "-m", "strong",
                               "--rate", "8", "--duration", "0.4s", "--series", "nightly", "--quiet"], capsys)
        assert code == 0, err
        ids.append(_run_id(out))
    code, js, _ = _run(["compare", "nightly", "--db", str(bakeoff.db), "--json"], capsys)
    assert code == 0 and [r["run_id"] for r in json.loads(js)["runs"]] == ids


def test_the_results_view_frontier_reads_p95_at_the_target_load(bakeoff: Bakeoff) -> None:
    from arenatui.tui.results.data import read_board as load_board

    view = load_board(bakeoff.db, bakeoff.sweep)
    assert view.at_load_target == "8/s (target_rate)"
    assert set(view.at_load) == {"steady", "strong"}  # shy was never load-tested: not on this chart
    p95, _front = view.at_load["steady"]
    assert p95 > 0
    # 1.5 s at 8/s answers about a dozen requests: a p95 on so few is not evidence, so no point is the front's
    assert not any(front for _, front in view.at_load.values())


def test_one_candidate_or_one_answering_says_what_is_true(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One candidate has nothing to be compared with (not "fewer than two answered"); of two, one that answered
    nothing leaves nothing to compare, and the page says which answered."""
    sim = {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0}
    project = tmp_path / "p.toml"
    project.write_text(tomli_w.dumps({
        "project": {"name": "few"}, "run": {"max_attempts": 1, "seed": 3},
        "models": [{"key": "solo", "provider": "sim", "sim": {**sim, "accuracy": 0.8}},
                   {"key": "down", "provider": "sim", "sim": {**sim, "transient_rate": 1.0}}],
        "cases": [{"id": f"c{i}", "input": f"q{i}", "expected": "yes"} for i in range(8)]}), encoding="utf-8")
    db = str(tmp_path / "r.db")
    assert main(["evaluate", "--project", str(project), "--db", db, "--quiet", "--no-report", "--models", "solo"]) == 0
    code, md, _ = _run(["bakeoff", "last", "--db", db], capsys)
    assert code == 0 and "One candidate: nothing to compare." in md and "Fewer than two" not in md
    assert "| solo | contender | the only candidate: nothing to compare it with; no terms recorded: ask the " \
        "provider; not load-tested at the target |" in md
    # nothing load-tested and no terms written (the demo's case): a sentence each, not tables of dashes
    assert "No candidate was load-tested: run each at the production rate" in md and "| solo | - |" not in md
    assert "No terms recorded for solo (terms = {...} on each \\[\\[models\\]\\] table)" in md
    assert "| solo | retention" not in md
    assert main(["evaluate", "--project", str(project), "--db", db, "--quiet", "--no-report"]) in (0, 1)
    capsys.readouterr()
    code, html, _ = _run(["bakeoff", "last", "--db", db, "-f", "html"], capsys)
    assert code == 0 and "Fewer than two of the 2 candidates have scored answers (solo): nothing to compare." in html


def test_last_is_the_newest_sweep_and_the_page_reads_best_first(bakeoff: Bakeoff,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A new user's walk: the load runs come after the sweep, so 'last' (the newest run) is a load run; a bake-off
    and a report beside load runs take it as the newest sweep. Pairs read best first, as the leaderboard lists
    them; requirements read as the project file has them; each term's verdict stands beside it."""
    capsys.readouterr()
    code, js, err = _run(["bakeoff", "last", "--db", str(bakeoff.db), "-f", "json"], capsys)
    assert code == 0, err
    page = json.loads(js)
    assert page["run"]["run_id"] == bakeoff.sweep
    place = {m["model"]: i for i, m in enumerate(page["margin"]["leaderboard"])}
    assert all(place[p["a"]] < place[p["b"]] for p in page["margin"]["pairs"]), page["margin"]["pairs"]
    code, md, err = _run(["bakeoff", "last", "--db", str(bakeoff.db)], capsys)
    assert f"The decision is saved with run {bakeoff.sweep} (arena bakeoff --show {bakeoff.sweep})." in err
    assert "max_retention_days = 30," in md and "30.0" not in md and 'regions = \\["eu"\\]' in md
    assert "| strong | region | FAILS | us | regions = eu |" in md
    assert "\n\n\n" not in md  # no double blank lines between sections
    code, rep, err = _run(["report", "last", "--db", str(bakeoff.db), "--load", bakeoff.loads["steady"], "-f",
                           "json"], capsys)
    assert code == 0 and json.loads(rep)["run"]["run_id"] == bakeoff.sweep, err


def test_two_load_runs_of_different_models_keep_the_model_at_80_columns(
        bakeoff: Bakeoff, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    capsys.readouterr()
    code, out, err = _run(["compare", bakeoff.loads["steady"], bakeoff.loads["strong"], "--db", str(bakeoff.db)],
                          capsys)
    assert code == 0, err
    assert all(len(line) <= 80 for line in out.splitlines()), out
    for model in ("steady", "strong"):
        row = next(line for line in out.splitlines() if bakeoff.loads[model] in line)
        assert f" {model} " in row, out
    assert "No spread: the runs loaded different models (steady, strong)." in out


def test_a_terminal_gets_the_page_rendered_and_fitted_a_pipe_the_markdown(
        bakeoff: Bakeoff, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    capsys.readouterr()
    code, piped, _ = _run(["bakeoff", bakeoff.sweep, "--db", str(bakeoff.db)], capsys)
    assert code == 0 and "|---|" in piped and piped.startswith("# Bake-off")  # scripts read this, unchanged
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, shown, _ = _run(["bakeoff", bakeoff.sweep, "--db", str(bakeoff.db)], capsys)
    text = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert code == 0 and "\x1b]8" not in shown  # no hyperlinks: the page quotes providers' terms
    assert "|---|" not in text and "# Bake-off" not in text and "Bake-off: bakeoff-e2e" in text
    assert max(len(line) for line in text.splitlines()) <= 80, text
    said = " ".join(text.split())
    assert "strong decision eliminated reasons terms: region is us" in said, text  # a narrow table: a block a row
    assert "max_tokens differs" in said  # Markdown's escapes read back

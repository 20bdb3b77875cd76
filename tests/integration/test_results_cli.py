"""`arena compare`, `report`, `export` and the evaluate summary on a stored simulated run with known differences.

strong (accuracy 0.95) and weak (0.45) are clearly separated; weak and twin (same accuracy) are not.
throttled errors on about half its calls (transient, one attempt): its quality is over what it answered.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
from pathlib import Path

import pytest

from arenatui.cli import main
from arenatui.store import Store

SECRET = "hunter2-secret"


def _project(name: str = "known", seed: int = 5, n_cases: int = 80) -> str:
    sim = "base_latency_s = 0.0, per_token_s = 0.0, jitter = 0.0"
    lines = [f'[project]\nname = "{name}"\n', f"[run]\nconcurrency = 16\nseed = {seed}\nmax_attempts = 1\n"]
    for key, acc, extra in (("strong", 0.95, ""), ("weak", 0.45, ""), ("twin", 0.45, ""),
                            ("throttled", 0.7, ", transient_rate = 0.5")):
        lines.append(f'[[models]]\nkey = "{key}"\nprovider = "sim"\nmodel = "{key}"\nprice_in_per_mtok = 1.0\n'
                     f'price_out_per_mtok = 2.0\nsim = {{ {sim}, accuracy = {acc}{extra} }}\n')
    # a header and a base URL that carry secrets: no report or export may show them
    lines[2] = lines[2].replace('price_in', f'headers = {{ X-Team-Token = "{SECRET}" }}\n'
                                f'base_url = "http://user:{SECRET}@127.0.0.1:9/v1?key={SECRET}"\nprice_in')
    for j in range(n_cases):
        stratum = ("easy", "hard")[j % 2]
        sealed = "\nsealed = true" if j >= n_cases - 8 else ""
        lines.append(f'[[cases]]\nid = "c{j:03d}"\ninput = "question {j}"\nexpected = "yes"\nstratum = "{stratum}"\n'
                     f'tags = ["t{j % 3}"]{sealed}\n')
    return "\n".join(lines)


def _evaluate(tmp: Path, db: Path, capsys: pytest.CaptureFixture[str], *extra: str, name: str = "known",
              seed: int = 5) -> tuple[int, str, str]:
    proj = tmp / f"{name}-{seed}.toml"
    proj.write_text(_project(name, seed), encoding="utf-8")
    code = main(["evaluate", "--project", str(proj), "--db", str(db), "--quiet", *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def run_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    db = tmp_path / "r.db"
    code, out, err = _evaluate(tmp_path, db, capsys, "--fail-on-error", "1")
    assert code == 0, err
    run_id = re.search(r"Run id: (\S+)", out).group(1)  # type: ignore[union-attr]
    return db, run_id


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_paragraph(err: str) -> str:
    # a line naming the run 'last' chose may come first (issue 37): the error is the paragraph after it
    text = re.sub(r"^last = run .*\n", "", err).strip()
    assert text.startswith("error:") and "Traceback" not in err and "\n\n" not in text, err
    return " ".join(text.split())


def test_evaluate_says_how_many_calls_errored_and_fails_on_error(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    code, out, err = _evaluate(tmp_path, db, capsys, "--no-report", "--fail-on-error", "0.05")
    m = re.search(r"Errored: (\d+) of 320 calls \(transient \d+\); by model: throttled \d+\.", out)
    assert m, out
    # issue 22 item 7: why they errored, not only the class: the model's most common message, one line
    said = " ".join(out.split())  # the line wraps at the console's width
    assert f"throttled, most often ({m.group(1)}× transient): simulated 503 from throttled: overloaded" in said, out
    assert code == 1 and "more than --fail-on-error 0.05 allows" in err
    code, out, err = _evaluate(tmp_path, db, capsys, "--no-report", "--fail-on-error", "0.5")
    assert code == 0, err


def test_evaluate_fails_by_default_when_a_model_errored_on_every_call(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    proj = tmp_path / "dead.toml"
    proj.write_text('[run]\nmax_attempts = 1\n'
                    '[[models]]\nkey = "ok"\nprovider = "sim"\nsim = { base_latency_s = 0.0 }\n'
                    '[[models]]\nkey = "dead"\nprovider = "sim"\nsim = { base_latency_s = 0.0, transient_rate = 1.0 }\n'
                    '[[cases]]\nid = "a"\ninput = "x"\nexpected = "y"\n'
                    '[[cases]]\nid = "b"\ninput = "x"\nexpected = "y"\n', encoding="utf-8")
    code, out, err = _run(capsys, "evaluate", "--project", str(proj), "--db", str(tmp_path / "d.db"), "--quiet",
                          "--no-report")
    assert code == 1
    assert "Errored: 2 of 4 calls (transient 2)" in out
    assert "every call of dead errored" in err


def test_leaderboard_scores_answered_calls_and_shows_coverage(run_db: tuple[Path, str],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id = run_db
    code, out, _ = _run(capsys, "report", run_id, "--format", "json", "--db", str(db))
    assert code == 0
    rep = json.loads(out)
    rows = {r["model"]: r for r in rep["leaderboard"]}
    t = rows["throttled"]
    assert 0.3 < t["coverage"] < 0.7 and t["errors"].keys() == {"transient"}
    assert t["quality"]["estimate"] > 0.5  # accuracy 0.7 over answered calls, not dragged down by errors
    assert rows["strong"]["coverage"] == 1.0 and rows["strong"]["sealed"]["n"] == 8
    assert rows["strong"]["quality"]["n"] == 72


def test_compare_separates_the_clear_pair_and_not_the_twins(run_db: tuple[Path, str],
                                                            capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    db, _ = run_db
    code, out, _ = _run(capsys, "compare", "last", "--a", "strong", "--b", "weak", "--db", str(db))
    assert code == 0
    assert re.search(r"strong is better by 0\.\d{3} \(95% CI 0\.\d{3} to 0\.\d{3}\)", out), out
    code, out, _ = _run(capsys, "compare", "last", "--a", "weak", "--b", "twin", "--json", "--db", str(db))
    res = json.loads(out)
    assert res["decided"] is False and res["diff"]["n"] == 72
    assert res["verdict"].startswith("no ordering established on this evidence (72 cases)")
    assert [g["group"] for g in res["groups"]] == ["easy", "hard", "t0", "t1", "t2"]
    assert all(d["score_a"] != d["score_b"] for d in res["disagreements"])
    code, out, _ = _run(capsys, "compare", "last", "--db", str(db))  # default: the top two
    # into a pipe the histogram (a picture for people) is left out, each table a block of tab-separated columns
    assert out.startswith("Run ") and "strong −" in out and "resampled differences" not in out
    assert "\n\ngroup\tkind\tn\t" in out and not any(ch in out for ch in "│─┃")
    monkeypatch.setenv("COLUMNS", "100")  # a width asked for: the tables and the histogram, as on a terminal
    code, out, _ = _run(capsys, "compare", "last", "--db", str(db))
    assert "resampled differences" in out and "│" in out


def test_compare_all_pairs_with_holm(run_db: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id = run_db
    code, out, _ = _run(capsys, "compare", run_id, "--all", "--json", "--db", str(db))
    pairs = {(p["a"], p["b"]): p for p in json.loads(out)["pairs"]}
    assert len(pairs) == 6
    clear = pairs.get(("strong", "weak")) or pairs[("weak", "strong")]
    assert clear["decided_holm"] and clear["better_holm"] == "strong"
    twins = pairs.get(("weak", "twin")) or pairs[("twin", "weak")]
    assert not twins["decided_holm"]
    assert all(p["p_holm"] >= p["p_value"] for p in pairs.values())
    code, out, _ = _run(capsys, "compare", run_id, "--all", "--db", str(db))
    # into a pipe: tab-separated columns, one pair a line (issue 37)
    head, *rows = out.splitlines()
    assert code == 0 and head.split("\t")[:2] == ["A", "B"] and "Holm p" in head.split("\t")
    assert sum(len(r.split("\t")) == len(head.split("\t")) for r in rows) == 6


def test_two_runs_of_one_project_model_by_model(run_db: tuple[Path, str], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    db, first = run_db
    code, out, err = _evaluate(tmp_path, db, capsys, "--fail-on-error", "1", seed=6)
    assert code == 0, err
    code, out, _ = _run(capsys, "compare", first, "last", "--json", "--db", str(db))
    assert code == 0
    res = json.loads(out)
    assert res["old"] == first and {m["model"] for m in res["models"]} == {"strong", "weak", "twin", "throttled"}
    assert all(m["diff"]["n"] > 0 for m in res["models"])


@pytest.mark.parametrize(("args", "words"), [
    (["compare", "nope"], ["no run 'nope'", "arena runs"]),
    (["compare", "last", "--a", "strnog", "--b", "weak"], ["--a: no model 'strnog'", "did you mean 'strong'?"]),
    (["compare", "last", "--a", "strong"], ["pass both --a and --b"]),
    (["compare", "last", "--all", "--a", "strong", "--b", "weak"], ["--all compares every pair"]),
    (["report", "nope"], ["no run 'nope'"]),
    (["export", "nope"], ["no run 'nope'"]),
])
def test_bad_input_is_one_paragraph_exit_2(run_db: tuple[Path, str], capsys: pytest.CaptureFixture[str],
                                           args: list[str], words: list[str]) -> None:
    db, _ = run_db
    code, out, err = _run(capsys, *args, "--db", str(db))
    assert code == 2 and out == ""
    msg = _one_paragraph(err)
    for w in words:
        assert w in msg


def test_two_runs_of_different_projects_is_bad_input(run_db: tuple[Path, str], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    db, first = run_db
    assert _evaluate(tmp_path, db, capsys, "--fail-on-error", "1", name="other")[0] == 0
    code, _, err = _run(capsys, "compare", first, "last", "--db", str(db))
    assert code == 2
    msg = _one_paragraph(err)
    assert "of project 'known'" in msg and "'other'" in msg and "within one project" in msg


def test_last_with_no_runs_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from arenatui.store import Store

    Store(tmp_path / "empty.db").close()
    code, _, err = _run(capsys, "report", "last", "--db", str(tmp_path / "empty.db"))
    assert code == 2 and "no runs stored" in _one_paragraph(err)


@pytest.mark.parametrize("verb", [["runs"], ["report", "last"], ["export", "last"], ["compare", "last"],
                                  ["tune", "--show", "last"], ["tune", "--show", "last", "-v"], ["browse"],
                                  ["browse", "last"], ["bakeoff", "--show", "last"], ["bakeoff", "last"],
                                  ["load", "--show", "last"]])
def test_a_reader_given_a_database_that_does_not_exist_says_so_and_creates_nothing(
        verb: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENATUI_HOME", str(tmp_path / "home"))
    before = sorted(tmp_path.rglob("*"))
    code, out, err = _run(capsys, *verb, "--db", str(tmp_path / "typo.db"))
    msg = _one_paragraph(err)
    assert code == 2 and out == "", msg
    assert msg.startswith(f"error: no such database: '{tmp_path / 'typo.db'}' does not exist"), msg
    assert str(tmp_path / "home" / "data" / "arena.db") in msg and "arena runs --db" in msg
    assert sorted(tmp_path.rglob("*")) == before  # no typo.db, no -wal, no data directory


def test_runs_on_a_fresh_install_says_nothing_is_stored_and_creates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENATUI_HOME", str(tmp_path / "home"))
    code, out, _ = _run(capsys, "runs")
    assert code == 0 and "No runs stored yet" in out and "arena demo" in out
    code, _, err = _run(capsys, "report", "last")
    assert code == 2 and "no runs stored yet: there is no results database at" in _one_paragraph(err)
    assert not (tmp_path / "home").exists()


def test_report_to_a_terminal_is_rendered_and_fitted_and_piped_stays_markdown(
        run_db: tuple[Path, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    db, run_id = run_db
    code, piped, _ = _run(capsys, "report", run_id, "--db", str(db))
    assert code == 0 and piped.startswith("# Decision report") and "|---|" in piped  # what scripts read
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, shown, _ = _run(capsys, "report", run_id, "--db", str(db))
    text = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert code == 0 and "|---|" not in text and "# Decision report" not in text, text
    assert max(len(line) for line in text.splitlines()) <= 80, text
    said = " ".join(text.split())
    assert "Decision report: known" in said and "strong is better by" in said
    assert "Left out at 80 columns: " in said and f"(arena report {run_id} -o FILE, or piped, has every column)" \
        in said
    assert "┃ # ┃ model" in text  # the leaderboard as a table, its first columns kept


@pytest.mark.parametrize("fmt", ["md", "json", "html"])
def test_report_formats_carry_the_decision_and_no_secret(run_db: tuple[Path, str], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    db, run_id = run_db
    target = tmp_path / f"report.{fmt}"
    code, _, err = _run(capsys, "report", run_id, "--format", fmt, "-o", str(target), "--db", str(db))
    assert code == 0 and f"wrote {target}" in err
    text = target.read_text(encoding="utf-8")
    assert SECRET not in text and "X-Team-Token" not in text
    assert "strong is better by" in text
    assert "simulated 503 from throttled" in text  # why its calls errored (issue 22 item 7)
    assert "c079" not in text  # a sealed case's id: only aggregates
    if fmt == "html":
        assert text.startswith("<!doctype html>") and "<svg" in text
        assert not re.search(r"<(script|link|img|iframe)\b", text)  # self-contained: nothing fetched
        assert "http://" not in text.replace("http://127.0.0.1:9/v1", "")
    if fmt == "md":
        assert "## Sealed cases" in text and "| strong |" in text
    if fmt == "json":
        rep = json.loads(text)
        model = next(m for m in rep["settings"]["models"] if m["key"] == "strong")
        assert model["base_url"] == "http://127.0.0.1:9/v1" and "headers" not in model


@pytest.mark.parametrize("fmt", ["md", "json", "html"])
def test_report_lists_each_models_max_tokens_and_timeout_with_evidence(run_db: tuple[Path, str], tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      fmt: str) -> None:
    """Issue 27 item 3: the report lists the max_tokens and timeout_s recommendations `arena tune --show` prints,
    each with its evidence, and "not enough evidence" for a model with too few passing answers."""
    import html

    from arenatui.commands.tune_budgets import budgets_for_run

    db, run_id = run_db
    budgets = budgets_for_run(run_id, db)
    target = tmp_path / f"report.{fmt}"
    code, _, err = _run(capsys, "report", run_id, "--format", fmt, "-o", str(target), "--db", str(db))
    assert code == 0, err
    text = target.read_text(encoding="utf-8")
    recs = [*budgets.max_tokens.values(), *budgets.timeouts.values()]
    assert {r.model_key for r in recs} == {"strong", "weak", "twin", "throttled"}
    assert {r.action for r in budgets.max_tokens.values()} >= {"none", "keep"}  # the run has both kinds
    if fmt == "json":
        got = json.loads(text)["budgets"]["models"]
        for r in recs:
            assert got[r.model_key][r.setting]["verdict"] == r.verdict
            assert got[r.model_key][r.setting]["detail"] == list(r.detail)
        return
    text = html.unescape(text) if fmt == "html" else text.replace("\\", "")
    assert "max_tokens and timeout_s" in text
    for r in recs:
        assert r.verdict in text, r.verdict
        for line in r.detail:
            assert line in text
    assert "not enough evidence" in text


def test_report_escapes_untrusted_names_in_html_and_markdown(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    proj = tmp_path / "x.toml"
    proj.write_text('[project]\nname = "<b>evil|[x](y)\\u001b[31m"\n[[models]]\nkey = "m"\nprovider = "sim"\n'
                    'sim = { base_latency_s = 0.0 }\n[[cases]]\nid = "a"\ninput = "x"\nexpected = "y"\n',
                    encoding="utf-8")
    db = str(tmp_path / "x.db")
    assert main(["evaluate", "--project", str(proj), "--db", db, "--quiet"]) == 0
    capsys.readouterr()
    _, html_out, _ = _run(capsys, "report", "last", "-f", "html", "--db", db)
    assert "<b>evil" not in html_out and "&lt;b&gt;evil" in html_out and "\x1b" not in html_out
    _, md_out, _ = _run(capsys, "report", "last", "-f", "md", "--db", db)
    assert "\\<b>evil\\|\\[x\\](y)" in md_out and "\x1b" not in md_out


def test_export_rows_per_call_and_sealed_cases_as_aggregates(run_db: tuple[Path, str], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id = run_db
    code, out, _ = _run(capsys, "export", run_id, "--db", str(db))
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    calls = [r for r in rows if r["row"] == "call"]
    sealed = [r for r in rows if r["row"] == "sealed_aggregate"]
    with sqlite3.connect(db) as c:
        stored = c.execute("SELECT COUNT(*) FROM results WHERE run_id = ?", (run_id,)).fetchone()[0]
    assert stored == 4 * 80 and len(calls) == 4 * 72
    assert {r["model_key"] for r in sealed} == {"strong", "weak", "twin", "throttled"}
    assert all(r["cases"] == 8 and r["calls"] == 8 for r in sealed)
    with sqlite3.connect(db) as c:  # scored: the sealed cases the score is over (the report says both)
        scored = dict(c.execute("SELECT model_key, COUNT(DISTINCT case_id) FROM results WHERE run_id = ? AND "
                                "CAST(SUBSTR(case_id, 2) AS INTEGER) >= 72 AND status IN ('passed', 'failed') "
                                "GROUP BY model_key", (run_id,)).fetchall())
    assert {r["model_key"]: r["scored"] for r in sealed} == {r["model_key"]: scored.get(r["model_key"], 0)
                                                             for r in sealed}
    assert any(r["scored"] < r["cases"] for r in sealed)  # the throttled model's errors: not scored, still cases
    assert not any(int(r["case_id"][1:]) >= 72 for r in calls)
    assert SECRET not in out
    target = tmp_path / "calls.csv"
    code, _, err = _run(capsys, "export", "last", "--format", "csv", "-o", str(target), "--db", str(db))
    assert code == 0 and f"wrote {4 * 72 + 4 + 1 + 4} rows" in err  # + the run's spend + one leaderboard row a model
    table = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
    assert len(table) == 4 * 72 + 4 + 1 + 4
    assert {r["row"] for r in table} == {"call", "sealed_aggregate", "spend_total", "leaderboard"}
    board = [r for r in rows if r["row"] == "leaderboard"]
    assert [r["rank"] for r in board if r["rank"]] == list(range(1, len([r for r in board if r["rank"]]) + 1))
    (total,) = [r for r in rows if r["row"] == "spend_total"]
    assert total["judge_cost"] == 0 and total["cost"] == pytest.approx(total["candidate_cost"])
    first = table[0]
    assert first["status"] in ("passed", "failed", "errored") and first["stratum"] in ("easy", "hard")


def test_resume_retry_errored_runs_errored_calls_again_one_row_per_call(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    # A provider that serves one request at a time: at concurrency 8 with one attempt, most calls give up on 429s.
    proj = tmp_path / "ceiling.toml"
    proj.write_text('[run]\nmax_attempts = 1\n[[models]]\nkey = "one-at-a-time"\nprovider = "sim"\n'
                    'price_in_per_mtok = 1.0\nsim = { base_latency_s = 0.01, per_token_s = 0.0, max_concurrent = 1 }\n'
                    + "".join(f'[[cases]]\nid = "c{j}"\ninput = "x"\nexpected = "y"\n' for j in range(16)),
                    encoding="utf-8")
    db = tmp_path / "r.db"
    code, out, _ = _run(capsys, "evaluate", "--project", str(proj), "--db", str(db), "--quiet", "-c", "8",
                        "--fail-on-error", "1")
    assert code == 0
    run_id = re.search(r"Run id: (\S+)", out).group(1)  # type: ignore[union-attr]
    with sqlite3.connect(db) as c:
        errored, spent = c.execute("SELECT SUM(status = 'errored'), SUM(attempts) FROM results").fetchone()
    assert errored > 0, "the ceiling should have refused some calls"
    code, out, err = _run(capsys, "evaluate", "--resume", run_id, "--retry-errored", "--db", str(db), "--quiet",
                          "-c", "1")
    assert code == 0, err
    with sqlite3.connect(db) as c:
        rows, left, attempts = c.execute(
            "SELECT COUNT(*), SUM(status = 'errored'), SUM(attempts) FROM results WHERE run_id = ?",
            (run_id,)).fetchone()
    assert rows == 16 and left == 0
    assert attempts == spent + errored  # the refused attempts stay counted beside the new ones
    assert "Errored:" not in out


def test_retry_errored_needs_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "evaluate", "--project", str(tmp_path), "--retry-errored", "--db",
                        str(tmp_path / "r.db"))
    assert code == 2 and "pass --resume" in _one_paragraph(err)


@pytest.mark.parametrize("keep", [False, True])
def test_sealed_outputs_are_stored_as_hash_and_length_unless_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  keep: bool) -> None:
    proj = tmp_path / "sealed.toml"
    proj.write_text(f"[run]\nkeep_sealed_outputs = {str(keep).lower()}\n"
                    '[[models]]\nkey = "m"\nprovider = "sim"\nsim = { base_latency_s = 0.0, accuracy = 1.0 }\n'
                    '[[cases]]\nid = "open"\ninput = "x"\nexpected = "yes"\n'
                    '[[cases]]\nid = "held"\ninput = "x"\nexpected = "yes"\nsealed = true\n', encoding="utf-8")
    db = tmp_path / "s.db"
    assert main(["evaluate", "--project", str(proj), "--db", str(db), "--quiet"]) == 0
    capsys.readouterr()
    with sqlite3.connect(db) as c:
        rows = dict(c.execute("SELECT case_id, output FROM results").fetchall())
        scores = dict(c.execute("SELECT case_id, score FROM results").fetchall())
    assert scores == {"open": 1.0, "held": 1.0}  # the score is kept either way
    if keep:
        assert rows["held"] == rows["open"]
    else:
        assert re.fullmatch(r"\[sealed output: sha256 [0-9a-f]{64}, \d+ characters\]", rows["held"]), rows["held"]
        assert rows["open"] and not rows["open"].startswith("[sealed")


def test_a_run_with_nothing_stored_still_reports_and_exports(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from arenatui.store import Store

    db = tmp_path / "empty.db"
    cfg = {"project": {"name": "empty"}, "cases": [{"id": "c1", "input": "x", "expected": "y"}],
           "models": [{"key": "a", "provider": "sim", "model": "a"}, {"key": "b", "provider": "sim", "model": "b"}]}
    with Store(db) as s:
        s.create_run("empty", None, cfg, {}, 2)
    for fmt in ("md", "json", "html"):
        code, out, _ = _run(capsys, "report", "last", "-f", fmt, "--db", str(db))
        assert code == 0 and out
    assert json.loads(_run(capsys, "report", "last", "-f", "json", "--db", str(db))[1])["pairs"] == []
    assert _run(capsys, "export", "last", "--db", str(db))[:2] == (0, "")
    code, _, err = _run(capsys, "compare", "last", "--db", str(db))
    assert code == 2 and "fewer than two models with answered calls" in _one_paragraph(err)


def test_compare_draws_the_results_views_histogram(run_db: tuple[Path, str], capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """One histogram for the CLI and the console (arenatui.present.charts): zero and the interval marked on its axis
    (drawn for a terminal, or a width asked for; not into a pipe)."""
    db, _ = run_db
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = _run(capsys, "compare", "last", "--a", "weak", "--b", "twin", "--db", str(db))
    assert code == 0
    axis = next(line for line in out.splitlines() if "┼" in line)
    assert "[" in axis and "]" in axis


def test_last_is_the_newest_finished_run_of_the_kind_read_and_says_which(
        run_db: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 37 item 15a: a console run started later than a finished sweep (or another job's run on a shared
    database) made `compare last --all` say "Fewer than two models answered" and `tune --show last` print a running
    sweep's "no readout". 'last' is the newest run of the kind the command reads that is not still running, named
    on stderr's first line."""
    import subprocess
    import sys

    db, run_id = run_db
    # a run at work in another process (its command line says arena, as a live holder's does): started later
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "arena"])
    try:
        _last_says_which(db, run_id, capsys, holder.pid)
    finally:
        holder.kill()
        holder.wait()


def _last_says_which(db: Path, run_id: str, capsys: pytest.CaptureFixture[str], pid: int) -> None:
    with Store(db) as store:
        rec = store.get_run(run_id)
        busy = store.create_run("other", None, {"models": [], "cases": []}, {}, 10)
        store.conn.execute("UPDATE runs SET pid = ? WHERE run_id = ?", (pid, busy))
    for args in (["compare", "last", "--all"], ["report", "last", "-f", "json"], ["tune", "--show", "last"],
                 ["export", "last"]):
        code, out, err = _run(capsys, *args, "--db", str(db))
        assert code == 0, (args, err)
        first = err.splitlines()[0]
        assert first.startswith(f"last = run {run_id} (") and "finished" in first, (args, err)
        assert busy not in out and "Fewer than two models answered" not in out
    assert rec.status == "finished"
    with Store(db) as store:  # nothing finished of that kind: the running one, said to be running
        store.conn.execute("UPDATE runs SET status = 'running', pid = ? WHERE run_id = ?", (pid, run_id))
    code, _out, err = _run(capsys, "export", "last", "--db", str(db))
    assert code == 0 and "still running" in err.splitlines()[0] and busy in err.splitlines()[0]


def test_report_at_80_columns_compares_every_model_in_the_strata_table(run_db: tuple[Path, str]) -> None:
    """Issue 37 item 8: `arena report last` at 80 columns kept one model in the strata table (the others "left
    out"); at a terminal each cell is the score alone, so the table meant for comparing models keeps them all."""
    import io

    from rich.console import Console

    from arenatui.commands.report import build_report, render
    from arenatui.commands.report_doc import report_document
    from arenatui.present.terminal import print_document

    db, run_id = run_db
    with Store(db, read_only=True) as store:
        rep = build_report(store, run_id)
    assert rep["strata"], "the fixture's project has strata"
    buf = io.StringIO()
    print_document(Console(file=buf, width=80, color_system=None), report_document(rep, terminal=True))
    text = buf.getvalue()
    strata = text[text.index("Strata and tags"):text.index("Sealed cases")]
    table = strata[strata.index("group"):]
    for m in rep["leaderboard"]:
        assert m["model"] in table, (m["model"], strata)
    assert "Left out" not in strata, strata
    assert "95% CI" in render(rep, "md") or "(" in render(rep, "md")  # the file keeps the intervals

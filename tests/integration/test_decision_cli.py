"""`arena compare OLD NEW --fail-on-regression` (per stratum, Holm), `arena plan` (power before a run) and the
coverage-fair leaderboard in `report --format json`, on stored simulated runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from arenatui.cli import main


def _project(path: Path, easy: float, hard: float, n_cases: int = 160) -> Path:
    sim = "base_latency_s = 0.0, per_token_s = 0.0, jitter = 0.0"
    text = ['[project]\nname = "gate"\n', "[run]\nconcurrency = 16\nseed = 3\nmax_attempts = 1\n",
            f'[[models]]\nkey = "m"\nprovider = "sim"\nmodel = "m"\n'
            f'sim = {{ {sim}, strata_accuracy = {{ easy = {easy}, hard = {hard} }} }}\n',
            f'[[models]]\nkey = "other"\nprovider = "sim"\nmodel = "o"\nsim = {{ {sim}, accuracy = 0.6 }}\n']
    text += [f'[[cases]]\nid = "c{j:03d}"\ninput = "q{j}"\nexpected = "yes"\nstratum = "{("easy", "hard")[j % 2]}"\n'
             for j in range(n_cases)]
    path.write_text("\n".join(text), encoding="utf-8")
    return path


def _evaluate(capsys: pytest.CaptureFixture[str], project: Path, db: Path) -> str:
    assert main(["evaluate", "--project", str(project), "--db", str(db), "--quiet", "--no-report"]) == 0
    return re.search(r"Run id: (\S+)", capsys.readouterr().out).group(1)  # type: ignore[union-attr]


def test_a_stratum_regression_fails_the_gate_even_when_the_aggregate_improved(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    old = _evaluate(capsys, _project(tmp_path / "v1.toml", easy=0.3, hard=0.95), db)
    new = _evaluate(capsys, _project(tmp_path / "v2.toml", easy=1.0, hard=0.5), db)
    assert main(["compare", old, new, "--db", str(db), "--json"]) == 0  # without the flag: a report, exit 0
    data = json.loads(capsys.readouterr().out)
    (m,) = [x for x in data["models"] if x["model"] == "m"]
    assert m["diff"]["estimate"] > 0 and not m["regression"]  # the aggregate improved
    strata = {s["stratum"]: s for s in m["strata"]}
    assert strata["hard"]["regression"] and strata["hard"]["decided_holm"] and not strata["easy"]["regression"]
    assert data["regressions"] and data["regressions"][0].startswith("m in stratum hard: ")
    code = main(["compare", old, new, "--db", str(db), "--fail-on-regression"])
    out = capsys.readouterr()
    assert code == 1 and "Regression: m in stratum hard" in out.err and "stratum hard" in out.out
    assert main(["compare", new, "--db", str(db), "--fail-on-regression"]) == 2  # one run: nothing to gate
    assert "pass OLD and NEW" in capsys.readouterr().err


def test_plan_states_the_detectable_difference_and_the_cases_a_target_needs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path / "p.toml", 0.8, 0.8, n_cases=400)
    assert main(["plan", "--project", str(project), "--mde", "0.05", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cases"] == 400 and data["baseline"] == 0.8 and 0.07 < data["mde"] < 0.076
    assert 850 < data["cases_for_target"] < 1000
    assert main(["plan", "--project", str(project), "--baseline", "0.9", "--limit", "100"]) == 0
    out = capsys.readouterr().out
    assert "100 working cases" in out and "detects a difference of about 0.0" in out
    assert main(["plan", "--project", str(tmp_path / "missing.toml")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_plan_without_a_project_marks_impossible_cells_and_reads_a_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a baseline and a difference are enough (issue 35)
    assert main(["plan", "--mde", "0.05", "--baseline", "0.8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert 850 < data["cases_for_target"] < 1000 and "independent" in data["assumption"]
    # a difference that would push accuracy above 1 is marked: p = 0.9 with 50 cases, p = 0.95 with 50 and 100
    assert main(["plan", "--table", "--json"]) == 0
    table = {row["cases"]: row["impossible"] for row in json.loads(capsys.readouterr().out)["table"]}
    assert table[50] == ["0.9", "0.95"] and table[100] == ["0.95"] and table[200] == []
    assert main(["plan", "--table"]) == 0 and "× (0.061)" in capsys.readouterr().out
    # three trials: the plan says the range trials can give; after a run it reads the observed spread
    project = _project(tmp_path / "p.toml", 0.8, 0.8, n_cases=200)
    assert main(["plan", "--project", str(project), "--trials", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["models"] == ["m", "other"] and data["mde_all_noise_within_cases"] == pytest.approx(
        data["mde"] / 3 ** 0.5)
    db = tmp_path / "r.db"
    run = _evaluate(capsys, project, db)
    assert main(["plan", "--project", str(project), "--run", run, "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run"] == run and 0 < data["observed_sd"] < 1 and f"observed in run {run}" in data["assumption"]
    assert "mde_all_noise_within_cases" not in data and data["mde"] == pytest.approx(
        2.8016 * data["observed_sd"] / 200 ** 0.5, rel=1e-3)


def test_report_json_carries_the_coverage_fair_ranking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    run = _evaluate(capsys, _project(tmp_path / "v1.toml", easy=0.9, hard=0.5), db)
    assert main(["report", run, "--db", str(db), "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    board = rep["leaderboard"]
    assert [r["rank"] for r in board] == [1, 2]
    assert board[0]["score"]["n"] == board[1]["score"]["n"] == 160  # n common cases
    assert board[0]["score"]["estimate"] >= board[1]["score"]["estimate"]
    assert all(r["unranked"] is None for r in board)
    assert main(["report", run, "--db", str(db)]) == 0
    md = capsys.readouterr().out
    # the report's leaderboard has the console's and the headless table's columns (figures.LEADERBOARD)
    from arenatui.present.columns import LEADERBOARD

    assert "| # | " + " | ".join(c.title for c in LEADERBOARD) + " |" in md
    assert "every ranked model has scores for" in md


def test_clusters_and_strata_weights_reach_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path / "w.toml", easy=0.9, hard=0.5)
    text = project.read_text(encoding="utf-8").replace('stratum = "easy"\n', 'stratum = "easy"\ncluster = "p1"\n', 20)
    project.write_text(text + "\n[strata]\nweights = { easy = 0.9, hard = 0.1 }\n", encoding="utf-8")
    db = tmp_path / "r.db"
    run = _evaluate(capsys, project, db)
    assert main(["report", run, "--db", str(db), "--format", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    # 20 easy cases share cluster p1, every other case is its own: 160 − 20 + 1 clusters
    assert any("Every interval rests on 141 clusters (by cluster)" in n for n in rep["notes"])
    m = next(r for r in rep["leaderboard"] if r["model"] == "m")
    assert m["weighted"]["estimate"] > m["quality"]["estimate"]  # production is mostly easy
    assert main(["report", run, "--db", str(db)]) == 0
    assert "| own | weighted |" in capsys.readouterr().out  # the report's one column beyond figures.LEADERBOARD
    assert main(["compare", run, "--db", str(db), "--cluster-by", "stratum", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["clusters"] == 2
    assert main(["compare", run, "--db", str(db), "--cluster-by", "stratum"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "few clusters (2, under 20): the interval is approximate" in said and "with 1 df" in said
    assert any("few clusters" not in n for n in rep["notes"])  # 141 clusters: no warning in the report
    project.write_text(text + "\n[strata]\nweights = { esay = 1 }\n", encoding="utf-8")
    assert main(["plan", "--project", str(project)]) == 2
    err = capsys.readouterr().err
    assert "strata.weights.esay" in err and "did you mean 'easy'" in err


def test_a_throttled_twins_errors_fall_across_the_file_not_on_its_end(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Two models identical per stratum, the 100 easy cases first; one serves a call at a time and gives up on its
    429s. In case-file order its answers were mostly the early, easy cases; drawn in the seeded order they are a
    fair sample of the file, so its own score is no longer lifted and both are ranked over the common cases."""
    sim = "base_latency_s = 0.002, per_token_s = 0.0, jitter = 0.0, strata_accuracy = { easy = 0.95, hard = 0.5 }"
    text = ['[project]\nname = "twins"\n', "[run]\nconcurrency = 4\nseed = 4\nmax_attempts = 1\n",
            f'[[models]]\nkey = "full"\nprovider = "sim"\nmodel = "f"\nsim = {{ {sim} }}\n',
            f'[[models]]\nkey = "limited"\nprovider = "sim"\nmodel = "l"\nsim = {{ {sim}, max_concurrent = 1 }}\n']
    text += [f'[[cases]]\nid = "c{j:03d}"\ninput = "q{j}"\nexpected = "yes"\n'
             f'stratum = "{"easy" if j < 100 else "hard"}"\n' for j in range(200)]
    project = tmp_path / "twins.toml"
    project.write_text("\n".join(text), encoding="utf-8")
    db = tmp_path / "r.db"
    main(["evaluate", "--project", str(project), "--db", str(db), "--quiet", "--no-report"])
    run = re.search(r"Run id: (\S+)", capsys.readouterr().out).group(1)  # type: ignore[union-attr]
    assert main(["export", run, "--db", str(db)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    answered = [r for r in rows if r["row"] == "call" and r["model_key"] == "limited" and r["status"] != "errored"]
    assert 20 <= len(answered) <= 190, len(answered)  # it did give up on some, and answered some
    easy_share = sum(r["stratum"] == "easy" for r in answered) / len(answered)
    assert 0.25 <= easy_share <= 0.75, (easy_share, len(answered))  # in file order it was ~1.0

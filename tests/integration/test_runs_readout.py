"""Issue 11: the concurrency readout stored with a run shows in `arena runs` (a model's established optimum)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenatui.cli import main
from arenatui.store import Store

PROJECT = """
[project]
name = "runs-readout"
[[models]]
key = "fast"
provider = "sim"
sim = { base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0 }
[[models]]
key = "limited"
provider = "sim"
sim = { base_latency_s = 0.001, per_token_s = 0.0, jitter = 0.0 }
[[cases]]
id = "q"
input = "x"
expected = "x"
"""


def test_runs_names_each_models_optimum(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")  # wide enough that the models column never folds a name
    project = tmp_path / "arena.toml"
    project.write_text(PROJECT)
    db = tmp_path / "r.db"
    assert main(["evaluate", "-p", str(project), "--db", str(db), "--quiet", "--no-report"]) == 0
    with Store(db) as store:
        (run,) = store.list_runs()
        # a fixed readout (a real one depends on this machine's timing), with the counts the verdict reads:
        # limited measured clean at 2 and 3, refused at 4; fast measured at 1 only (still rising: no optimum)
        store.write_tuning_levels(run.run_id, [
            ("limited", 2, 5.0, 40, 8.0, 0.0, 0.0, 0.0, 0, 300.0, 450.0, 1, 0, "", 40, 0, 0, 0, 40, None),
            ("limited", 3, 5.0, 60, 12.0, 0.0, 0.0, 0.0, 0, 310.0, 480.0, 1, 1, "", 60, 0, 0, 0, 60, None),
            ("limited", 4, 2.0, 10, 5.0, 0.67, 0.0, 10.0, 0, 320.0, 480.0, 0, 0, "", 30, 20, 0, 20, 10, None),
            ("fast", 1, 5.0, 60, 12.0, 0.0, 0.0, 0.0, 0, 10.0, 20.0, 1, 1, "", 60, 0, 0, 0, 60, None),
        ])
    capsys.readouterr()
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "limited ≈3" in out and "fast ≈" not in out  # only an established optimum is named
    with Store(db) as store:  # as an older arenatui stored it (no counts): an 'optimum' from 0 answered calls
        store.write_tuning_levels(run.run_id, [
            ("limited", 2, 3.0, 0, 0.0, 0.0, 1.0, 0.0, 30, None, None, 1, 1, "optimum ≈ 2: goodput flat above 2")])
    assert main(["runs", "--db", str(db)]) == 0
    assert "limited ≈" not in capsys.readouterr().out  # re-derived by today's rules: no optimum
    with Store(db) as store:
        store.write_tuning_levels(run.run_id, [
            ("limited", 2, 5.0, 40, 8.0, 0.0, 0.0, 0.0, 0, 300.0, 450.0, 1, 0, "", 40, 0, 0, 0, 40, None),
            ("limited", 3, 5.0, 60, 12.0, 0.0, 0.0, 0.0, 0, 310.0, 480.0, 1, 1, "", 60, 0, 0, 0, 60, None),
            ("limited", 4, 2.0, 10, 5.0, 0.67, 0.0, 10.0, 0, 320.0, 480.0, 0, 0, "", 30, 20, 0, 20, 10, None),
            ("fast", 1, 5.0, 60, 12.0, 0.0, 0.0, 0.0, 0, 10.0, 20.0, 1, 1, "", 60, 0, 0, 0, 60, None),
        ])
    assert main(["tune", "--show", run.run_id, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    # every verdict ends with the setting it belongs in; fast had no cap beside another model: its level was its share
    # of the global slots, and with no 429 nor error the pool held it back, not the provider
    assert "limited: optimum ≈ 3: 429s from 4 → set max_concurrency = 3 for limited" in out
    assert "fast: bounded by its share of the global concurrency (up to 1 at once), not by the provider" in out
    assert "still rising" not in out
    capsys.readouterr()
    assert main(["report", run.run_id, "--format", "md", "--db", str(db)]) == 0
    md = capsys.readouterr().out
    assert "## Concurrency" in md
    assert "| limited | optimum ≈ 3: 429s from 4 → set max_concurrency = 3 for limited |" in md
    assert main(["report", run.run_id, "--format", "html", "--db", str(db)]) == 0
    html = capsys.readouterr().out
    # goodput by level as a picture: levels 2-4 held (4 not measured: pale), 1 never held, the optimum outlined
    svg = html.split("<h3>limited: goodput by level</h3>")[1].split("</svg>")[0]
    assert svg.count("<rect") == 4 and 'stroke="#000"' in svg and "level 4: " in svg and "(not measured)" in svg
    assert '>·</text>' in svg and "429s 67%" in svg
    assert main(["report", run.run_id, "--format", "json", "--db", str(db)]) == 0
    import json

    conc = {c["model"]: c for c in json.loads(capsys.readouterr().out)["concurrency"]}
    assert conc["limited"]["optimum"] == 3 and conc["fast"]["optimum"] is None
    assert conc["fast"]["kind"] == "bounded" and conc["limited"]["setting"] == "set max_concurrency = 3 for limited"

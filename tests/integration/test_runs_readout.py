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
        store.write_tuning_levels(run.run_id, [  # a fixed readout: a real one depends on this machine's timing
            ("limited", 2, 5.0, 40, 8.0, 0.0, 0.0, 0.0, 0, 300.0, 450.0, 1, 0, "optimum ≈ 3: 429s from 4"),
            ("limited", 3, 5.0, 60, 12.0, 0.0, 0.0, 0.0, 0, 310.0, 480.0, 1, 1, "optimum ≈ 3: 429s from 4"),
            ("fast", 1, 5.0, 60, 12.0, 0.0, 0.0, 0.0, 0, 10.0, 20.0, 1, 1, "still rising at 1: try higher"),
        ])
    capsys.readouterr()
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "limited ≈3" in out and "fast ≈" not in out  # only an established optimum is named

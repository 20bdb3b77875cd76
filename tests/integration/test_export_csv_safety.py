"""CSV exports never hand a spreadsheet a live formula: cells starting with = + - @ (tab, CR) get a leading '
(OWASP's advice for CSV injection); `--raw` keeps them as written."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
import tomli_w

from arenatui.cli import main
from arenatui.kernel.text import spreadsheet_cell

EVIL = "=cmd|' /C calc'!A0"


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"])
def test_a_formula_start_gets_a_leading_quote(cell: str) -> None:
    assert spreadsheet_cell(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["", "plain", "1+1", " =1", "'=already"])
def test_other_cells_are_unchanged(cell: str) -> None:
    assert spreadsheet_cell(cell) == cell


def _project(tmp_path: Path) -> Path:
    raw = {"project": {"name": "csv"}, "run": {"seed": 1},
           "models": [{"key": "m", "provider": "sim", "sim": {"base_latency_s": 0.0, "per_token_s": 0.0,
                                                               "accuracy": 1.0, "output_tokens": 3}}],
           "cases": [{"id": EVIL, "input": "q", "expected": "-5"}, {"id": "ok", "input": "q", "expected": "5"}]}
    p = tmp_path / "p.toml"
    p.write_text(tomli_w.dumps(raw), encoding="utf-8")
    return p


def _csv(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, str]]:
    assert main(["export", "last", "--format", "csv", *args]) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_sweep_export_neutralises_formulas_and_raw_keeps_them(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "r.db")
    assert main(["evaluate", "--project", str(_project(tmp_path)), "--db", db, "--quiet", "--no-report"]) == 0
    capsys.readouterr()
    rows = [r for r in _csv(capsys, "--db", db) if r["row"] == "call"]
    evil = next(r for r in rows if r["case_id"].endswith(EVIL))
    assert evil["case_id"] == "'" + EVIL
    assert not any(v.startswith(("=", "+", "-", "@")) for r in rows for v in r.values() if v)
    raw = [r for r in _csv(capsys, "--db", db, "--raw") if r["row"] == "call"]
    assert {r["case_id"] for r in raw} == {EVIL, "ok"}
    assert main(["export", "last", "--db", db]) == 0  # JSON lines are data, not a spreadsheet: as stored
    assert f'"case_id": "{EVIL}"' in capsys.readouterr().out


def test_load_export_neutralises_formulas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "l.db")
    assert main(["load", "--project", str(_project(tmp_path)), "--db", db, "--rates", "20", "--duration", "0.3",
                 "--quiet"]) == 0
    capsys.readouterr()
    rows = _csv(capsys, "--db", db)
    assert rows and any(r["case_id"] == "'" + EVIL for r in rows)
    assert any(r["case_id"] == EVIL for r in _csv(capsys, "--db", db, "--raw"))

"""CSV exports never hand a spreadsheet a live formula: cells starting with = + - @ (tab, CR) get a leading '
(OWASP's advice for CSV injection); `--raw` keeps them as written."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
import tomli_w

from arenatui.cli import main
from arenatui.kernel.text import spreadsheet_cell

EVIL = "=cmd|' /C calc'!A0"


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"])
def test_a_formula_start_gets_a_leading_quote(cell: str) -> None:
    assert spreadsheet_cell(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["", "plain", "1+1", "'=already", "a - b", "x\ny", "e-mail"])
def test_other_cells_are_unchanged(cell: str) -> None:
    assert spreadsheet_cell(cell) == cell


@pytest.mark.parametrize("cell", [" =1+1", "\u00a0=1+1", "\ufeff=1+1", "\u200b=1+1", "\u2060@SUM(A1)", "\uff1d1+1",
                                  "\uff0b1", "\uff0d1", "\uff20SUM(A1)", " \t\uff1d1"])
def test_a_formula_start_behind_whitespace_or_invisible_or_full_width_characters_is_neutralised(cell: str) -> None:
    assert spreadsheet_cell(cell) == "'" + cell


@pytest.mark.parametrize(("cell", "want"), [("ok\r=1+1", "ok\r'=1+1"), ("ok\n=1+1", "ok\n'=1+1"),
                                            ("ok\r\n @x", "ok\r\n' @x"), ("\r=1+1", "'\r'=1+1")])
def test_a_formula_start_after_a_line_break_is_neutralised(cell: str, want: str) -> None:
    assert spreadsheet_cell(cell) == want


def test_a_bare_carriage_return_is_quoted_so_no_reader_starts_a_row_there() -> None:
    """csv quotes only the characters of its line terminator ("\n"): a bare CR went out unquoted, and a reader
    splitting rows at CR started a new row with a live formula."""
    from arenatui.kernel.text import SpreadsheetCsv

    for raw in (False, True):
        out = io.StringIO()
        w = SpreadsheetCsv(out, raw=raw)
        w.writerow(["id", "\r=1+1", 3, None])
        w.writerow(["b", "plain", 4, None])
        text = out.getvalue()
        assert text.endswith(",4,\n") and "\r\n" not in text  # rows end in "\n", as before
        for line in re.split(r"\r\n|\r|\n", text):  # a naive reader splitting at any line break
            assert not line.startswith(("=", "+", "-", "@")) or raw
        assert list(csv.reader(io.StringIO(text, newline=""))) == [
            ["id", "\r=1+1" if raw else "'\r'=1+1", "3", ""], ["b", "plain", "4", ""]]


def _project(tmp_path: Path) -> Path:
    raw = {"project": {"name": "csv"}, "run": {"seed": 1},
           "models": [{"key": "m", "provider": "sim", "sim": {"base_latency_s": 0.0, "per_token_s": 0.0,
                                                               "accuracy": 1.0, "output_tokens": 3}}],
           "cases": [{"id": EVIL, "input": "q", "expected": "-5"}, {"id": "ok", "input": "q", "expected": "5"},
                     {"id": "\uff1dHYPERLINK(1)", "input": "q\r=1+1", "expected": "\r=1+1"}]}
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
    out = capsys.readouterr().out
    assert main(["export", "last", "--format", "csv", "--db", db]) == 0
    out = capsys.readouterr().out
    for line in re.split(r"\r\n|\r|\n", out):  # a reader that splits rows at any line break meets no formula
        for cell in line.split(","):
            assert not cell.lstrip('" \ufeff').startswith(("=", "+", "-", "@", "\uff1d")), line
    raw = [r for r in _csv(capsys, "--db", db, "--raw") if r["row"] == "call"]
    assert {r["case_id"] for r in raw} == {EVIL, "ok", "\uff1dHYPERLINK(1)"}
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

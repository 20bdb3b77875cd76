"""Untrusted text (model output, case text, provider error bodies, names from config) made safe to show.

Two rules: never parse it as markup (arenatui.present.safe_text.literal wraps it in a Rich `Text`), and
never let it reach the terminal as a control sequence (C0/C1 controls, DEL, lone surrogates, zero-width and bidi
marks become visible escapes).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from typing import TextIO

# Zero-width and bidi marks (U+200B..U+200F, U+202A..U+202E, U+2066..U+2069, U+FEFF) are invisible or reorder
# what follows them: shown as escapes so a model or case file cannot hide or disguise text on screen.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def _visible(m: re.Match[str]) -> str:
    c = m.group()
    if c == "\x1b":
        return "␛"
    code = ord(c)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(s: str, *, newlines: bool = True) -> str:
    """`s` with every control character shown as an escape; newlines and tabs kept unless told not to."""
    out = _CONTROL.sub(_visible, s).replace("\r", "\\r")
    if not newlines:
        out = out.replace("\n", "⏎").replace("\t", " ")
    return out


def one_line(s: str | None, limit: int = 200) -> str:
    t = printable(s or "", newlines=False)
    return t if len(t) <= limit else t[: limit - 1] + "…"


_FORMULA_AT_LINE_START = re.compile(
    r"(?:\A|(?<=[\r\n]))(?=(?:[^\S\r\n]|[\u180e\u200b-\u200f\u2060\ufeff])*[=+\-@\uff1d\uff0b\uff0d\uff20])")
"""Where a spreadsheet would start reading a formula: the start of the cell or of any line in it, behind any
whitespace, no-break space, byte-order mark or zero-width character (spreadsheets skip them), at `=`, `+`, `-`,
`@` or their full-width forms (which some convert to ASCII)."""


def spreadsheet_cell(s: str) -> str:
    """`s` made inert for a spreadsheet opening a CSV: a cell starting with `=`, `+`, `-`, `@`, tab or carriage
    return would be read as a formula (`=cmd|' /C calc'!A0` in a model answer runs a program), so it gets a
    leading `'`, as OWASP recommends for CSV injection; so does every line inside the cell that starts like one
    (a reader that splits rows at a line break would start a row there), and a formula start behind whitespace,
    invisible or full-width characters. `arena export --raw` skips this."""
    out = _FORMULA_AT_LINE_START.sub("'", s)
    return "'" + out if out.startswith(("\t", "\r")) else out


class SpreadsheetCsv:
    """A CSV writer for files people open in spreadsheets: rows end in `\n`, every cell holding a CR or LF is
    quoted (the csv module quotes only its line terminator's characters, so a bare CR went out unquoted and a
    reader splitting at it began a row inside the cell), and cells are made inert (`spreadsheet_cell`) unless
    `raw`. None is an empty cell."""

    def __init__(self, out: TextIO, *, raw: bool = False) -> None:
        self._out = out
        self._raw = raw
        self._row = io.StringIO()
        self._csv = csv.writer(self._row, lineterminator="\r\n")  # "\r\n": both characters force quoting

    def writerow(self, cells: Iterable[object]) -> None:
        row = ["" if c is None else c if self._raw or not isinstance(c, str) else spreadsheet_cell(c)
               for c in cells]
        self._row.seek(0)
        self._row.truncate()
        self._csv.writerow(row)
        self._out.write(self._row.getvalue()[:-2] + "\n")

"""Untrusted text (model output, case text, provider error bodies, names from config) made safe to show.

Two rules: never parse it as markup (arenatui.present.safe_text.literal wraps it in a Rich `Text`), and
never let it reach the terminal as a control sequence (C0/C1 controls, DEL, lone surrogates, zero-width and bidi
marks become visible escapes).
"""

from __future__ import annotations

import re

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


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(s: str) -> str:
    """`s` made inert for a spreadsheet opening a CSV: a cell starting with `=`, `+`, `-`, `@`, tab or carriage
    return would be read as a formula (`=cmd|' /C calc'!A0` in a model answer runs a program), so it gets a
    leading `'`, as OWASP recommends for CSV injection. `arena export --raw` skips this."""
    return "'" + s if s.startswith(_FORMULA_START) else s

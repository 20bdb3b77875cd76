"""The command line's Rich consoles: as wide as the terminal (160 columns into a pipe or a CI log, where Rich would
assume 80 and squeeze tables into ellipses), and quiet when the reader of stdout goes away (`arena runs | head`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console

from arenatui.kernel.errors import ArenaError

if TYPE_CHECKING:
    from arenatui.present.document import Document

PIPE_WIDTH = 160
"""Columns when stdout is neither a terminal nor given a width by COLUMNS."""


def width_for(stream: TextIO, *, piped: int = PIPE_WIDTH) -> int | None:
    """None (Rich measures the terminal or reads COLUMNS) for a terminal or when COLUMNS is set, else `piped`."""
    return None if getattr(stream, "isatty", lambda: False)() or os.environ.get("COLUMNS") else piped


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # Rich's own answer is SystemExit(1); `arena.cli.main` stops quietly with the shell's code for SIGPIPE
        self.quiet = True
        raise BrokenPipeError


def out_console(*, piped: int = PIPE_WIDTH, **kw: Any) -> Console:
    """A console on stdout: plain (no highlighting), fitted as `width_for` says."""
    kw.setdefault("width", width_for(sys.stdout, piped=piped))
    return _Console(highlight=False, **kw)


def err_console(**kw: Any) -> Console:
    """A console on stderr (progress, warnings)."""
    kw.setdefault("width", width_for(sys.stderr))
    return _Console(stderr=True, highlight=False, **kw)


def plain_listing(stream: TextIO | None = None) -> bool:
    """Whether a listing (`arena runs`, `compare`, `tune --show`, `load --show`, `plan`) is for a script: stdout is
    not a terminal and no COLUMNS asks for a table of that width. Then it prints plain tab-separated columns, a
    header line first (as `report` prints Markdown into a pipe)."""
    return width_for(stream or sys.stdout) is not None


def tab_separated(titles: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Tab-separated lines, the titles first: a cell's own lines joined with ", ", tabs and control characters
    shown as escapes (a case's or model's name can hold anything), so each row is one line with one field a
    column."""
    from arenatui.kernel.text import printable

    def field(text: str) -> str:
        return printable(", ".join(text.split("\n")), newlines=False)

    return "\n".join("\t".join(field(c) for c in line) for line in (titles, *rows))


def print_listing(console: Console, columns: Sequence[Any], rows: Sequence[Any], *, as_json: Any = None,
                  json_wanted: bool = False, **fitted: Any) -> None:
    """One listing three ways: JSON (`--json`: `as_json`, what scripts read), tab-separated columns when stdout is
    not a terminal (`plain_listing`), or a table fitted to the width (figures.table_for_width, `fitted` its
    options)."""
    import json

    from arenatui.present.columns import table_for_width

    if json_wanted:  # written as it is: a Console would expand tabs and wrap
        console.file.write(json.dumps(as_json, indent=2, ensure_ascii=False) + "\n")
    elif plain_listing():
        titles = [c.short or c.title for c in columns]
        console.file.write(tab_separated(titles, [[c.cell(r) for c in columns] for r in rows]) + "\n")
    else:
        console.print(table_for_width(columns, rows, console.width, **fitted))


def write_output(path: str | None, fn: Callable[[TextIO, bool], object]) -> None:
    """Run fn(stream, terminal) into the file `path` (bad path: exit 2), or into stdout."""
    if path is None:
        fn(sys.stdout, sys.stdout.isatty())
        return
    try:
        with open(path, "w", encoding="utf-8", newline="") as f:
            fn(f, False)
    except OSError as e:
        raise ArenaError(f"-o {path}: cannot write the file: {e.strerror or e}") from None


def print_document(console: Console, doc: Document, *, elsewhere: str = "") -> None:
    """A document (`arena report`, `arena bakeoff`) for a person at a terminal: its prose through Rich's Markdown
    (no hyperlinks: the text quotes models and cases), each table fitted to the width like every other table of the
    CLI (the first columns kept, the rightmost left out first and named, `elsewhere` ending that note), where raw
    Markdown's wide rows would wrap into noise. Piped output stays the Markdown itself."""
    import operator

    from rich.markdown import Markdown

    from arenatui.present.columns import HEADLINE, Column, Fitted
    from arenatui.present.document import Figure, Table, cell_text, md_blocks, md_escape

    prose: list[str] = [f"# {md_escape(doc.title)}"]

    def flush() -> None:
        if "".join(prose).strip():
            console.print(Markdown("\n\n".join(prose), hyperlinks=False))
            console.print()
        prose.clear()

    # a figure is its text here (its drawings are SVG), and the table in that text is fitted like any other
    for b in [x for y in doc.blocks for x in (y.text if isinstance(y, Figure) else (y,))]:
        if not isinstance(b, Table):
            prose.append("\n".join(md_blocks([b])))
            continue
        flush()
        rows = [[cell_text(c) for c in r] for r in b.rows]
        # a narrow table keeps every column (too wide: a block per row); a wide one its first columns, the
        # rightmost left out first (the report puts the headline figures first)
        wide = len(b.head) > 6
        columns: list[Column[list[str]]] = [
            Column(h, operator.itemgetter(j), priority=max(1, 9 - j) if wide and j >= 2 else HEADLINE,
                   right=j > 0 and all(r[j][:1] in "0123456789$-–+." for r in rows)) for j, h in enumerate(b.head)]
        console.print(Fitted(columns, rows, elsewhere=elsewhere))
        console.print()
    flush()

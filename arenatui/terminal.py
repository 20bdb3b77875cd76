"""The command line's Rich consoles: as wide as the terminal (160 columns into a pipe or a CI log, where Rich would
assume 80 and squeeze tables into ellipses), and quiet when the reader of stdout goes away (`arena runs | head`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console

from arenatui.errors import ArenaError

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

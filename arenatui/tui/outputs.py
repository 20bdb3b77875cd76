"""Long outputs in the detail screens: `s` saves the whole of each to a file (the console's call detail and the
results view's case detail alike; what they show is call_text.preview's first PREVIEW_CHARS)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import App

from arenatui.kernel.errors import ArenaError
from arenatui.kernel.units import plural


def _file_part(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("._")[:60] or "x"


def save_outputs(db: Path | str | None, run_id: str, case_id: str, calls: Iterable[tuple[str, int]],
                 folder: Path) -> list[tuple[Path, int]]:
    """Write the whole stored output of each (model, trial) of one case into `folder`, streamed from the database;
    returns the files written and their sizes (calls with no output are skipped). Raises OSError or ArenaError (a
    StoreError explaining a locked, full or corrupt file) for the caller to report."""
    from arenatui.store import Store

    saved: list[tuple[Path, int]] = []
    with Store(db, read_only=True) as store:
        for model_key, trial in calls:
            dest = folder / (f"arena-output-{_file_part(run_id)}-{_file_part(model_key)}-{_file_part(case_id)}-"
                             f"t{trial}.txt")
            n = store.save_output(run_id, model_key, case_id, trial, dest)
            if n is not None:
                saved.append((dest, n))
    return saved


def ask_save_folder(app: App[Any], run_id: str, *, sealed: bool, then: Callable[[Path], object]) -> None:
    """Where `s` saves outputs: asked for, proposing the user data folder's outputs/RUN/ (never the current folder
    unasked: it may be a git checkout); `then(folder)` once chosen. A sealed case's outputs are never written."""
    if sealed:
        app.notify("This case is sealed: its outputs are never shown or exported.", severity="warning", markup=False)
        return
    from arenatui.kernel.paths import data_dir
    from arenatui.tui.screens.dialogs import FolderInput

    def chosen(folder: str | None) -> None:
        if folder:
            then(Path(folder).expanduser())

    app.push_screen(FolderInput(Text("Save the whole outputs (one file per call) into the folder:"),
                                str(data_dir() / "outputs" / _file_part(run_id))), chosen)


def save_and_tell(app: App[Any], db: Path | str | None, run_id: str, case_id: str, calls: Iterable[tuple[str, int]],
                  folder: Path) -> None:
    """In a thread worker: save the outputs (`save_outputs`) and notify what was written, or why nothing was."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        saved = save_outputs(db, run_id, case_id, calls, folder)
    except (OSError, ArenaError) as e:  # a read-only folder, a full disk, a locked database
        app.call_from_thread(app.notify, f"Could not save the outputs into {folder}: {e}", severity="error",
                             markup=False)
        return
    app.call_from_thread(app.notify, saved_message(saved, folder), timeout=15, markup=False)


def saved_message(saved: list[tuple[Path, int]], folder: Path) -> str:
    if not saved:
        return "No output stored for this call yet."
    if len(saved) <= 3:
        return "Saved " + "; ".join(f"{p} ({n:,} bytes)" for p, n in saved)
    return f"Saved {plural(len(saved), 'file')} ({sum(n for _, n in saved):,} bytes) in {folder}: {saved[0][0].name} …"

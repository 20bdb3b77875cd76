"""A load run's segment table: at 80 columns no empty column takes a figure's place, and the report's Markdown and
HTML have every column the fitted table can leave out (its note sends the reader there)."""

from __future__ import annotations

import io

from rich.console import Console

from arenatui.commands.load_files import load_report_dict, render_load_report
from arenatui.load.metrics import (
    OK,
    TIMEOUT,
    LoadOutcome,
    LoadRequest,
    Samples,
    Window,
    compute,
    mark_saturation,
    per_segment,
)
from arenatui.present.load_tables import SEGMENT_COLUMNS, segment_table


def _outcome(rates: tuple[float, ...], answered: tuple[float, ...]) -> LoadOutcome:
    """One 10 s segment per rate; the server answers `answered` of them per second (the rest time out)."""
    s = Samples()
    seq = 0
    windows = []
    for i, (rate, ok) in enumerate(zip(rates, answered, strict=True)):
        windows.append(Window(i, rate, i * 10.0, (i + 1) * 10.0))
        n = int(rate * 10)
        for j in range(n):
            sched = i * 10.0 + j / rate
            answered = j < ok * 10
            s.add(LoadRequest(seq, i, 0, "c", False, sched, sched, sched + 0.2, OK if answered else TIMEOUT,
                              100.0 if answered else None, 200.0 if answered else None, 5, 11, None))
            seq += 1
    segs = per_segment(s, windows)
    return LoadOutcome("finished", compute(s, windows), segs, mark_saturation(segs), [])


def _render(outcome: LoadOutcome, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(segment_table(outcome))
    return console.export_text()


def test_no_empty_note_column_when_nothing_saturated() -> None:
    kept = _outcome((2.0, 4.0), (2.0, 4.0))
    assert kept.saturation is None
    text = _render(kept, 80)
    header = next(line for line in text.splitlines() if "seg" in line and "rate/s" in line)
    assert "┃  ┃" not in header and not header.rstrip().endswith("┃  ┃")
    # the width the empty column took holds a figure instead
    assert "timeout" in header


def test_the_note_column_stays_when_a_segment_saturated() -> None:
    sat = _outcome((2.0, 8.0), (2.0, 3.0))
    assert sat.saturation is not None
    assert "◀ saturation" in _render(sat, 200)


def test_the_report_has_every_column_the_fitted_table_leaves_out() -> None:
    out = _outcome((2.0, 4.0), (2.0, 4.0))
    md = render_load_report(load_report_dict("r1", "p", out), out, "md")
    head = next(line for line in md.splitlines() if line.startswith("| seg |"))
    titles = [c.strip() for c in head.strip("|").split("|")]
    assert titles == [c.title for c in SEGMENT_COLUMNS[:-1]]
    html = render_load_report(load_report_dict("r1", "p", out), out, "html")
    assert all(f"<th>{c.title}</th>" in html for c in SEGMENT_COLUMNS[:-1])


def test_the_saturation_marks_are_explained_under_the_tables() -> None:
    """Issue 37 item 14: `◀ saturation` and `saturated` stand in a column with no header: a line says what each means,
    printed only where a segment saturated."""
    from arenatui.commands.load_report import print_outcome

    def printed(outcome: LoadOutcome) -> str:
        out = Console(width=200, record=True, file=io.StringIO())
        print_outcome(out, Console(file=io.StringIO()), outcome)
        return out.export_text()

    sat = printed(_outcome((2.0, 8.0, 16.0), (2.0, 3.0, 3.0)))
    assert "◀ saturation" in sat and "saturated" in sat
    assert "◀ saturation: the first segment whose achieved rate fell below 95% of the offered rate; saturated: a " \
           "segment offered more than that one" in sat
    assert "◀ saturation:" not in printed(_outcome((2.0, 4.0), (2.0, 4.0)))

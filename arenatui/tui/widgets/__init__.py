"""Widgets of the run screen, one module each: the call matrix, the model table, the rates chart, the status bar
and sparklines. None of them know the engine or the store: the screen hands them numbers from live-metric snapshots.
This module is the package's public face (as `textual.widgets` is Textual's)."""

from arenatui.tui.widgets.matrix import (
    CELL_CLASSES,
    CELL_GLYPHS,
    CELL_NAMES,
    EMPTY,
    GLYPHS,
    JUDGE_MARK,
    MOSTLY,
    NO_ANSWER,
    STARTED,
    STATE_CLASSES,
    CallMatrix,
    CellReader,
    cell_state,
    short_labels,
)
from arenatui.tui.widgets.model_table import ALTERNATIVES, Column, ModelTable
from arenatui.tui.widgets.rates_chart import RatesChart
from arenatui.tui.widgets.sparkline import SPARK, spark, tall_spark
from arenatui.tui.widgets.status_bar import StatusBar, bar, clock, duration

__all__ = [
    "ALTERNATIVES", "CELL_CLASSES", "CELL_GLYPHS", "CELL_NAMES", "EMPTY", "GLYPHS", "JUDGE_MARK", "MOSTLY", "NO_ANSWER",
    "SPARK", "STARTED",
    "STATE_CLASSES", "CallMatrix", "CellReader", "Column", "ModelTable", "RatesChart", "StatusBar", "bar",
    "cell_state", "clock", "duration", "short_labels", "spark", "tall_spark",
]

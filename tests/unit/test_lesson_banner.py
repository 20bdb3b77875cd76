"""The demo's lesson banner: what it says to press, read from the same verdict the tuning pane shows."""

from __future__ import annotations

from arenatui.tui.widgets.lesson import lesson_text
from arenatui.tuning.evidence import LevelEvidence
from arenatui.tuning.levels import readout_of


def lv(level: int, answered: int, held_s: float = 5.0, limited: int = 0) -> LevelEvidence:
    return LevelEvidence(level, held_s, answered, answered + limited, limited, 0, limited, 0, answered, 300.0, 450.0)


def test_the_banner_walks_the_loop_measure_press_plus_read_the_optimum() -> None:
    measuring = readout_of("sim-limited", [lv(3, 12)], shared=True)
    assert lesson_text("sim-limited", measuring, 3, False).startswith(
        "sim-limited has a provider limit: measuring 3 (12/20), then press +")
    clean = readout_of("sim-limited", [lv(3, 40)], shared=True)
    assert lesson_text("sim-limited", clean, 3, False).startswith(
        "sim-limited measured clean at 3: press + and watch its 429s")
    found = readout_of("sim-limited", [lv(3, 40), lv(4, 30, 2.0, limited=20)], shared=True)
    said = lesson_text("sim-limited", found, 4, False)
    assert said.startswith("sim-limited: optimum ≈ 3: 429s from 4.") and said.endswith("x hide")
    # pressed + before the level below was measured: the banner says how to recover
    early = readout_of("sim-limited", [lv(3, 8), lv(4, 30, 2.0, limited=20)], shared=True)
    assert lesson_text("sim-limited", early, 4, False).startswith(
        "sim-limited: 429s at 4, 3 not measured: press -, wait, then +")
    assert lesson_text("sim-limited", clean, 3, True).startswith("Auto-tuner on: sim-limited climbs")


def test_every_line_fits_80_columns_with_the_demo_model_name() -> None:
    for ro, level, on in [(readout_of("sim-limited", [lv(3, 12)], shared=True), 3, False),
                          (readout_of("sim-limited", [lv(13, 40), lv(14, 30, 2.0, limited=20)], shared=True), 14,
                           False),
                          (readout_of("sim-limited", [lv(13, 8), lv(14, 30, 2.0, limited=20)], shared=True), 14,
                           False),
                          (readout_of("sim-limited", [lv(3, 12)], shared=True), 3, True)]:
        assert len(" " + lesson_text("sim-limited", ro, level, on)) <= 80

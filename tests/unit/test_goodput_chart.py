"""Goodput by level as a terminal picture (`arena tune --show`, the tuning pane): snapshots at 80 and 120 columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenatui.present.charts import goodput_by_level
from arenatui.tuning.evidence import LevelEvidence, verdict

SNAPSHOTS = Path(__file__).parent / "chart_snapshots"


def lv(level: int, answered: int, held_s: float = 5.0, limited: int = 0) -> LevelEvidence:
    return LevelEvidence(level, held_s, answered, answered + limited, limited, 0, limited, 0, answered, 300.0, 450.0)


# clean and measured at 1-3, refused at 4, a glance at 8 (not measured), 5-7 never held
LEVELS = [lv(1, 20), lv(2, 40), lv(3, 60), lv(4, 30, 2.0, limited=20), lv(8, 5, 1.0, limited=30)]


@pytest.mark.parametrize("width", [80, 120])
def test_the_chart_at_80_and_120_columns_matches_its_snapshot(width: int) -> None:
    knee = verdict(LEVELS).level
    assert knee == 3
    rows = goodput_by_level(LEVELS, width, knee=knee)
    assert all(len(r) <= width for r in rows)
    snapshot = SNAPSHOTS / f"goodput_by_level_{width}.txt"
    assert "\n".join(rows) + "\n" == snapshot.read_text(encoding="utf-8")


def test_measured_held_and_untried_levels_are_told_apart() -> None:
    rows = goodput_by_level(LEVELS, 80, knee=3)
    assert [r.split()[0] for r in rows] == ["1", "2", "3", "4", "5–7", "8"]
    assert "◀ optimum" in rows[2] and "█" in rows[2] and "┤" in rows[2]  # measured: solid, shaded, whisker
    assert rows[4].endswith("·  not tried")
    assert "░" in rows[5] and "█" not in rows[5] and rows[5].endswith("short")  # held, not measured
    assert "429s  40%" in rows[3]
    assert goodput_by_level([], 80) == []

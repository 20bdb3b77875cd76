"""The frontier's scatter: a score axis never labelled above 1 or below 0, and the x axis's ends labelled with the
points' own values, as the leaderboard prints them."""

from __future__ import annotations

from arenatui.kernel.units import money
from arenatui.present.charts import Point, scatter


def _axis_labels(text: str) -> list[float]:
    return [float(line.split("│")[0]) for line in text.splitlines() if "│" in line and line.split("│")[0].strip()]


def test_a_score_axis_stays_within_0_and_1() -> None:
    pts = [Point("a", 0.0005375, 1.0, True), Point("b", 0.000064, 0.75, True)]
    labels = _axis_labels(scatter(pts, 80, 8, x_name="$", y_name="quality", log_x=True, x_fmt=money).plain)
    assert max(labels) == 1.0 and min(labels) < 0.75
    low = [Point("a", 1.0, 0.0, True), Point("b", 2.0, 0.2, False)]
    assert min(_axis_labels(scatter(low, 80, 8, x_name="x", y_name="quality").plain)) == 0.0


def test_the_x_axis_ends_read_as_the_points_do() -> None:
    pts = [Point("a", 0.0005375, 1.0, True), Point("b", 0.000064, 0.75, True)]
    text = scatter(pts, 80, 8, x_name="$", y_name="quality", log_x=True, x_fmt=money).plain
    ticks = next(line for line in text.splitlines() if "$0.0000640" in line)
    assert ticks.split()[-1] == money(0.0005375)  # not 10 ** log10(x), a digit lower


def test_any_other_axis_keeps_its_margin() -> None:
    pts = [Point("a", 1.0, 3.0, True), Point("b", 2.0, 5.0, False)]
    labels = _axis_labels(scatter(pts, 80, 8, x_name="x", y_name="tokens").plain)
    assert max(labels) > 5.0 and min(labels) < 3.0

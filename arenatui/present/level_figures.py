"""How a level's evidence reads in every view (CLI tables, the tuning pane, the results detail, reports): one
formatter per figure, "–" where a figure would divide by an empty interval."""

from __future__ import annotations

from arenatui.tuning.evidence import LevelEvidence

NONE = "–"


def fmt_share(x: float | None) -> str:
    if x is None:
        return NONE
    return f"{x:.0%}" if x >= 0.005 or x == 0 else "<1%"


def fmt_ms(x: float | None) -> str:
    return NONE if x is None else f"{x:.0f}"


def fmt_rate(x: float | None) -> str:
    """Per second, with the precision the figure has."""
    if x is None:
        return NONE
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def goodput_text(r: LevelEvidence, interval: bool = True) -> str:
    """'12.3/s (9.1–16.0)': goodput and its 95% Poisson interval; '–' over an empty interval."""
    g = r.goodput
    if g is None:
        return NONE
    iv = r.goodput_interval
    text = f"{fmt_rate(g)}/s"
    if interval and iv is not None:
        text += f" ({fmt_rate(iv[0])}–{fmt_rate(iv[1])})"
    return text


def limited_text(r: LevelEvidence, interval: bool = True) -> str:
    """'12% (5–25%)': the 429 share of attempts and its Wilson interval; '–' with no attempt."""
    share = r.limited_share
    if share is None:
        return NONE
    iv = r.limited_interval
    text = fmt_share(share)
    if interval and iv is not None and r.rate_limited:
        text += f" ({iv[0] * 100:.0f}–{iv[1] * 100:.0f}%)"
    return text


def mark(r: LevelEvidence, best: int | None) -> str:
    """The note beside a level: the verdict's level, or what it lacks."""
    if r.level == best:
        return "◀ best"
    return "" if r.measured else "short: " + r.missing().removeprefix(f"level {r.level}: ")

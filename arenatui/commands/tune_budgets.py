"""Printing and writing the max_tokens and timeout_s recommendations (`arena tune`, `arena tune --show`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.text import Text

from arenatui.present.safe_text import literal
from arenatui.tuning.budgets import Budgets, Recommendation, budgets_of

__all__ = ["SETTINGS", "Budgets", "budgets_for_run", "parse_settings", "print_budgets", "writable"]

SETTINGS = ("concurrency", "max_tokens", "timeout_s")
"""What `arena tune --write` can write, in the tuning order's order."""
BY_DEFAULT = ("concurrency", "max_tokens")
"""What a bare `--write` writes. timeout_s only when named: a timeout measured on a tuning run's answers (often short,
simulated or from a nearby server) is a suggestion for a provider whose real answers may take far longer."""


def budgets_for_run(run_id: str, db: str | Path | None = None) -> Budgets:
    from arenatui.results.budgets import budget_evidence
    from arenatui.store import Store

    with Store(db, read_only=True) as store:
        return budgets_of(budget_evidence(store, run_id))


def _line(rec: Recommendation, label: str) -> Text:
    line = Text("  ")
    line.append(label, "bold")
    line.append(" ")
    line.append(literal(rec.unnamed(), "yellow" if rec.action in ("lower", "raise") else "", newlines=False))
    for d in rec.detail:
        line.append("\n      ")
        line.append(literal(d, "dim", newlines=False))
    return line


def print_budgets(out: Console, b: Budgets) -> None:
    """Steps 2 and 4 of the tuning order, per model, with their evidence."""
    if not b.max_tokens:
        out.print("max_tokens and timeout_s: no answered calls to learn from.", markup=False)
        return
    for key, rec in b.max_tokens.items():
        head = Text()
        head.append(literal(key, "bold", newlines=False))
        out.print(head)
        out.print(_line(rec, "max_tokens"))
        for kind, kind_rec in b.scorer_rows(key):
            out.print(_line(kind_rec, f"max_tokens ({kind} cases)"))
        out.print(_line(b.timeouts[key], "timeout_s "))
    if b.run_timeout is not None:
        out.print(_line(b.run_timeout, "[run] timeout_s"))
        if b.run_timeout.writable:  # measured on this run's answers: a real provider's may take far longer
            out.print(Text("      a suggestion: a bare --write leaves it; --write timeout_s writes it", "dim"))
    else:
        out.print(Text(f"  [run] timeout_s {b.timeout_s:g}: not enough evidence for every model to recommend the "
                       "one limit they share"))


def parse_settings(value: str) -> tuple[str, ...]:
    """`--write` / `--write concurrency,max_tokens,timeout_s`: which settings to write (ValueError names a wrong one);
    a bare `--write` (or `all`) writes BY_DEFAULT."""
    if value in ("", "all"):
        return BY_DEFAULT
    chosen = tuple(v.strip() for v in value.split(",") if v.strip())
    wrong = [v for v in chosen if v not in SETTINGS]
    if wrong:
        raise ValueError(f"--write takes {', '.join(SETTINGS)} (comma-separated), not {', '.join(wrong)}")
    return chosen


def writable(b: Budgets, settings: Sequence[str]) -> tuple[dict[str, int], float | None, list[str]]:
    """(max_tokens per model, the run's timeout_s, one line per recommendation not written and why)."""
    tokens: dict[str, int] = {}
    skipped: list[str] = []
    if "max_tokens" in settings:
        for key, rec in b.max_tokens.items():
            if rec.writable and rec.value is not None:
                tokens[key] = int(rec.value)
            else:
                skipped.append(f"max_tokens for {key}: not written ({rec.verdict})")
    timeout: float | None = None
    if "timeout_s" in settings:
        rt = b.run_timeout
        if rt is not None and rt.writable:
            timeout = rt.value
        else:
            skipped.append("[run] timeout_s: not written ("
                           + (rt.verdict if rt is not None else "not enough evidence for every model") + ")")
    return tokens, timeout, skipped

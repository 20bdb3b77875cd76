"""The prompt-variant and repair tables every view prints (terminal, Markdown, HTML), from their JSON-shaped form.

The verdicts come from stats.variants and store.queries.follow_ups; this module only words and formats them, once,
so the terminal, the report and the bake-off page say the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from arenatui.kernel.units import money, pct, plural

if TYPE_CHECKING:
    from rich.table import Table

    from arenatui.results.read import StoredRun
    from arenatui.store.queries import FollowUps

VARIANT_NOTE = ("With prompt variants, each model's own quality is the mean over the variants it was asked with "
                "(each variant's cases and trials weigh alike); the ranked score and every paired comparison are over "
                "the (case, variant) cells the models share, so a model asked fewer variants is compared over those "
                "only. pass@k is over the trials of one variant, never across prompts. The table below shows each "
                "variant's score.")
SPREAD_WORDS = ("spread: the model's best variant minus its worst over the cases both scored, with a paired "
                "interval; a pair's ordering 'depends on the prompt' when one variant decides it one way and another "
                "the other way, or leaves it undecided. A variant decides a pair only after Holm over the variants "
                "both models were asked with.")
FOLLOW_UP_WORDS = ("before: share of scored calls whose first answer passed; after: once repair turns and escalations "
                   "had their say. $/completed and tokens/completed count every step's spend (repairs, escalations, "
                   "rate-limit retries, errored calls) over passed calls.")


def _score(d: dict[str, Any] | None) -> str:
    if not d or d.get("estimate") is None:
        return "–"
    lo, hi = d.get("low"), d.get("high")
    band = f" ({lo:.3f}–{hi:.3f})" if lo is not None and hi is not None else ""
    return f"{d['estimate']:.3f}{band}"


def _signed(d: dict[str, Any]) -> str:
    if d.get("estimate") is None:
        return "–"
    lo, hi = d.get("low"), d.get("high")
    if d["estimate"] == 0 and lo == 0 and hi == 0:  # every case scored alike: no interval to print
        return f"identical on all {d.get('n')} cases"
    band = f" ({lo:+.3f} to {hi:+.3f})" if lo is not None and hi is not None else ""
    return f"{d['estimate']:+.3f}{band}"


def variant_score_rows(rob: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Model × variant scores (with intervals), then each model's spread."""
    variants = list(rob["variants"])
    models = list(dict.fromkeys(s["model"] for s in rob["scores"]))
    cell = {(s["model"], s["variant"]): s["score"] for s in rob["scores"]}
    spread = {s["model"]: s for s in rob["spreads"]}
    head = ["model", *variants, "spread (best − worst)"]
    rows = []
    for m in models:
        sp = spread.get(m)
        rows.append([m, *(_score(cell.get((m, v))) for v in variants),
                     f"{_signed(sp['diff'])} {sp['best']} − {sp['worst']}" if sp else "–"])
    return head, rows


def variant_pair_rows(rob: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Each pair of models: the verdict across variants and the paired difference under each."""
    variants = list(rob["variants"])
    head = ["pair", "across variants", *(f"A − B {v}" for v in variants)]
    rows = [[f"{p['a']} vs {p['b']}", p["text"],
             *(_signed(p["per_variant"][v]["diff"]) if v in p["per_variant"] else "–" for v in variants)]
            for p in rob["pairs"]]
    return head, rows


def follow_up_dicts(rows: Sequence[FollowUps]) -> list[dict[str, Any]]:
    return [{"model": f.model, "scored": f.scored, "before": f.before, "after": f.after, "repairs": f.repairs,
             "repaired": f.repaired, "escalated": f.escalated, "tokens": f.tokens, "cost": f.cost,
             "cost_per_completed": f.cost_per_completed, "tokens_per_completed": f.tokens_per_completed}
            for f in rows]


def follow_up_rows(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Completion before and after repairs and escalations, and what a completed case cost."""
    head = ["model", "completion before", "after", "repair turns", "escalated", "tokens/completed", "$/completed"]
    out = [[f["model"], pct(f["before"]), pct(f["after"]), f"{f['repairs']} ({plural(f['repaired'], 'call')})",
            str(f["escalated"]), "–" if f["tokens_per_completed"] is None else f"{f['tokens_per_completed']:.0f}",
            money(f["cost_per_completed"])] for f in rows]
    return head, out


def rich_tables(rob: dict[str, Any] | None, follow: Sequence[dict[str, Any]]) -> list[Table]:
    """The tables as Rich renderables (cells as literal text), for the terminal and the results view."""
    from rich.table import Table
    from rich.text import Text

    from arenatui.present.safe_text import literal

    sections: list[tuple[str, str, tuple[list[str], list[list[str]]]]] = []
    if rob is not None:
        sections.append(("Prompt variants", SPREAD_WORDS, variant_score_rows(rob)))
        if rob["pairs"]:
            sections.append(("Does the ordering survive the prompt?", "", variant_pair_rows(rob)))
    if follow:
        sections.append(("Repairs and escalation", FOLLOW_UP_WORDS, follow_up_rows(follow)))
    out = []
    for title, words, (head, rows) in sections:
        t = Table(title=title, caption=Text(words) if words else None, caption_justify="left")
        for h in head:
            t.add_column(Text(h), overflow="fold")
        for row in rows:
            t.add_row(*(literal(c, newlines=False) for c in row))
        out.append(t)
    return out


def variants_dict(stored: StoredRun) -> dict[str, Any] | None:
    """The run's prompt-variant analysis as JSON-shaped data, or None without variants."""
    from arenatui.results.read import prompt_robustness

    rob = prompt_robustness(stored)
    return None if rob is None else rob.to_dict()

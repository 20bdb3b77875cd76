"""The bake-off page as one document (present/document.py), rendered as Markdown or HTML, from its JSON-shaped dict
(bakeoff_build.py), with the decision report's shared sections (commands/report_doc.py): every name, reason and
source is untrusted text, escaped for its format."""

from __future__ import annotations

import json
from typing import Any

from arenatui.commands.report_doc import at_load_blocks, conditions_blocks, pair_item
from arenatui.kernel.units import fixed, interval, money, pct
from arenatui.present.document import (
    Block,
    Bullets,
    Cell,
    Document,
    Emph,
    Heading,
    Link,
    Mark,
    Para,
    Table,
    table,
    to_html,
    to_markdown,
)

MARGIN_HEAD = ("model", "quality", "95% CI", "n", "coverage", "$/correct")
MODES_HEAD = ("model", "failure mode", "calls", "share", "95% CI")
TERMS_HEAD = ("model", "term", "verdict", "value", "requirement", "source", "checked")
"""The verdict beside its term: on a phone the columns past the first few scroll sideways."""
DECISION_HEAD = ("model", "decision", "reasons")
ROBUSTNESS = "Robustness across prompt variants"


def _margin_rows(page: dict[str, Any]) -> list[list[str]]:
    return [[m["model"], fixed(m["quality"]["estimate"]), interval(m["quality"]["low"], m["quality"]["high"],
                                                                 m["quality"]["n"]),
             str(m["quality"]["n"]), pct(m["coverage"]), money(m["cost_per_correct"])]
            for m in page["margin"]["leaderboard"]]


def _robustness_tables(page: dict[str, Any]) -> list[tuple[list[str], list[list[str]]]]:
    """Per model × prompt variant scores with spreads, and each pair's verdict under every variant (when the sweep
    had variants)."""
    from arenatui.present.variant_tables import variant_pair_rows, variant_score_rows

    rob = page["margin"]["robustness"]
    if not rob.get("measured"):
        return []
    return [variant_score_rows(rob), *([variant_pair_rows(rob)] if rob["pairs"] else [])]


def _mode_rows(page: dict[str, Any]) -> list[list[str]]:
    return [[c["model"], c["mode"], f"{c['count']} of {c['calls']}", pct(c["share"], decimals=1),
             f"{pct(c['low'], decimals=1)}–{pct(c['high'], decimals=1)}"] for c in page["failures"]["modes"]]


def _unrecorded(page: dict[str, Any]) -> list[str]:
    """The candidates with no term recorded at all (no value, no source): one line says so, not four rows each."""
    return [m for m, ts in page["terms"]["models"].items()
            if all(t["value"] is None and not t["source"] for t in ts)]


def _term_rows(page: dict[str, Any]) -> list[list[str]]:
    verdict = {True: "met", False: "FAILS", None: "unknown"}
    skip = set(_unrecorded(page))
    return [[m, t["term"], verdict[t["met"]] if t["requirement"] else "-", t["shown"], t["requirement"] or "-",
             t["source"] or "-", t["checked"] or "-"]
            for m, ts in page["terms"]["models"].items() if m not in skip for t in ts]


def _unrecorded_words(page: dict[str, Any]) -> str:
    none = _unrecorded(page)
    if not none:
        return ""
    terms = next(iter(page["terms"]["models"].values()))
    return (f"No terms recorded for {', '.join(none)} (terms = {{...}} on each [[models]] table): ask the provider "
            f"about {', '.join(t['term'] for t in terms)}; unknown, they meet no requirement and fail none.")


def _decision_rows(page: dict[str, Any]) -> list[list[str]]:
    return [[d["model"], d["decision"], "; ".join(d["reasons"])] for d in page["decisions"]]


def _requirements_words(page: dict[str, Any]) -> str:
    req = page["terms"]["requirements"]
    if not req:
        return ("No [requirements] in the project: terms are listed, none eliminates. Unknown terms are \"ask the "
                "provider\", never assumed.")
    return ("Requirements: " + ", ".join(f"{k} = {_toml(v)}" for k, v in req.items()) + ". A candidate failing "
            "one is "
            "eliminated; unknown terms are \"ask the provider\", never assumed, and eliminate no one.")


def no_pairs_words(page: dict[str, Any]) -> str:
    """What the margin says when it has no pair to show: one candidate has nothing to compare it with; of several,
    too few answered."""
    board = page["margin"]["leaderboard"]
    if len(board) == 1:
        return "One candidate: nothing to compare."
    answered = [m["model"] for m in board if m["quality"]["n"]]
    return (f"Fewer than two of the {len(board)} candidates have scored answers ("
            f"{', '.join(answered) or 'none'}): nothing to compare.")


def _toml(v: Any) -> str:
    """A requirement's value as the project file has it (30, not the 30.0 a float comes back as)."""
    if isinstance(v, float):
        return f"{v:g}"
    return json.dumps(v, ensure_ascii=False)


def _partly_load_tested(page: dict[str, Any]) -> bool:
    """Some candidates load-tested, not all: the others are named (none at all is said once, by the section)."""
    return 0 < len(page["load"]["missing"]) < len(page["load"]["rows"])


def _title(page: dict[str, Any]) -> str:
    return f"Bake-off: {page['run']['project']}, run {page['run']['run_id']}"


def _intro(page: dict[str, Any]) -> str:
    loads = ", ".join(page["load_runs"]) or "none"
    sandbox = f" {page['run']['sandbox']}" if page["run"].get("sandbox") else ""
    return (f"Sweep {page['run']['run_id']} (status {page['run']['status']}, started {page['run']['started_at']}); "
            f"load runs: {loads}; decision made {page['made_at']}.{sandbox}")


def _decision_table(page: dict[str, Any]) -> Table:
    """Each candidate's decision in the decision's colours (eliminated, contender), its reasons wrapping."""
    return table(DECISION_HEAD, [[d["model"], Mark(d["decision"], d["decision"]), "; ".join(d["reasons"])]
                                 for d in page["decisions"]], "text prose")


VERDICT_CLASS = {"FAILS": "eliminated", "met": "contender"}
"""The terms table's verdict cells in the decision's colours: a failed term reads as one at a glance."""


def _term_cells(rows: list[list[str]]) -> list[list[Cell]]:
    """The terms table's rows: a verdict coloured as the decision is (FAILS as eliminated, met as a contender),
    each source a link where it is an http(s) address."""
    verdict, source = TERMS_HEAD.index("verdict"), TERMS_HEAD.index("source")
    return [[Mark(c, VERDICT_CLASS[c]) if j == verdict and c in VERDICT_CLASS else Link(c) if j == source and c != "-"
             else c for j, c in enumerate(r)] for r in rows]


def page_document(page: dict[str, Any], *, shown: str | None = None) -> Document:
    """The bake-off page (bakeoff_build.py's dict) as one document: the decision, the margin, behaviour at the
    target load, the errors each candidate makes, the terms."""
    eliminated = [d["model"] for d in page["decisions"] if d["decision"] == "eliminated"]
    blocks: list[Block] = [Para(_intro(page)), *([Para((Emph(shown),))] if shown else []),
                           *conditions_blocks(page["conditions"]),
                           Heading("Decision"), _decision_table(page),
                           Heading("The margin"),
                           Para("Quality over scored calls with a 95% bootstrap interval over cases; each pair's "
                                "verdict is paired and Holm-adjusted over all pairs."),
                           table(MARGIN_HEAD, _margin_rows(page), "names"),
                           Bullets(tuple(pair_item(p) for p in page["margin"]["pairs"]) or (no_pairs_words(page),)),
                           Para(f"{ROBUSTNESS}: {page['margin']['robustness']['text']}.")]
    blocks += [table(head, rows) for head, rows in _robustness_tables(page)]
    blocks += at_load_blocks(page["load"], eliminated)
    if _partly_load_tested(page):
        blocks.append(Para(f"Not load-tested: {', '.join(page['load']['missing'])} (pass --load, or run arena load "
                           "--model KEY at the target rate)."))
    blocks += [Heading("Which errors each makes"),
               Para("Every call's failure mode (failed answers and errored calls) with a 95% interval on its share of "
                    "the model's calls."),
               table(MODES_HEAD, _mode_rows(page), "text") if page["failures"]["modes"] else Para("No call failed."),
               Heading("Refusals by category", 3),
               Bullets(tuple(f"{'⚠ ' if r['refuses'] else ''}{r['text']}" for r in page["failures"]["refusals"])
                       or ("No refusal.",)),
               Heading("Terms"), Para(_requirements_words(page))]
    unrecorded, terms = _unrecorded_words(page), _term_rows(page)
    if unrecorded:
        blocks.append(Para(unrecorded))
    if terms:
        blocks.append(table(TERMS_HEAD, _term_cells(terms), "text"))
    return Document(_title(page), tuple(blocks))


def render(page: dict[str, Any], fmt: str, *, terminal: bool = False, shown: str | None = None) -> str:
    if fmt == "json":
        return json.dumps(page, indent=2, ensure_ascii=terminal, allow_nan=False) + "\n"
    doc = page_document(page, shown=shown)
    return to_html(doc) if fmt == "html" else to_markdown(doc)

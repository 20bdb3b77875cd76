"""The bake-off page in Markdown and HTML, rendered from its JSON-shaped dict (bakeoff_build.py) with the decision
report's tables, styling and escaping: every name, reason and source is untrusted text, escaped for its format."""

from __future__ import annotations

import json
from typing import Any

from arenatui.commands.report import (
    _f,
    _h,
    _html_table,
    _md,
    _md_table,
    html_at_load,
    html_conditions,
    html_head,
    html_pair,
    md_at_load,
    md_conditions,
    md_pair,
)
from arenatui.kernel.units import interval, money, pct

MARGIN_HEAD = ("model", "quality", "95% CI", "n", "coverage", "$/correct")
MODES_HEAD = ("model", "failure mode", "calls", "share", "95% CI")
TERMS_HEAD = ("model", "term", "verdict", "value", "requirement", "source", "checked")
"""The verdict beside its term: on a phone the columns past the first few scroll sideways."""
DECISION_HEAD = ("model", "decision", "reasons")
ROBUSTNESS = "Robustness across prompt variants"


def _margin_rows(page: dict[str, Any]) -> list[list[str]]:
    return [[m["model"], _f(m["quality"]["estimate"]), interval(m["quality"]["low"], m["quality"]["high"],
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


def render_markdown(page: dict[str, Any], *, shown: str | None = None) -> str:
    lines = [f"# {_md(_title(page))}", "", _md(_intro(page)), ""]
    if shown:
        lines += [f"_{_md(shown)}_", ""]
    lines += md_conditions(page["conditions"])
    lines += ["## Decision", ""]
    lines += _md_table(DECISION_HEAD, _decision_rows(page))
    lines += ["", "## The margin", "", "Quality over scored calls with a 95% bootstrap interval over cases; each "
              "pair's verdict is paired and Holm-adjusted over all pairs.", ""]
    lines += _md_table(MARGIN_HEAD, _margin_rows(page))
    lines += [""] + ([md_pair(p) for p in page["margin"]["pairs"]] or [_md(no_pairs_words(page))])
    lines += ["", f"{ROBUSTNESS}: {_md(page['margin']['robustness']['text'])}.", ""]
    for head, rows in _robustness_tables(page):
        lines += [*_md_table(head, rows), ""]
    lines += md_at_load(page["load"])
    if _partly_load_tested(page):
        lines += ["", f"Not load-tested: {_md(', '.join(page['load']['missing']))} (pass --load, or run arena load "
                  "--model KEY at the target rate)."]
    lines += ["", "## Which errors each makes", "", "Every call's failure mode (failed answers and errored calls) "
              "with a 95% interval on its share of the model's calls.", ""]
    lines += _md_table(MODES_HEAD, _mode_rows(page)) if page["failures"]["modes"] else ["No call failed."]
    lines += ["", "### Refusals by category", ""]
    refusals = page["failures"]["refusals"]
    lines += [f"- {'⚠ ' if r['refuses'] else ''}{_md(r['text'])}" for r in refusals] or ["No refusal."]
    lines += ["", "## Terms", "", _md(_requirements_words(page)), ""]
    if _unrecorded_words(page):
        lines += [_md(_unrecorded_words(page)), ""]
    lines += _md_table(TERMS_HEAD, _term_rows(page)) if _term_rows(page) else []
    lines.append("")
    return "\n".join(lines)


VERDICT_CLASS = {"FAILS": "eliminated", "met": "contender"}
"""The terms table's verdict cells in the decision's colours: a failed term reads as one at a glance."""


def _source_cell(source: str) -> str:
    """A term's source: a link when it is an http(s) address (escaped; any other scheme stays text, since the
    source is the user's or a provider's words), else the text."""
    from urllib.parse import urlsplit

    if urlsplit(source).scheme in ("http", "https") and " " not in source:
        return f'<a href="{_h(source)}" rel="noopener noreferrer">{_h(source)}</a>'
    return _h(source)


def _html_terms(rows: list[list[str]]) -> str:
    """The terms table: a verdict coloured as the decision is (FAILS as eliminated, met as a contender), each
    source a link where it is an address."""
    th = "".join(f"<th>{_h(c)}</th>" for c in TERMS_HEAD)
    verdict, source = TERMS_HEAD.index("verdict"), TERMS_HEAD.index("source")

    def cell(j: int, text: str) -> str:
        if j == verdict and text in VERDICT_CLASS:
            return f'<td class="{VERDICT_CLASS[text]}">{_h(text)}</td>'
        if j == source:
            return f"<td>{_source_cell(text)}</td>"
        return f"<td>{_h(text)}</td>"

    body = "".join("<tr>" + "".join(cell(j, c) for j, c in enumerate(r)) + "</tr>" for r in rows)
    return f'<div class="wide"><table class="text"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'


def render_html(page: dict[str, Any], *, shown: str | None = None) -> str:
    parts = [html_head(_title(page)), f"<h1>{_h(_title(page))}</h1>", f"<p>{_h(_intro(page))}</p>"]
    if shown:
        parts.append(f"<p><i>{_h(shown)}</i></p>")
    parts.append(html_conditions(page["conditions"]))
    parts.append("<h2>Decision</h2>")
    rows = "".join(f"<tr><td>{_h(d['model'])}</td><td class={d['decision']}>{_h(d['decision'])}</td>"
                   f"<td style=\"text-align:left;white-space:normal\">{_h('; '.join(d['reasons']))}</td></tr>"
                   for d in page["decisions"])
    parts.append('<div class="wide"><table class="text"><thead><tr>' + "".join(f"<th>{_h(c)}</th>"
                                                                                 for c in DECISION_HEAD)
                 + f"</tr></thead><tbody>{rows}</tbody></table></div>")
    parts.append("<h2>The margin</h2><p>Quality over scored calls with a 95% bootstrap interval over cases; each "
                 "pair's verdict is paired and Holm-adjusted over all pairs.</p>")
    parts.append(_html_table(MARGIN_HEAD, _margin_rows(page), "names"))
    parts.append("<ul>" + ("".join(html_pair(p) for p in page["margin"]["pairs"])
                           or f"<li>{_h(no_pairs_words(page))}</li>") + "</ul>")
    parts.append(f"<p>{_h(ROBUSTNESS)}: {_h(page['margin']['robustness']['text'])}.</p>")
    parts += [_html_table(head, rows) for head, rows in _robustness_tables(page)]
    parts.append(html_at_load(page["load"], [d["model"] for d in page["decisions"] if d["decision"] == "eliminated"]))
    if _partly_load_tested(page):
        parts.append(f"<p>Not load-tested: {_h(', '.join(page['load']['missing']))}.</p>")
    parts.append("<h2>Which errors each makes</h2><p>Every call's failure mode (failed answers and errored calls) "
                 "with a 95% interval on its share of the model's calls.</p>")
    parts.append(_html_table(MODES_HEAD, _mode_rows(page), "text") if page["failures"]["modes"]
                 else "<p>No call failed.</p>")
    parts.append("<h3>Refusals by category</h3><ul>" + ("".join(
        f"<li>{'⚠ ' if r['refuses'] else ''}{_h(r['text'])}</li>" for r in page["failures"]["refusals"])
        or "<li>No refusal.</li>") + "</ul>")
    unrecorded = f"<p>{_h(_unrecorded_words(page))}</p>" if _unrecorded_words(page) else ""
    parts.append(f"<h2>Terms</h2><p>{_h(_requirements_words(page))}</p>{unrecorded}"
                 + (_html_terms(_term_rows(page)) if _term_rows(page) else ""))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def render(page: dict[str, Any], fmt: str, *, terminal: bool = False, shown: str | None = None) -> str:
    if fmt == "json":
        return json.dumps(page, indent=2, ensure_ascii=terminal, allow_nan=False) + "\n"
    if fmt == "html":
        return render_html(page, shown=shown)
    return render_markdown(page, shown=shown)

"""The decision report as a document: every section of `arena report` written once, as blocks
(present/document.py), from the report's JSON-shaped dict (commands/report.py builds it). Markdown, HTML and the
terminal render the same document, so the formats never disagree; the bake-off page (commands/bakeoff_page.py)
takes its shared sections (conditions, pairs, quality beside load) from here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from typing import Any

from arenatui.bakeoff.atload import MIN_ANSWERED
from arenatui.kernel.units import NOTHING, fixed, interval, money, ms, number, pct, plural, score
from arenatui.present.columns import LEADERBOARD, Column
from arenatui.present.document import (
    Block,
    Bullets,
    Callout,
    Code,
    Document,
    Figure,
    Heading,
    Item,
    Mark,
    Para,
    Pre,
    Strong,
    Text,
    table,
)
from arenatui.present.svg_charts import goodput_svg, scatter
from arenatui.scoring.failure_modes import FAILURE_MODES
from arenatui.stats import Interval, ModelRow

# ---- cells and rows --------------------------------------------------------------------------------------------

# ---- formatting shared by Markdown and HTML --------------------------------------------------------------


def _ci(iv: dict[str, Any]) -> str:
    return interval(iv["low"], iv["high"], iv["n"])


def _interval(d: dict[str, Any] | None) -> Interval:
    nan = math.nan
    if d is None:
        return Interval(nan, nan, nan, 0)
    est, low, high = (nan if d[k] is None else float(d[k]) for k in ("estimate", "low", "high"))
    return Interval(est, low, high, int(d["n"]))


def row_from_dict(m: dict[str, Any]) -> ModelRow:
    """A leaderboard row read back from its JSON form (`model_dict`): Markdown and HTML render the JSON's rows
    through the same columns as every other view (figures.LEADERBOARD), so the formats never disagree."""
    nan = math.nan
    return ModelRow(
        model=m["model"], quality=_interval(m["quality"]), planned=m["planned"], calls=m["calls"],
        answered=m["answered"], errored=m["errored"], errors=m["errors"], retries=m["retries"], passed=m["passed"],
        unscored=m["unscored"], pass_at={int(k): nan if v is None else v for k, v in m["pass_at"].items()},
        consistency=nan if m["consistency"] is None else m["consistency"], spend=m["spend"], tokens=m["tokens"],
        cost_per_correct=m["cost_per_correct"], tokens_per_correct=m["tokens_per_correct"],
        cost_per_answered=m["cost_per_answered"], latency_p50=m["latency_ms"]["p50"],
        latency_p95=m["latency_ms"]["p95"], latency_p99=m["latency_ms"]["p99"], ttft_p50=m["ttft_ms"]["p50"],
        ttft_p95=m["ttft_ms"]["p95"], sealed=_interval(m["sealed"]), on_cost_front=m["on_cost_front"],
        on_latency_front=m["on_latency_front"], rank=m.get("rank"), tied=bool(m.get("tied")),
        common=_interval(m.get("score")), unranked=m.get("unranked"), order_note=m.get("order_note"),
        paradox=m.get("coverage_paradox"), weighted=_interval(m["weighted"]) if m.get("weighted") else None)


def _weighted(w: Interval | None) -> str:
    return f"{score(w.estimate)} ({interval(w.low, w.high, w.n)})" if w is not None and w.n else NOTHING


WEIGHTED: Column[ModelRow] = Column("weighted", lambda r: r.weighted, _weighted, True, 6)
"""The report's one column beyond figures.LEADERBOARD, after "own", when the project weights its strata."""


def leaderboard_rows(rep: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The leaderboard's head and cells: every column of figures.LEADERBOARD (as the console and the headless
    table show them), in the coverage-fair order, and the stratum-weighted score where the project weights."""
    rows = [row_from_dict(m) for m in rep["leaderboard"]]
    columns = LEADERBOARD
    if any(r.weighted is not None for r in rows):
        at = next(i for i, c in enumerate(LEADERBOARD) if c.title == "own") + 1
        columns = (*LEADERBOARD[:at], WEIGHTED, *LEADERBOARD[at:])
    return ["#", *(c.title for c in columns)], [[str(i), *(c.cell(r) for c in columns)] for i, r in enumerate(rows, 1)]


SEALED_HEAD = ("model", "working", "sealed", "sealed 95% CI", "sealed n", "gap (stratum-matched)", "gap 95% CI",
               "strata matched", "outside its interval")


def _sealed_rows(rep: dict[str, Any]) -> list[list[str]]:
    return [[m["model"], fixed(m["quality"]["estimate"]), fixed(m["sealed"]["estimate"]), _ci(m["sealed"]),
             str(m["sealed"]["n"]), fixed(m["sealed_gap"]),
             _ci(m["sealed_gap_interval"]) if m["sealed_gap_interval"] else "-", ", ".join(m["sealed_gap_strata"]),
             "yes" if m["sealed_gap_outside"] else "no"] for m in rep["leaderboard"] if m["sealed"]]


SEALED_WORDS = ("Scored apart from working cases; only aggregates are shown. The gap is working − sealed within the "
                "strata both splits have, weighted by the sealed cases' mix, with a bootstrap interval. Only a gap "
                "that is large and outside its interval suggests the working cases leaked into training.")


def _ranking_notes(rep: dict[str, Any]) -> list[str]:
    """Who is listed apart and why, where a verdict placed the order, and coverage paradoxes."""
    out = []
    for m in rep["leaderboard"]:
        if m["unranked"]:
            out.append(f"{m['model']}: unranked, {m['unranked']}")
        if m["order_note"]:
            out.append(f"* {m['model']}: {m['order_note']}")
    out += [f"! {p['model']}: {p['text']}" for p in rep.get("coverage_paradoxes", [])]
    return out


REVERSAL_WORDS = ("Each cell is the model's score over the group's cases it has scores for (n). ⚠ marks a subgroup "
                  "reversal: a model that beats another overall (decided, Holm over all pairs) whose paired interval "
                  "inside the group excludes zero the other way, Holm-adjusted over every group tested.")


def _strata_rows(rep: dict[str, Any], *, compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """Groups as rows, models as columns; `compact` (a terminal) keeps one figure per cell, the interval and n
    left out first, so the table meant for comparing models keeps them all at 80 columns (issue 37)."""
    models = [m["model"] for m in rep["leaderboard"]]
    flagged = {(v["group"], v["model"]) for v in rep["reversals"]}
    head = ["group", "kind", "cases", *models]
    rows = []
    for g in rep["strata"]:
        cells = [g["group"], g["kind"], str(g["cases"])]
        for m in models:
            iv = g["scores"].get(m)
            text = NOTHING if iv is None or iv["n"] == 0 else f"{iv['estimate']:.3f}" if compact else \
                f"{iv['estimate']:.3f} ({_ci(iv)}, n {iv['n']})"
            cells.append(text + (" ⚠" if (g["group"], m) in flagged else ""))
        rows.append(cells)
    return head, rows



BUDGETS_WORDS = ("Recommended from this run's answers (steps 2 and 4 of the tuning order): max_tokens from the "
                 "output tokens of the answers that passed and the answers stopped at the limit; timeout_s from "
                 "the durations of the attempts that answered; each says what it rests on, or that the evidence is not "
                 "enough. `arena tune --project P --write` writes the ones with evidence.")


def budget_items(budgets: dict[str, Any] | None) -> list[tuple[str, str, list[str]]]:
    """(model, verdict, evidence lines) for every recommendation, the run's one timeout_s last; a verdict that does
    not name its setting ("not enough evidence: ...") is said after it."""
    if not budgets:
        return []
    out: list[tuple[str, str, list[str]]] = []
    for model, m in budgets["models"].items():
        for label, rec in (("max_tokens", m["max_tokens"]),
                           *((f"max_tokens ({kind} cases)", r) for kind, r in m["max_tokens_by_scorer"].items()),
                           ("timeout_s", m["timeout_s"])):
            verdict = rec["verdict"] if label in rec["verdict"] else f"{label}: {rec['verdict']}"
            out.append((model, verdict, rec["detail"]))
    rt = budgets["run_timeout_s"]
    out.append(("[run]", rt["verdict"] if rt else f"timeout_s {budgets['timeout_s']:g}: not enough evidence for every "
                "model to recommend the one limit they share", []))
    return out



def _concurrency_rows(rep: dict[str, Any]) -> list[list[str]]:
    return [[c["model"], c["verdict"] + (f" → {c['setting']}" if c.get("setting") else ""), ", ".join(
        f"{lv['level']}: {fixed(lv['goodput'], 2)}/s, 429s {pct(lv['limited_share'])}, n {lv['answered']}"
        for lv in c["levels"] if lv["measured"]) or "none measured"] for c in rep.get("concurrency") or []]



def _mode_rows(rep: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The failure-mode table: one row per model, a column per mode any model shows, count and share."""
    per_model: dict[str, dict[str, int]] = rep.get("failure_modes", {})
    modes = [m for m in FAILURE_MODES if any(m in d for d in per_model.values())]
    rows = []
    for model, counts in per_model.items():
        failed = sum(counts.values())
        rows.append([model, str(failed)] + [f"{counts[m]} ({counts[m] / failed:.0%})" if counts.get(m) else ""
                                            for m in modes])
    return ["model", "failed", *modes], rows


def _unscored_rows(rep: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Per model, its calls that have no score for a reason other than the model's answer."""
    head = ["model", "unjudged", "awaiting judge", "judge_error"]
    rows = [[model, str(d.get("unjudged", 0)), str(d.get("awaiting_judge", 0)), str(d.get("judge_error", 0))]
            for model, d in (rep.get("unscored") or {}).items()]
    return head, rows


def _judge_rows(spend: dict[str, Any]) -> list[list[str]]:
    return [[j["judge"], str(j["calls"]), str(j["judge_errors"]), str(j["retries"]), str(j["tokens"]),
             money(j["cost"])] for j in spend["judges"]]


JUDGE_HEAD = ("judge", "judge calls", "judge errors", "retries", "tokens", "spend")


def _reasoning_cell(r: dict[str, Any] | None) -> str:
    """'400/call · 57% of spend' in the cost table (of output tokens where the model has no price)."""
    if r is None:
        return ""
    share = r.get("spend_share")
    return (f"{r['per_call']:.0f}/call · " + (f"{share:.0%} of spend" if share is not None
                                               else f"{r['share']:.0%} of output"))


def _reasoning_note(reasoning: dict[str, dict[str, Any]]) -> str:
    """Each reasoning model's thinking in its spend: tokens per call and their share of its output tokens."""
    parts = [f"{m}: {r['per_call']:.0f} reasoning tokens per call that reasoned ({plural(r['calls'], 'call')}), "
             f"{r['share']:.0%} of those calls' output tokens and so of their output spend"
             + (f", {r['spend_share']:.0%} of the model's whole spend" if r.get("spend_share") is not None else "")
             + (f"; estimated for {r['estimated']} of them" if r["estimated"] else "")
             for m, r in reasoning.items()]
    return ("Reasoning (counted in the tokens and spend above, never scored): " + "; ".join(parts) + "."
            if parts else "")


def _estimated_cell(e: dict[str, int] | None) -> str:
    return "-" if not e else f"{e['estimated']} of {plural(e['calls'], 'call')}"


def _estimated_note(est: dict[str, dict[str, int]]) -> str:
    """Which models' tokens and cost are arenatui's estimate (the server sent no usage for those calls)."""
    which = ", ".join(f"{m} ({_estimated_cell(e)})" for m, e in est.items())
    return (f"Estimated: the server reported no token usage for some calls of {which}; their tokens, and so their "
            "spend and $/correct, are arenatui's estimate (about 4 characters a token), not the server's count.")


def _spend_words(spend: dict[str, Any]) -> str:
    if not spend["judges"]:  # no judge: no judges' figure (a "$0" there reads as a judge that cost nothing)
        return f"Total spend {money(spend['total'])}."
    return (f"Total spend {money(spend['total'])}: models {money(spend['candidates'])}, judges "
            f"{money(spend['judges_total'])}.")



def _judged_words(j: dict[str, Any]) -> str:
    """After the scorer's name: its judge, judged N of M cases (its sample), judge calls stored."""
    sample = f"sample {j['sample']:g}" if j["sample"] <= 1 else f"sample {int(j['sample'])} cases"
    return (f"judge {j['judge']}: judged {j['judged']} of {plural(j['cases'], 'case')} ({sample}); "
            f"{j['judgments']} of {j['planned_judgments']} judge calls stored")


def _judged_ids(j: dict[str, Any]) -> str:
    ids = ", ".join(j["judged_case_ids"]) or "none"
    return ids + (f", … and {j['more']} more" if j["more"] else "")



F1_HEAD = ("model", "scorer", "macro-F1", "95% CI", "cases", "calls", "F1 per label (n cases)")
F1_WORDS = ("The interval resamples cases. Each label's F1 is followed by its number of cases; ⚠ marks a label with "
            "fewer than 5, whose F1 rests on too little to read alone.")


def _f1_rows(classification: dict[str, dict[str, Any]]) -> list[list[str]]:
    def label(lb: str, f: float, n: int) -> str:
        return f"{lb} {f:.2f} (n {n}{' ⚠' if n < 5 else ''})"

    return [[model, name, fixed(v["macro_f1"]), _ci(v["interval"]) if v.get("interval") else "-",
             str(v["interval"]["n"]) if v.get("interval") else "-", str(v["calls"]),
             ", ".join(label(lb, f, v.get("label_cases", {}).get(lb, 0)) for lb, f in v["per_label"].items())]
            for model, by_scorer in classification.items() for name, v in by_scorer.items()]


def _variant_sections(rep: dict[str, Any]) -> list[tuple[str, str, tuple[list[str], list[list[str]]]]]:
    """(title, words, table) of the prompt-variant and repair sections a report has."""
    from arenatui.present.variant_tables import (
        FOLLOW_UP_WORDS,
        SPREAD_WORDS,
        follow_up_rows,
        variant_pair_rows,
        variant_score_rows,
    )

    out = []
    rob = rep.get("prompt_variants")
    if rob:
        out.append(("Prompt variants", f"Score per model and prompt variant ({rob['level']:.0%} intervals over "
                                       f"cases). {SPREAD_WORDS}", variant_score_rows(rob)))
        if rob["pairs"]:
            out.append(("Does the ordering survive the prompt?", "Each pair's paired verdict under every variant.",
                        variant_pair_rows(rob)))
    if rep.get("follow_ups"):
        out.append(("Repairs and escalation", FOLLOW_UP_WORDS, follow_up_rows(rep["follow_ups"])))
    return out



CONDITIONS_WORDS = ("Conditions differ between candidates: per-model settings are allowed, never silent. A shorter "
                    "timeout flatters a slow model's percentiles by turning slowness into errors; a different max "
                    "tokens, system prompt or temperature changes what is measured.")



AT_LOAD_HEAD = ("model", "quality", "p95 ms (95% CI), n", "errors", "429s", "goodput", "$/correct", "95% CI", "p50 ms",
                "p99 ms", "TTFT p50", "TTFT p95", "timeouts", "offered/s", "achieved/s", "front", "load run", "flag")
"""What decides first (quality beside p95, errors and 429s at the target) on the left: on a phone the rest scrolls
sideways."""


def at_load_words(section: dict[str, Any]) -> str:
    return (f"Each model's sweep quality and cost per correct case beside its load run at the target load, "
            f"{section['target']}: latencies and TTFT from schedule (what a user arriving then waited), error, "
            "timeout and 429 shares at that rate, goodput under the load run's SLO. p95 carries a distribution-free "
            f"95% interval and its n (answered requests); under {MIN_ANSWERED} it is not enough evidence and stays "
            "off the front. The front is quality against p95 at the target load, among the candidates not "
            "eliminated.")


def _p95_cell(r: dict[str, Any]) -> str:
    """p95 at load with its interval and n, or "not enough evidence" beside its n."""
    p95, n = r["latency_ms"]["p95"], r.get("answered")
    if r.get("p95_evidence"):
        return f"{ms(p95)}, n {n}: not enough evidence" if p95 is not None else f"n {n}: not enough evidence"
    lo, hi = r.get("p95_low"), r.get("p95_high")
    band = f" ({ms(lo)}–{ms(hi)})" if lo is not None and hi is not None else ""
    return f"{ms(p95)}{band}, n {n}" if n is not None else ms(p95)


def at_load_rows(section: dict[str, Any]) -> list[list[str]]:
    out = []
    for r in section["rows"]:
        quality = fixed(r["quality"])
        sweep = [money(r["cost_per_correct"]), interval(r["quality_low"], r["quality_high"], r["n"])]
        if r["load_run"] is None:
            out.append([r["model"], quality, "-", "-", "-", "-", *sweep, *["-"] * 8, "none", "no load run"])
            continue
        lat, ttft = r["latency_ms"], r["ttft_ms"]
        goodput = "no SLO" if r["goodput_share"] is None else f"{pct(r['goodput_share'])} ({r['slo']})"
        out.append([r["model"], quality, _p95_cell(r), pct(r["error_share"], decimals=1),
                    pct(r["rate_limited_share"], decimals=1), goodput, *sweep, ms(lat["p50"]), ms(lat["p99"]),
                    ms(ttft["p50"]), ms(ttft["p95"]), pct(r["timeout_share"], decimals=1), fixed(r["offered_rate"], 2),
                    fixed(r["achieved_rate"], 2), "yes" if r["on_front"] else "", r["load_run"], r["flag"] or ""])
    return out


def _series_lines(section: dict[str, Any]) -> list[str]:
    out = []
    for m, s in section.get("series", {}).items():
        if len(s["runs"]) > 1:
            out.append(f"{m}: p95 spread {s['spread']['text']}" if s["spread"]
                       else f"{m}: {len(s['runs'])} runs, no p95 spread measured")
    return out


NO_LOAD_WORDS = ("No candidate was load-tested: run each at the production rate for long enough to meet its slow "
                 "moments (arena load --project P --model KEY --rate R --duration 15m; [bakeoff] target_rate names R), "
                 "then decide again.")




# ---- sections -------------------------------------------------------------------------------------------------


def conditions_blocks(conditions: Sequence[dict[str, Any]]) -> list[Block]:
    """Identical conditions, or a warning naming each setting that differs between candidates."""
    if not conditions:
        return []
    return [Callout((Para((Strong("Warning."), " " + CONDITIONS_WORDS)),
                     Bullets(tuple(f"⚠ {c['text']}" for c in conditions))))]


def pair_item(p: dict[str, Any]) -> Text:
    """One pair's paired verdict, its probability, Holm-adjusted p and n (and why its cases differ)."""
    note = f"; {p['coverage_note']}" if p["coverage_note"] else ""
    return (Strong(f"{p['a']} vs {p['b']}"), ": ", Mark(p["verdict"], "decided" if p["decided"] else "open"),
            f"; P({p['a']} > {p['b']}) = {fixed(p['p_a_better'], 3)}, Holm-adjusted p = {fixed(p['p_holm'], 4)}, "
            f"n = {p['diff']['n']}{note}")


def at_load_blocks(section: dict[str, Any], eliminated: Collection[str] = ()) -> list[Block]:
    """Quality beside load at the target: the table (what decides first, then the rest of the latencies and rates:
    two tables in HTML, whose 18 columns in one were wider than a desktop page), flagged runs, the frontier of
    quality against p95 at the target (eliminated candidates drawn as ruled out) and repeated runs' spread."""
    head = Heading("Quality beside load at the target")
    if not any(r["load_run"] for r in section["rows"]):  # a table of dashes says less than one sentence
        return [head, Para(NO_LOAD_WORDS)]
    out: list[Block] = [head, Para(at_load_words(section)),
                        table(AT_LOAD_HEAD, at_load_rows(section), "names", split=AT_LOAD_HEAD.index("p50 ms"),
                              split_words="Latencies and rates at the target (same order):", split_cls="names load")]
    flagged = [r for r in section["rows"] if r.get("flag")]
    if flagged:
        out.append(Bullets(tuple(f"⚠ {r['model']} (load run {r['load_run']}): {r['flag']}" for r in flagged)))
    out.append(Figure((scatter(
        [(r["model"], r["latency_ms"]["p95"], r["quality"], r["on_front"]) for r in section["rows"]
         if r["load_run"] and r["latency_ms"]["p95"] is not None and r["quality"] is not None],
        "p95 latency from schedule at the target load, ms", ms,
        {r["model"]: "eliminated" if r.get("eliminated") else f"n {r['answered']}: not enough evidence"
         for r in section["rows"] if r.get("eliminated") or r.get("p95_evidence")}, out=eliminated),)))
    series = _series_lines(section)
    if series:
        out += [Para("Repeated load runs (the same profile at different times):"), Bullets(tuple(series))]
    return out


def _leaderboard(rep: dict[str, Any]) -> list[Block]:
    head, rows = leaderboard_rows(rep)
    # in HTML two tables, the model named in each, so a desktop page shows every column without scrolling sideways
    # (one table of 22 columns was 2,000 px wide at 1280); spend, latency and reliability second
    out: list[Block] = [
        Heading("Leaderboard"),
        Para("Quality is over scored calls (trials averaged per case), with a 95% bootstrap interval over cases; "
             "coverage is answered / planned calls."),
        table(head, rows, "names board", split=head.index("$/answered") if "$/answered" in head else None,
              split_words="Spend, latency and reliability (same order):", split_cls="names", key=head.index("model"))]
    notes = _ranking_notes(rep)
    if notes:
        out.append(Bullets(tuple(notes)))
    for title, words, (vhead, vrows) in _variant_sections(rep):
        out += [Heading(title), Para(words), table(vhead, vrows)]
    out.append(Heading("Which models are separated"))
    out.append(Bullets(tuple(pair_item(p) for p in rep["pairs"])) if rep["pairs"]
               else Para("Fewer than two models answered: nothing to compare."))
    return out


def _strata_and_sealed(rep: dict[str, Any], terminal: bool) -> list[Block]:
    out: list[Block] = []
    if rep["strata"]:
        head, rows = _strata_rows(rep, compact=terminal)
        words = REVERSAL_WORDS + (" Here each cell is the score alone; the intervals and n are in the file (arena "
                                  "report RUN -o FILE)." if terminal else "")
        out += [Heading("Strata and tags"), Para(words), table(head, rows)]
    sealed = _sealed_rows(rep)
    if sealed:
        out += [Heading("Sealed cases"), Para(SEALED_WORDS), table(SEALED_HEAD, sealed)]
    return out


def _cost(rep: dict[str, Any]) -> list[Block]:
    """Cost per correct case and the frontiers: the two charts in HTML, their figures as a table in Markdown."""
    lb = rep["leaderboard"]
    est = rep.get("estimated_tokens") or {}
    reasoning = rep.get("reasoning") or {}
    cost_table = table(
        ("model", "spend", "tokens", "tokens estimated", *(("reasoning",) if reasoning else ()), "$/correct",
         "tokens/correct", "$/answered", "quality-cost front", "quality-p95 front"),
        [[m["model"], money(m["spend"]), str(m["tokens"]), _estimated_cell(est.get(m["model"])),
          *((_reasoning_cell(reasoning.get(m["model"])),) if reasoning else ()), money(m["cost_per_correct"]),
          fixed(m["tokens_per_correct"], 0), money(m["cost_per_answered"]), "yes" if m["on_cost_front"] else "",
          "yes" if m["on_latency_front"] else ""] for m in lb])
    charts = (
        scatter([(m["model"], m["cost_per_correct"], m["quality"]["estimate"], m["on_cost_front"]) for m in lb
                 if m["cost_per_correct"] is not None and m["quality"]["estimate"] is not None],
                "$ per correct answer", money, log_x=True),
        scatter([(m["model"], m["latency_ms"]["p95"], m["quality"]["estimate"], m["on_latency_front"]) for m in lb
                 if m["latency_ms"]["p95"] is not None and m["quality"]["estimate"] is not None],
                "p95 latency, ms", number))
    out: list[Block] = [
        Heading("Cost and frontier"),
        Para("$/correct is the spend of every attempt (retries and errored calls included) over passed calls; it is "
             "each model's own spend (unscored calls' left out), never a judge's."),
        Figure(charts, (cost_table,), caption="Filled points are Pareto-optimal.")]
    if est:
        out.append(Para(_estimated_note(est)))
    if reasoning:
        out.append(Para(_reasoning_note(reasoning)))
    spend = rep.get("spend")
    if spend:
        out.append(Para(_spend_words(spend)))
        if spend["judges"]:
            out += [Heading("Judges", 3),
                    Para("Each judge's calls, apart from the models': one per judged call (a call judged again keeps "
                         "its latest verdict and adds its spend)."),
                    table(JUDGE_HEAD, _judge_rows(spend))]
    if rep.get("judged"):
        out += [Heading("Judged cases"),
                Para("An llm_judge scorer judges the same deterministic sample of its cases for every model; its "
                     "other cases stay unscored."),
                Bullets(tuple((Strong(j["scorer"]), f" ({_judged_words(j)}). Judged: {_judged_ids(j)}")
                              for j in rep["judged"]))]
    return out


def _wrong_answers(rep: dict[str, Any]) -> list[Block]:
    out: list[Block] = [Heading("What the wrong answers looked like")]
    head, mode_rows = _mode_rows(rep)
    if len(head) > 2:
        out += [Para("Failed (answered, not passed) calls by failure mode: \"0.78, mostly refusals\" and \"0.78, "
                     "mostly invalid JSON\" call for different fixes."), table(head, mode_rows)]
    else:
        out.append(Para("No answer failed."))
    head, unscored = _unscored_rows(rep)
    if unscored:
        out += [Para("Not failures, listed apart: unjudged (outside the judge's sample: never scored), awaiting judge "
                     "(the run stopped before its judge; resume judges it), judge_error (judging failed: the call "
                     "counts as errored, against coverage, never as a zero)."), table(head, unscored)]
    classification = rep.get("classification") or {}
    if classification:
        out += [Heading("Classification (macro-F1)"),
                Para("Macro-F1 averages each label's F1, so a model that answers the majority class everywhere "
                     f"scores low even when its accuracy is high. {F1_WORDS}"),
                table(F1_HEAD, _f1_rows(classification))]
    return out


def _settings(rep: dict[str, Any]) -> list[Block]:
    """Concurrency verdicts (with each model's goodput by level as a chart in HTML), max_tokens and timeout_s
    recommendations, the failures and the run's settings."""
    out: list[Block] = []
    conc = _concurrency_rows(rep)
    if conc:
        out += [Heading("Concurrency"),
                Para("Each model's verdict from the levels it was held at (measured: at least 20 answered calls over "
                     "at least 2 median latencies held)."),
                table(("model", "verdict", "measured levels"), conc)]
        for c in rep.get("concurrency") or []:
            if c["levels"]:
                out.append(Figure((goodput_svg(c),), title=f"{c['model']}: goodput by level"))
    budgets = budget_items(rep.get("budgets"))
    if budgets:
        out += [Heading("max_tokens and timeout_s"), Para(BUDGETS_WORDS.replace("`", "")),
                Bullets(tuple(Item((Strong(model), f": {verdict}"), tuple(detail))
                              for model, verdict, detail in budgets))]
    out.append(Heading("Failures"))
    # a list, not a table: a provider's message wraps on a phone instead of running off the side
    out.append(Bullets(tuple((Strong(m), f": {f['error_class']} × {f['calls']}: ", Code(f["message"]))
                             for m, items in rep["failures"].items() for f in items))
               if rep["failures"] else Para("No call errored."))
    out += [Heading("Run settings"),
            Para("Secrets are never stored: API keys appear as the names of their environment variables; headers and "
                 "extra request fields are left out."),
            Pre(json.dumps(rep["settings"], indent=2, ensure_ascii=True), "json")]
    return out


def report_document(rep: dict[str, Any], *, terminal: bool = False) -> Document:
    """The decision report of `rep` (commands/report.build_report's dict); `terminal`: for a terminal's width (the
    strata table one figure per cell)."""
    run = rep["run"]
    blocks: list[Block] = [Para(f"Status {run['status']}; started {run['started_at']}; {run['stored']} of "
                                f"{plural(run['planned'], 'call')} stored.")]
    blocks += conditions_blocks(rep.get("conditions") or [])
    if rep["notes"]:
        blocks.append(Bullets(tuple(rep["notes"])))
    blocks += _leaderboard(rep)
    if rep.get("at_load"):
        blocks += at_load_blocks(rep["at_load"])
    blocks += _strata_and_sealed(rep, terminal)
    blocks += _cost(rep)
    blocks += _wrong_answers(rep)
    blocks += _settings(rep)
    return Document(f"Decision report: {run['project']}, run {run['run_id']}", tuple(blocks))

"""`arena export`: a run's calls as JSON lines or CSV, one row per call; sealed cases only as per-model aggregates.

Rows stream from the store in batches, so a million-call run exports in bounded memory. After the calls: one row
per judge (its calls, judge errors, tokens, spend) and one with the run's spend (models + judges = total).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any, TextIO

import numpy as np

from arenatui.kernel.events import split_lane
from arenatui.kernel.text import SpreadsheetCsv, printable
from arenatui.results.read import read_run
from arenatui.stats.items import RunResults
from arenatui.store import Store
from arenatui.store.queries import RunPlan, RunSpend, iter_call_rows

FORMATS = ("jsonl", "csv")
COLUMNS: tuple[str, ...] = (
    "row", "run_id", "model_key", "case_id", "stratum", "tags", "trial", "status", "score", "passed", "error_class",
    "error_message", "attempts", "latency_ms", "ttft_ms", "total_ms", "input_tokens", "output_tokens", "cost",
    "output", "cases", "calls", "answered", "failure_mode", "score_detail", "judge_key", "judge_errors",
    "candidate_cost", "judge_cost", "tokens_estimated", "rank", "own_score", "note", "variant", "scored",
    "reasoning_tokens", "answer_ttft_ms",
)
"""`row` is 'call' for one call, 'sealed_aggregate' for one model's sealed cases together (cases, scored, calls and
answered are set only there: cases = the sealed cases, scored = those with a score; score is then the mean per-case
score over the scored ones, as the report says both), 'judge_aggregate'
for one judge model (judge_key, calls = judgments, judge_errors, attempts, tokens, cost = its spend) and
'spend_total' once when anything is stored (candidate_cost = the models' spend, judge_cost = the judges',
cost = their total), then 'leaderboard' once per model, in the coverage-fair order every view shows (rank, empty
when unranked; score = quality over the cases every ranked model has scores for and cases = their number; own_score
over the model's own scored cases and answered = their number; note = why unranked, or a verdict/paradox note).
`tokens_estimated` (calls) is true when the server reported no usage: the call's tokens, and so its cost, are
arenatui's estimate. `variant` (calls) is the prompt variant the call was asked with (``[[prompts]]``; empty
without). `reasoning_tokens` (calls): of output_tokens, those a reasoning model spent thinking (empty when it showed
no reasoning); `answer_ttft_ms`: its first answer token, after the reasoning (ttft_ms is the first token of any
kind)."""


def call_records(store: Store, plan: RunPlan) -> Iterator[dict[str, Any]]:
    run_id = plan.record.run_id
    cases = {c.id: c for c in plan.cases}
    for r in iter_call_rows(store, run_id):
        case = cases.get(r.case_id)
        if case is None or case.sealed:
            continue
        model, variant = split_lane(r.model_key)
        yield {"row": "call", "run_id": run_id, "model_key": model, "variant": variant, "case_id": r.case_id,
               "stratum": case.stratum, "tags": list(case.tags), "trial": r.trial, "status": r.status,
               "score": r.score, "passed": r.passed, "error_class": r.error_class, "error_message": r.error_message,
               "attempts": r.attempts, "latency_ms": r.latency_ms, "ttft_ms": r.ttft_ms, "total_ms": r.total_ms,
               "input_tokens": r.input_tokens, "output_tokens": r.output_tokens, "cost": r.cost, "output": r.output,
               "failure_mode": r.failure_mode, "score_detail": r.score_detail,
               "tokens_estimated": r.tokens_estimated, "reasoning_tokens": r.reasoning_tokens,
               "answer_ttft_ms": r.answer_ttft_ms}


def sealed_records(results: RunResults) -> Iterator[dict[str, Any]]:
    sealed = results.sealed
    if not sealed.any():
        return
    for i, m in enumerate(results.models):
        scores = results.case_scores(m)[sealed]
        answered = scores[~np.isnan(scores)]
        yield {"row": "sealed_aggregate", "run_id": results.run_id, "model_key": m,
               "score": float(answered.mean()) if answered.size else None,
               "passed": int(results.passed[i][sealed].sum()), "attempts": int(results.attempts[i][sealed].sum()),
               "cost": float(results.cost[i][sealed].sum()), "cases": int(sealed.sum()), "scored": int(answered.size),
               "calls": int(results.calls[i][sealed].sum()), "answered": int(results.answered[i][sealed].sum())}


def leaderboard_records(results: RunResults) -> Iterator[dict[str, Any]]:
    """One row per model in the coverage-fair order (stats.leaderboard): the same ranking as every other view."""
    from arenatui.stats import leaderboard

    for r in leaderboard(results):
        note = "; ".join(x for x in (r.tied and f"tied: rank {r.rank_text}", r.unranked and f"unranked, {r.unranked}",
                                     r.order_note, r.paradox) if x)
        yield {"row": "leaderboard", "run_id": results.run_id, "model_key": r.model, "rank": r.rank,
               "score": r.common.estimate if r.rank else None, "cases": r.common.n if r.rank else None,
               "own_score": r.quality.estimate if r.quality.n else None, "answered": r.quality.n,
               "note": note or None}


def spend_records(run_id: str, spend: RunSpend) -> Iterator[dict[str, Any]]:
    """Each judge's calls and spend, then the run's total: what the models and the judges spent together."""
    for j in spend.judges:
        yield {"row": "judge_aggregate", "run_id": run_id, "judge_key": j.judge, "calls": j.calls,
               "judge_errors": j.errors, "attempts": j.attempts, "input_tokens": j.input_tokens,
               "output_tokens": j.output_tokens, "cost": j.cost}
    yield {"row": "spend_total", "run_id": run_id, "candidate_cost": spend.candidates,
           "judge_cost": spend.judge_total, "cost": spend.total}


def write_export(store: Store, run: str, fmt: str, out: TextIO, *, terminal: bool = False, raw: bool = False) -> int:
    """Write every exported row to `out`; returns the number of rows. On a terminal, control characters in model
    output are shown as escapes instead of reaching it. A CSV cell that a spreadsheet would read as a formula gets a
    leading `'` unless `raw` (see `spreadsheet_cell`)."""
    stored = read_run(store, run, latency=False, detail=False)
    plan, results, spend = stored.plan, stored.results, stored.spend
    n = 0
    anything = bool(results.calls.sum()) or bool(spend.judges)  # a run with nothing stored exports nothing
    records = itertools.chain(call_records(store, plan), sealed_records(results),
                              spend_records(plan.record.run_id, spend) if anything else (),
                              leaderboard_records(results) if results.calls.sum() else ())
    if fmt == "jsonl":
        for rec in records:
            out.write(json.dumps(rec, ensure_ascii=terminal, allow_nan=False) + "\n")
            n += 1
        return n
    w = SpreadsheetCsv(out, raw=raw)
    w.writerow(COLUMNS)
    for rec in records:
        extra = rec.keys() - set(COLUMNS)
        if extra:  # a record with a column the header lacks is this module's bug: said, never dropped
            raise ValueError(f"export record has columns outside COLUMNS: {sorted(extra)}")
        row = [rec.get(k) for k in COLUMNS]
        row = [";".join(v) if isinstance(v, list) else v for v in row]
        if terminal:
            row = [printable(v) if isinstance(v, str) else v for v in row]
        w.writerow(row)
        n += 1
    return n


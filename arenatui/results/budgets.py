"""The evidence `arena tune` needs for `max_tokens` and `timeout_s` (arenatui.tuning.budgets), built from a stored
run's records (arenatui.store.queries.budget_rows, timed_out_attempts).

Reads the stored configuration as stored (never re-validated: no plugin import, no file reads) for each model's
current limits and price, and the results and failed attempts for the evidence.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from arenatui.kernel.events import lane_key
from arenatui.scoring.failure_modes import TRUNCATED_FINISH
from arenatui.store.db import Store
from arenatui.store.queries import budget_rows, timed_out_attempts
from arenatui.tuning.budgets import Answer, BudgetEvidence, ModelBudget

__all__ = ["BudgetEvidence", "ModelBudget", "budget_evidence"]

_JUDGE_PREFIX = "judge:"


def _num(x: Any, default: float) -> float:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else default


def _tuner_probes(changes: Sequence[tuple[float, int, int, str | None, str]]
                  ) -> dict[str, Callable[[float | None], bool]]:
    """Per lane the auto-tuner moved, whether a call started at an epoch time did so above the level the tuner left
    it at (its last move): probes and a climb past the optimum, where a serial server queues the calls and their
    time says nothing of how long the provider takes to answer one (issue 36: 8 s from a call queued at 16)."""
    moves: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for at, _old, new, key, source in changes:
        if source == "tuner" and key is not None:
            moves[key].append((at, new))
    out: dict[str, Callable[[float | None], bool]] = {}
    for key, seq in moves.items():
        times = [at for at, _n in seq]
        levels = [n for _at, n in seq]
        settled = levels[-1]

        def above(started: float | None, times: list[float] = times, levels: list[int] = levels,
                  settled: int = settled) -> bool:
            if started is None:
                return False
            i = bisect.bisect_right(times, started) - 1
            return i >= 0 and levels[i] > settled

        out[key] = above
    return out


def _table(cfg: dict[str, Any], key: str) -> dict[str, Any]:
    t = cfg.get(key)
    return t if isinstance(t, dict) else {}


def budget_evidence(store: Store, run_id: str, model_key: str | None = None) -> BudgetEvidence:
    """Every model's evidence, or only `model_key`'s (one model's detail need not read the whole run)."""
    record = store.get_run(run_id)
    cfg = record.config
    defaults = _table(cfg, "defaults")
    run = _table(cfg, "run")
    default_max = int(_num(defaults.get("max_tokens"), 256))
    models: dict[str, ModelBudget] = {}
    for m in cfg.get("models") or ():
        if isinstance(m, dict) and isinstance(m.get("key"), str):
            models[m["key"]] = ModelBudget(m["key"], int(_num(m.get("max_tokens"), default_max)),
                                           _num(m.get("price_out_per_mtok"), 0.0))
    if model_key is not None:
        models = {k: v for k, v in models.items() if k == model_key}
    scorers = [s for s in cfg.get("scorers") or () if isinstance(s, dict)]
    kind_of = {str(s.get("name")): str(s.get("kind")) for s in scorers}
    default_kind = str(scorers[0].get("kind")) if scorers else "exact"
    case_kind = {str(c.get("id")): kind_of.get(str(c.get("scorer")), default_kind)
                 for c in cfg.get("cases") or () if isinstance(c, dict) and c.get("scorer") is not None}
    many_kinds = len(set(kind_of.values())) > 1
    per_kind: dict[str, dict[str, list[Answer]]] = defaultdict(lambda: defaultdict(list))
    probed = _tuner_probes(store.concurrency_changes(run_id))
    for key, case_id, status, passed, err, out_tok, finish, lat, conn_ms, est, reasoning, variant, started in \
            budget_rows(store, run_id, model_key):
        m = models.get(key)
        if m is None:
            continue
        if status == "errored" and err not in ("scoring_error", "judge_error"):
            continue  # the provider gave no answer: nothing to learn about its length
        a = Answer(int(out_tok or 0), bool(passed), finish in TRUNCATED_FINISH,
                   None if lat is None else lat / 1000.0, bool(est), int(reasoning or 0))
        m.answers.append(a)
        if lat is not None:
            above = probed.get(lane_key(key, variant or ""))
            if above is not None and above(started):
                m.above_settled += 1  # queued behind the tuner's own probes: no evidence of the provider's time
            else:
                m.answered_s.append((lat + (conn_ms or 0.0)) / 1000.0)
        if many_kinds:
            per_kind[key][case_kind.get(case_id, default_kind)].append(a)
    for key, n, streamed, no_token in timed_out_attempts(store, run_id, model_key):
        if key in models and not key.startswith(_JUDGE_PREFIX):
            m = models[key]
            m.timed_out, m.timed_out_streamed, m.timed_out_no_token = int(n), int(streamed), int(no_token or 0)
    for key, kinds in per_kind.items():
        if len(kinds) > 1:
            models[key].by_scorer = dict(kinds)
    return BudgetEvidence(record.run_id, _num(run.get("timeout_s"), 120.0), models)

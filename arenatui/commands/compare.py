"""`arena compare`: two models of a run, every pair (Holm), or two runs of one project, as text or JSON."""

from __future__ import annotations

import difflib
import json
import math
from typing import Any

import numpy as np
from rich.console import Console
from rich.text import Text

from arenatui.kernel.errors import PlanError
from arenatui.kernel.units import NOTHING, absent, plural, signed, signed_interval
from arenatui.present.charts import histogram
from arenatui.present.columns import HEADLINE, Column, p_better
from arenatui.present.safe_text import literal
from arenatui.present.terminal import plain_listing, print_listing
from arenatui.present.wording import clusters_note
from arenatui.results.read import read_run
from arenatui.stats import (
    Comparison,
    Disagreement,
    PairDecision,
    RunResults,
    all_pairs,
    compare_models,
    compare_runs,
    disagreements,
    group_differences,
    ranked_models,
)
from arenatui.stats.bootstrap import Interval
from arenatui.stats.compare import GATE_RULE
from arenatui.stats.jsonable import finite as _num
from arenatui.stats.jsonable import interval_dict, power_dict
from arenatui.store import Store
from arenatui.store.queries import resolve_run

POWER_BASIS = ("Power here is from the spread of per-case differences this pair showed (their errors as paired); "
               "`arena plan` assumes independent errors, so its figure for the same cases differs (usually larger); "
               "`arena plan --run RUN` plans from this run.")
"""Why compare's 80%-power figure differs from `arena plan`'s for the same cases."""


def require_model(results: RunResults, model: str, flag: str) -> str:
    if model in results.models:
        return model
    close = difflib.get_close_matches(model, results.models, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; the run has: {', '.join(results.models)}"
    raise PlanError(f"{flag}: no model {model!r} in run {results.run_id}{hint}")


def default_pair(results: RunResults) -> tuple[str, str]:
    """The top two models by quality (those that answered anything)."""
    ranked = ranked_models(results)
    if len(ranked) < 2:
        raise PlanError(f"run {results.run_id} has fewer than two models with answered calls: nothing to compare")
    return ranked[0], ranked[1]


def comparison_dict(c: Comparison) -> dict[str, Any]:
    return {"a": c.a, "b": c.b, "diff": interval_dict(c.diff), "p_a_better": _num(c.p_a_better),
            "p_value": _num(c.p_value), "decided": c.decided, "better": c.better, "verdict": c.verdict,
            "only_a": c.only_a, "only_b": c.only_b, "coverage_note": c.coverage_note, "power": power_dict(c.power),
            "clusters": c.clusters, "clustered_se": None if c.clustered_se is None else _num(c.clustered_se)}


def _print_json(console: Console, data: dict[str, Any]) -> None:
    """Plain JSON for scripts: no colour codes, every non-ASCII character escaped (nothing reaches a terminal raw)."""
    console.file.write(json.dumps(data, indent=2, ensure_ascii=True, allow_nan=False) + "\n")


def _few_clusters_note(intervals: list[Interval]) -> str | None:
    """The warning every clustered view prints under FEW_CLUSTERS clusters (wording.clusters_note)."""
    few = [iv.clusters for iv in intervals if iv.few_clusters and iv.clusters is not None]
    return clusters_note(min(few)) if few else None


def _fmt(v: float, digits: int = 3) -> str:
    return f"{v:.{digits}f}" if np.isfinite(v) else "-"


def compare_two(console: Console, results: RunResults, a: str, b: str, *, as_json: bool) -> None:
    c = compare_models(results, a, b)
    groups = group_differences(results, a, b)
    differ = disagreements(results, a, b)
    if as_json:
        out = comparison_dict(c)
        out["run_id"] = results.run_id
        out["groups"] = [{"group": g, "kind": k, **comparison_dict(x)} for g, k, x in groups]
        out["disagreements"] = [{"case_id": d.case_id, "score_a": d.score_a, "score_b": d.score_b} for d in differ]
        _print_json(console, out)
        return
    head = Text(f"Run {results.run_id}: ")
    head.append(literal(a, newlines=False)).append(" − ").append(literal(b, newlines=False))
    head.append(f" over {c.n} shared working cases")
    console.print(head)
    if c.n and c.diff.estimate == 0 and c.diff.low == 0 and c.diff.high == 0:
        console.print(f"  identical scores on all {plural(c.n, 'case')}: no interval to draw", markup=False)
    elif c.n:
        console.print(f"  difference {signed(c.diff.estimate)}, 95% CI {signed_interval(c.diff.low, c.diff.high, c.n)}"
                      f", P(A > B) = {p_better(c)}", markup=False)
    console.print(Text("  ").append(literal(c.verdict, "bold", newlines=False)))
    if c.power is not None:  # issue 37 item 5: beside `arena plan`'s figure for the same cases it must say why
        console.print(f"  {POWER_BASIS}", markup=False)
    if c.coverage_note:
        console.print(Text("  ").append(literal(c.coverage_note, newlines=False)))
    if c.clusters is not None:
        console.print(f"  clustered: {c.clusters} clusters ({results.cluster_by}), not cases: the interval is t on "
                      f"the clustered SE {_fmt(c.clustered_se or math.nan, 4)} with {c.clusters - 1} df, the "
                      "histogram resamples clusters", markup=False)
        few = _few_clusters_note([c.diff])
        if few:
            console.print("  " + few, markup=False)
    plain = plain_listing()  # into a pipe: no picture, and each table its own block (a blank line before it)
    if c.differences.size and not plain:
        console.print("  resampled differences A − B (│ marks zero, [ ] the 95% interval):", markup=False)
        hist = histogram(c.differences, max(10, min(60, console.width - 4)), 3, interval=(c.diff.low, c.diff.high))
        for line in hist.split("\n"):
            console.print(Text("  ").append_text(line))
    if groups:
        if plain:
            console.print()
        print_listing(console, GROUP_COLUMNS, groups,
                                      title="By stratum and tag (working cases both have scores for)")
    if differ:
        shown = differ[:20]
        more = f"; the first {len(shown)}" if len(differ) > len(shown) else ""
        if plain:
            console.print()
        print_listing(console, DISAGREE_COLUMNS, shown,
                                      title=f"Disagreements: {plural(len(differ), 'case')}, largest gap first{more}")


GROUP_COLUMNS: tuple[Column[tuple[str, str, Comparison]], ...] = (
    Column("group", lambda g: g[0], priority=HEADLINE, right=False),
    Column("kind", lambda g: g[1], priority=3, right=False),
    Column("n", lambda g: g[2].n, priority=4),
    Column("A − B", lambda g: g[2].diff.estimate if g[2].n else None, signed, priority=HEADLINE),
    Column("95% CI", lambda g: g[2].diff, lambda d: signed_interval(d.low, d.high, d.n), priority=8),
    Column("ordered", lambda g: g[2].better or "no", priority=HEADLINE, right=False),
)
DISAGREE_COLUMNS: tuple[Column[Disagreement], ...] = (
    Column("case", lambda d: d.case_id, priority=HEADLINE, right=False),
    Column("A", lambda d: d.score_a, lambda v: f"{v:.2f}", priority=HEADLINE),
    Column("B", lambda d: d.score_b, lambda v: f"{v:.2f}", priority=HEADLINE),
)
PAIR_COLUMNS: tuple[Column[PairDecision], ...] = (
    Column("A", lambda d: d.comparison.a, priority=HEADLINE, right=False),
    Column("B", lambda d: d.comparison.b, priority=HEADLINE, right=False),
    Column("n", lambda d: d.comparison.n, priority=4),
    Column("A − B", lambda d: d.comparison.diff.estimate if d.comparison.n else None, signed, priority=HEADLINE),
    Column("95% CI", lambda d: d.comparison.diff, lambda x: signed_interval(x.low, x.high, x.n), priority=8),
    Column("P(A > B)", lambda d: p_better(d.comparison), priority=6),
    Column("Holm p", lambda d: d.p_holm, lambda v: NOTHING if absent(v) else f"{v:.4f}", priority=7),
    Column("better", lambda d: d.better or "no ordering", priority=HEADLINE, right=False),
    Column("80% power", lambda d: None if d.decided else d.comparison.power,
           lambda pw: NOTHING if pw is None else f"{pw.difference:.3f}: ~{pw.cases}", priority=3, short="power"),
)


def compare_all(console: Console, results: RunResults, *, as_json: bool) -> None:
    answered = ranked_models(results)
    decisions = all_pairs(results, answered)
    if as_json:
        _print_json(console, {"run_id": results.run_id, "pairs": [
            {**comparison_dict(d.comparison), "p_holm": _num(d.p_holm), "decided_holm": d.decided,
             "better_holm": d.better, "verdict_holm": d.verdict} for d in decisions]})
        return
    print_listing(console, PAIR_COLUMNS, decisions,
                                  title=f"All {plural(len(decisions), 'pair')} of run {results.run_id} "
                                        "(Holm-adjusted at 5%)")
    if any(not d.decided and d.comparison.power for d in decisions):
        console.print("80% power: the difference D (observed, or the smallest these cases detect) and about how "
                      f"many cases give 80% power to detect it. {POWER_BASIS}", markup=False)
    if not answered or len(answered) < 2:
        console.print("Fewer than two models answered: nothing to compare.", markup=False)


ChangeRow = tuple[str, Comparison, str]
"""A row of the two-run table: a model (or '  stratum X' under it), its comparison, its verdict in words."""

CHANGE_COLUMNS: tuple[Column[ChangeRow], ...] = (
    Column("model", lambda r: r[0], priority=HEADLINE, right=False),
    Column("n", lambda r: r[1].n, priority=4),
    Column("new − old", lambda r: r[1].diff.estimate if r[1].n else None, signed, priority=HEADLINE),
    Column("95% CI", lambda r: r[1].diff, lambda x: signed_interval(x.low, x.high, x.n), priority=8),
    Column("verdict", lambda r: r[2], priority=HEADLINE, right=False),
)


def compare_two_runs(console: Console, old: RunResults, new: RunResults, *, as_json: bool) -> list[str]:
    """Prints the comparison; returns every decided regression, named (overall and per stratum, Holm)."""
    changes = compare_runs(old, new)
    if not changes:
        raise PlanError(f"runs {old.run_id} and {new.run_id} share no model: nothing to compare")
    regressions = [r for ch in changes for r in ch.regressions]
    family = changes[0].family
    if as_json:
        _print_json(console, {"old": old.run_id, "new": new.run_id, "regressions": regressions, "family": family,
                              "correction": GATE_RULE, "models": [
            {"model": c.model, "regression": c.regression, "p_holm": _num(c.p_holm), "decided_holm": c.decided,
             **comparison_dict(c.comparison),
             "strata": [{"stratum": s.stratum, "p_holm": _num(s.p_holm), "decided_holm": s.decided,
                         "regression": s.regression, **comparison_dict(s.comparison)} for s in c.strata]}
            for c in changes]})
        return regressions
    rows: list[ChangeRow] = []
    for ch in changes:
        x = ch.comparison
        rows.append((ch.model, x, ("REGRESSION: " if ch.regression else "") + (
            x.verdict if ch.decided or not x.decided else f"not decided after Holm over the family ({x.verdict})")))
        for st in ch.strata:
            x = st.comparison
            rows.append((f"  stratum {st.stratum}", x, ("REGRESSION: " if st.regression else "") + (
                x.verdict if st.decided or not x.decided else f"not decided after Holm over the family ({x.verdict})")))
    print_listing(console, CHANGE_COLUMNS, rows, block_below=0,
                  title=f"Run {new.run_id} against run {old.run_id}, model by model (new − old, shared cases)")
    console.print(f"Decisions are corrected by {GATE_RULE} ({plural(family, 'test')}): the gate's false alarm rate is "
                  "5% for the whole comparison, not per test."
                  + (" A stratum's regression counts even when the aggregate improved." if any(
                      ch.strata for ch in changes) else ""), markup=False)
    few = _few_clusters_note([ch.comparison.diff for ch in changes])
    if few:
        console.print(few, markup=False)
    return regressions


def run_compare(db: str | None, run: str, other: str | None, a: str | None, b: str | None, all_: bool,
                as_json: bool, console: Console, *, fail_on_regression: bool = False,
                cluster_by: str | None = None) -> int:
    """Returns the exit code: 1 when --fail-on-regression and a decided regression exists (named on stderr)."""
    if fail_on_regression and other is None:
        raise PlanError("compare: --fail-on-regression checks two runs; pass OLD and NEW run ids")
    if (a is None) != (b is None):
        raise PlanError("compare: pass both --a and --b (two models of the run), or neither for the top two")
    if all_ and a is not None:
        raise PlanError("compare: --all compares every pair; drop --a and --b, or drop --all")
    if other is not None and (all_ or a is not None):
        raise PlanError("compare: two runs are compared model by model; drop --a, --b and --all")
    with Store(db, read_only=True) as store:
        rec = resolve_run(store, run)
        results = read_run(store, rec, latency=False, detail=False).results.clustered_by(cluster_by)
        if other is not None:
            rec2 = resolve_run(store, other)
            if rec2.project != rec.project:
                raise PlanError(f"compare: run {rec.run_id} is of project {rec.project!r} and run {rec2.run_id} of "
                                f"{rec2.project!r}; two runs are compared only within one project")
            if rec2.run_id == rec.run_id:
                raise PlanError(f"compare: both runs are {rec.run_id}; pass two different runs")
            results2 = read_run(store, rec2, latency=False, detail=False).results.clustered_by(cluster_by)
    if other is not None:
        old, new = (results, results2) if rec.started_at <= rec2.started_at else (results2, results)
        regressions = compare_two_runs(console, old, new, as_json=as_json)
        if fail_on_regression and regressions:
            err = Console(stderr=True, highlight=False, soft_wrap=True)
            for r in regressions:
                err.print(Text("Regression: ").append(literal(r, newlines=False)))
            return 1
    elif all_:
        compare_all(console, results, as_json=as_json)
    else:
        if a is not None and b is not None:
            pair = (require_model(results, a, "--a"), require_model(results, b, "--b"))
            if pair[0] == pair[1]:
                raise PlanError(f"compare: --a and --b are both {a!r}; pass two different models")
        else:
            pair = default_pair(results)
        compare_two(console, results, *pair, as_json=as_json)
    return 0

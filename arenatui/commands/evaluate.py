"""End-of-run text for people: summary line, spend, errored calls, leaderboard (Rich, no markup from data)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console, RenderableType
from rich.text import Text

from arenatui.engine.client_load import OVERLOAD_CPU, OVERLOAD_S, sustained_overload
from arenatui.kernel.events import VARIANT_SEP, split_lane
from arenatui.kernel.redact import redact_urls_in_text
from arenatui.kernel.text import one_line
from arenatui.kernel.units import models_by_variants, money, plural
from arenatui.present.columns import LEADERBOARD, table_for_width
from arenatui.present.safe_text import literal
from arenatui.present.wording import LEADERBOARD_NOTE, clusters_note
from arenatui.stats import ModelRow, RunResults, leaderboard
from arenatui.store import Store
from arenatui.store.queries import RunPlan, RunSpend

if TYPE_CHECKING:
    from arenatui.plan import Plan
    from arenatui.session.sweep import Sweep


def summary_line(n_models: int, n_cases: int, trials: int, elapsed_s: float, made: int | None = None,
                 lanes: Sequence[str] = ()) -> str:
    """`4 models × 12 cases × 8 trials = 384 calls in 26.5s` (the order scripts parse); when this invocation
    made fewer calls than the run has (a resume), it says both: `… = 180 calls in the run; this invocation made 33
    in 17.4s`. With prompt variants, `lanes` (the plan's ``model · variant`` keys) give the models and variants:
    `2 models × 2 prompt variants × 12 cases × …`, or, when models were asked different numbers of variants, the
    lanes with each model's count (`5 model × prompt variant lanes (3 models; prompt variants: a 2, b 2, c 1) × …`),
    so the product always equals the calls."""
    total = n_models * n_cases * trials
    per_model: dict[str, int] = {}
    for k in lanes:
        per_model[split_lane(k)[0]] = per_model.get(split_lane(k)[0], 0) + 1
    first = models_by_variants(per_model or {"": n_models}, any(VARIANT_SEP in k for k in lanes))
    head = f"{first} × {plural(n_cases, 'case')} × {plural(trials, 'trial')} = {plural(total, 'call')}"
    if made is None or made == total:
        return f"{head} in {elapsed_s:.1f}s"
    return f"{head} in the run; this invocation made {made} in {elapsed_s:.1f}s"


def spend_line(spend: float | RunSpend) -> str:
    """The run's spend; with judges, the models' and each judge's apart, and the total of both."""
    if not isinstance(spend, RunSpend):
        return f"Spend: {money(spend)}"
    if not spend.judges:
        return f"Spend: {money(spend.total)}"
    judges = ", ".join(f"{one_line(j.judge, 80)} {money(j.cost)} over {plural(j.calls, 'judge call')}"
                       + (f" ({plural(j.errors, 'judge error')})" if j.errors else "") for j in spend.judges)
    return (f"Spend: {money(spend.total)} (models {money(spend.candidates)}; judges {money(spend.judge_total)}: "
            f"{judges})")


def leaderboard_table(rows: list[ModelRow], width: int = 160) -> RenderableType:
    """The headless leaderboard: quality over scored calls beside coverage, errors and what a correct answer cost,
    fitted to `width` (lower-priority columns left out; one block per model when even the headline ones do not
    fit)."""
    return table_for_width(LEADERBOARD, rows, width,
                           title="Leaderboard (quality over scored calls; errored calls count against coverage)",
                           caption=LEADERBOARD_NOTE, elsewhere=" (arena report RUN shows every column)")


def ranking_lines(rows: list[ModelRow]) -> list[Text]:
    """Under the leaderboard: what the ranking is over, who is listed apart and why, verdict and paradox notes."""
    ranked = [r for r in rows if r.rank]
    out = [Text(f"Ranked by quality over the {plural(ranked[0].common.n, 'case')} every ranked model has scores for "
                "(n); own: each model's quality over its own scored cases / their n.")] if ranked else []
    tied = next((r.rank_text for r in rows if r.tied), None)
    if tied:  # issue 37 item 14: a mark beside the score, explained where one is printed
        out.append(Text(f"{tied} after a score: tied at that rank (equal scores over the common cases and no decided "
                        "paired verdict between them; listed in the run's model order)"))
    clustered = clusters_note(next((r.quality.clusters for r in rows if r.quality.clusters is not None), None))
    if clustered:
        out.append(Text(clustered))
    for r in rows:
        for mark, why in (("", f"unranked, {r.unranked}" if r.unranked else None), ("* ", r.order_note),
                          ("! ", r.paradox)):
            if why:
                out.append(Text(f"  {mark}").append(literal(r.model, newlines=False)).append(": ")
                           .append(literal(why, newlines=False)))
    return out


def print_leaderboard(console: Console, results: RunResults) -> list[ModelRow]:
    rows = leaderboard(results)
    console.print(leaderboard_table(rows, console.width))
    for line in ranking_lines(rows):
        console.print(line)
    return rows


def print_variants_and_repairs(console: Console, store: Store, plan: RunPlan) -> None:
    """Under the leaderboard of a run with prompt variants or repairs: the per-variant table with each model's spread
    and each pair's verdict across variants, and completion before and after repairs and escalations."""
    from arenatui.present.variant_tables import VARIANT_NOTE, follow_up_dicts, rich_tables
    from arenatui.results.runs import variant_results
    from arenatui.stats.variants import analyse_variants
    from arenatui.store.queries import follow_ups

    vr = variant_results(store, plan)
    rob = None if vr is None else analyse_variants(vr).to_dict()
    if rob is not None:
        console.print(Text(VARIANT_NOTE))
    for t in rich_tables(rob, follow_up_dicts(follow_ups(store, plan))):
        console.print(t)


def errored_line(results: RunResults, messages: dict[str, list[tuple[str, str, int]]] | None = None) -> str | None:
    """How many calls errored, by class, whenever any did (None when none did); with `messages`
    (store.queries.error_messages), each model's most common error message on a line of its own."""
    by_class: dict[str, int] = {}
    for errs in results.errors.values():
        for k, v in errs.items():
            by_class[k] = by_class.get(k, 0) + v
    total = sum(by_class.values())
    if not total:
        return None
    calls = int(results.calls.sum())
    classes = ", ".join(f"{k} {v}" for k, v in sorted(by_class.items(), key=lambda kv: (-kv[1], kv[0])))
    per_model = "; ".join(f"{one_line(m, 80)} {sum(e.values())}" for m, e in results.errors.items() if e)
    line = (f"Errored: {total} of {plural(calls, 'call')} ({classes}); by model: {per_model}. Quality is over scored "
            "calls; errored ones count against coverage.")
    for model, rows in (messages or {}).items():
        if rows:
            ec, msg, n = rows[0]
            line += (f"\n  {one_line(model, 80)}, most often ({n}× {ec}): "
                     f"{one_line(redact_urls_in_text(msg), 160) or '(no message)'}")
    return line


def error_failure(results: RunResults, max_rate: float | None) -> str | None:
    """Why errors should fail the run, or None.

    With a rate: more than that share of stored calls errored. Without: some model had every call errored.
    """
    calls = int(results.calls.sum())
    errored = calls - int(results.answered.sum())
    if max_rate is not None:
        if calls and errored / calls > max_rate:
            return (f"{errored} of {plural(calls, 'call')} errored ({errored / calls:.1%}), more than --fail-on-error "
                    f"{max_rate:g} allows")
        return None
    dead = [m for i, m in enumerate(results.models)
            if results.calls[i].sum() > 0 and results.answered[i].sum() == 0]
    if dead:
        return (f"every call of {', '.join(one_line(m, 80) for m in dead)} errored, so the run says nothing about "
                f"{'that model' if len(dead) == 1 else 'those models'} (pass --fail-on-error 1 to accept it)")
    return None


def client_load_warning(store: Store, run_id: str) -> str | None:
    """A warning when arenatui's own process was the bottleneck for a sustained stretch of the run, else None."""
    samples = store.client_load(run_id)
    tr = sustained_overload((cpu, interval) for _, cpu, interval in samples)
    if tr.overload_s <= 0:
        return None
    total = sum(interval for _, _, interval in samples)
    return (f"Warning: the arenatui process itself used more than {OVERLOAD_CPU:.0%} of a CPU core for "
            f"{tr.overload_s:.0f}s of this {total:.0f}s run (stretches of {OVERLOAD_S:g}s or more; peak "
            f"{tr.peak:.0%}). While it did, the client, not the provider, limited throughput, and its own "
            f"queueing is inside the latencies and TTFTs reported. Lower the concurrency, or keep "
            f"transport = \"auto\" (aiohttp) for HTTP models, and compare.")


def calls_made(plan: Plan, finished: bool, stored: int) -> int | None:
    """What this invocation made, apart from the run's total when it resumed: the calls its plan had left when it
    finished, else those stored beyond what earlier sessions had; None for a shard (it says its own count)."""
    if plan.shard is not None:
        return None
    return plan.remaining if finished else max(0, stored - (plan.total - plan.remaining))


def print_summary(out: Console, err: Console, sweep: Sweep, status: str, elapsed_s: float, *,
                  report: bool) -> RunResults:
    """`arena evaluate`'s summary after the run, read back from the store: the calls made and stored, the spend, the
    errors, and with `report` the leaderboard and the prompt-variant and repair tables; returns the results the
    exit code is decided on."""
    from arenatui.results.read import read_run
    from arenatui.store.queries import error_messages, single_slot_lines

    plan = sweep.plan
    with Store(sweep.db_path) as store:
        stored_run = read_run(store, sweep.run_id, latency=report, detail=False)
        stored = sum(len(keys) for keys in store.done_keys(sweep.run_id).values())
        out.print(summary_line(len(plan.models), len(plan.cases), plan.trials, elapsed_s,
                               calls_made(plan, status == "finished", stored), [m.key for m in plan.models]),
                  markup=False)
        mine = plan.shard_total()
        if plan.shard is not None:
            out.print(f"Shard {plan.shard}: {mine} of those calls; `arena merge` joins the shards' databases",
                      markup=False)
        if stored < mine:
            out.print(f"Stored: {stored} of {plural(mine, 'call')}" + (f" (shard {plan.shard})" if plan.shard else ""),
                      markup=False)
        out.print(spend_line(stored_run.spend), markup=False)  # the models' and the judges' apart, and their total
        results = stored_run.results
        line = errored_line(results, error_messages(store, sweep.run_id))
        if line:
            out.print(line, markup=False)
        if report:
            print_leaderboard(out, results)
            print_variants_and_repairs(out, store, stored_run.plan)
        warning = client_load_warning(store, sweep.run_id)
        if warning:
            err.print(warning, markup=False, style="bold yellow")
        for advice in single_slot_lines(store, sweep.run_id):  # a server with one slot: what to change
            err.print(advice, markup=False, style="bold yellow", soft_wrap=True)
    return results

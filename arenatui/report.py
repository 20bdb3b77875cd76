"""End-of-run text for people: summary line, spend, errored calls, leaderboard (Rich, no markup from data)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from arenatui.engine.client_load import OVERLOAD_CPU, OVERLOAD_S, sustained_overload
from arenatui.safe_text import literal, one_line
from arenatui.stats import ModelRow, RunResults, leaderboard
from arenatui.store import Store
from arenatui.store.queries import RunSpend
from arenatui.wording import LEADERBOARD_NOTE, fmt_errors


def summary_line(n_models: int, n_cases: int, trials: int, elapsed_s: float) -> str:
    total = n_models * n_cases * trials
    return (f"{n_models} model{'s' if n_models != 1 else ''} × {n_cases} test{'s' if n_cases != 1 else ''} × "
            f"{trials} trial(s) = {total} calls in {elapsed_s:.1f}s")


def spend_line(spend: float | RunSpend) -> str:
    """The run's spend; with judges, the models' and each judge's apart, and the total of both."""
    if not isinstance(spend, RunSpend):
        return f"Spend: ${spend:.4f}"
    if not spend.judges:
        return f"Spend: ${spend.total:.4f}"
    judges = ", ".join(f"{one_line(j.judge, 80)} ${j.cost:.4f} over {j.calls} judge calls"
                       + (f" ({j.errors} judge errors)" if j.errors else "") for j in spend.judges)
    return f"Spend: ${spend.total:.4f} (models ${spend.candidates:.4f}; judges ${spend.judge_total:.4f}: {judges})"


def _ms(v: float | None) -> str:
    return "-" if v is None else (f"{v:.0f}" if v >= 10 else f"{v:.1f}")


def leaderboard_table(rows: list[ModelRow]) -> Table:
    """The headless leaderboard: quality over scored calls beside coverage, errors and what a correct answer cost."""
    t = Table(title="Leaderboard (quality over scored calls; errored calls count against coverage)",
              title_justify="left", header_style="bold", caption=LEADERBOARD_NOTE, caption_justify="left")
    for col in ("#", "model", "quality", "95% CI", "n", "own", "coverage", "errors", "p50 ms", "p95 ms", "retries",
                "spend", "$/correct", "$/answered"):
        t.add_column(col, justify="left" if col in ("model", "errors") else "right")
    for r in rows:
        q = r.common if r.rank else r.quality
        ci = f"{q.low:.3f}–{q.high:.3f}" if q.n > 1 else "-"
        errs = fmt_errors(r.errors)
        own = r.quality
        t.add_row(
            f"{r.rank or '-'}{r.flag}", literal(r.model, newlines=False), f"{q.estimate:.3f}" if q.n else "-", ci,
            str(q.n),
            f"{own.estimate:.3f}/{own.n}" if own.n else "-",
            f"{r.coverage:.0%}" if r.planned else "-", Text(errs), _ms(r.latency_p50), _ms(r.latency_p95),
            str(r.retries), f"${r.spend:.4f}", _money(r.cost_per_correct), _money(r.cost_per_answered),
        )
    return t


def _money(v: float | None) -> str:
    return "-" if v is None else f"${v:.5f}"


def ranking_lines(rows: list[ModelRow]) -> list[Text]:
    """Under the leaderboard: what the ranking is over, who is listed apart and why, verdict and paradox notes."""
    ranked = [r for r in rows if r.rank]
    out = [Text(f"Ranked by quality over the {ranked[0].common.n} cases every ranked model has scores for (n); "
                "own: each model's quality over its own scored cases / their n.")] if ranked else []
    for r in rows:
        for mark, why in (("", f"unranked, {r.unranked}" if r.unranked else None), ("* ", r.order_note),
                          ("! ", r.paradox)):
            if why:
                out.append(Text(f"  {mark}").append(literal(r.model, newlines=False)).append(": ")
                           .append(literal(why, newlines=False)))
    return out


def print_leaderboard(console: Console, results: RunResults) -> list[ModelRow]:
    rows = leaderboard(results)
    console.print(leaderboard_table(rows))
    for line in ranking_lines(rows):
        console.print(line)
    return rows


def errored_line(results: RunResults) -> str | None:
    """How many calls errored, by class, whenever any did (None when none did)."""
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
    return (f"Errored: {total} of {calls} calls ({classes}); by model: {per_model}. Quality is over scored "
            "calls; errored ones count against coverage.")


def error_failure(results: RunResults, max_rate: float | None) -> str | None:
    """Why errors should fail the run, or None.

    With a rate: more than that share of stored calls errored. Without: some model had every call errored.
    """
    calls = int(results.calls.sum())
    errored = calls - int(results.answered.sum())
    if max_rate is not None:
        if calls and errored / calls > max_rate:
            return (f"{errored} of {calls} calls errored ({errored / calls:.1%}), more than --fail-on-error "
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

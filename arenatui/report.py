"""End-of-run text for people: the summary line, the spend, and the leaderboard (Rich, no markup from data)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from arenatui.engine.client_load import OVERLOAD_CPU, OVERLOAD_S, sustained_overload
from arenatui.safe_text import literal
from arenatui.stats.summary import SUMMARY_COLUMNS, ModelSummary, summarize
from arenatui.store import Store
from arenatui.wording import LEADERBOARD_NOTE


def summary_line(n_models: int, n_cases: int, trials: int, elapsed_s: float) -> str:
    total = n_models * n_cases * trials
    return (f"{n_models} model{'s' if n_models != 1 else ''} × {n_cases} test{'s' if n_cases != 1 else ''} × "
            f"{trials} trial(s) = {total} calls in {elapsed_s:.1f}s")


def spend_line(spend: float) -> str:
    return f"Spend: ${spend:.4f}"


def _ms(v: float | None) -> str:
    return "-" if v is None else (f"{v:.0f}" if v >= 10 else f"{v:.1f}")


def leaderboard_table(summaries: list[ModelSummary]) -> Table:
    t = Table(title="Leaderboard", title_justify="left", header_style="bold", caption=LEADERBOARD_NOTE,
              caption_justify="left")
    t.add_column("#", justify="right")
    t.add_column("model")
    t.add_column("score", justify="right")
    t.add_column("95% CI", justify="right")
    t.add_column("mean ms", justify="right")
    t.add_column("p95 ms", justify="right")
    t.add_column("calls", justify="right")
    t.add_column("retries", justify="right")
    t.add_column("errors", justify="right")
    t.add_column("spend", justify="right")
    t.add_column("$/completed", justify="right")
    for i, s in enumerate(summaries, 1):
        sc = s.score
        ci = f"{sc.low:.3f}–{sc.high:.3f}" if sc.n > 1 else "-"
        errs = ", ".join(f"{k} {v}" for k, v in sorted(s.errors.items())) or "0"
        t.add_row(
            str(i), literal(s.model_key, newlines=False), f"{sc.estimate:.3f}", ci, _ms(s.mean_latency_ms),
            _ms(s.p95_latency_ms), str(s.calls), str(s.retries), Text(errs), f"${s.spend:.4f}",
            "-" if s.cost_per_completed is None else f"${s.cost_per_completed:.5f}",
        )
    return t


def run_summaries(store: Store, run_id: str) -> list[ModelSummary]:
    return summarize(store.results(run_id, SUMMARY_COLUMNS))


def print_leaderboard(console: Console, store: Store, run_id: str) -> list[ModelSummary]:
    sums = run_summaries(store, run_id)
    console.print(leaderboard_table(sums))
    return sums


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

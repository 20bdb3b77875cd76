"""The bodies of `arena tune` and `arena sweep`: run the drivers and print their tables for people."""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table
from rich.text import Text

from arenatui.commands.tune_budgets import Budgets
from arenatui.commands.tune_runs import LevelRun, LevelSweep, stored_readouts, sweep_levels, tune
from arenatui.config.write import writable_target, write_model_settings
from arenatui.errors import ArenaError
from arenatui.safe_text import literal
from arenatui.tuning.figures import fmt_ms, fmt_rate, fmt_share, goodput_text, limited_text, mark
from arenatui.tuning.levels import ModelReadout


def verdict_text(ro: ModelReadout) -> Text:
    """'model: verdict': the one line every CLI view prints for a model."""
    line = Text("")
    line.append(literal(ro.model_key, "bold", newlines=False))
    line.append(": ")
    line.append(ro.verdict.text)
    return line


def readout_table(ro: ModelReadout) -> Table:
    t = Table(title=verdict_text(ro), title_justify="left", header_style="bold")
    for col in ("level", "held s", "answered", "goodput/s (95%)", "429s (95%)", "transient", "retries/s",
                "gave up", "n", "p50 ms", "p95 ms", ""):
        t.add_column(col, justify="left" if col == "" else "right")
    best = ro.best
    for r in ro.levels:
        t.add_row(str(r.level), f"{r.held_s:.1f}", str(r.answered), goodput_text(r).removesuffix("/s"),
                  limited_text(r), fmt_share(r.transient_share), fmt_rate(r.retries_per_s), str(r.given_up),
                  str(r.latencies), fmt_ms(r.p50_ms), fmt_ms(r.p95_ms), mark(r, best))
    return t


def _not_a_load_run(run_id: str, db: str | None) -> None:
    from arenatui.store import Store
    from arenatui.store.load_queries import run_kinds

    with Store(db) as store:
        if run_kinds(store, [run_id])[run_id][0] == "load":
            raise ArenaError(f"run {run_id} is a load run: it holds requests at offered rates, not concurrency "
                             f"levels; its figures: arena load --show {run_id}")


def _out() -> Console:
    # piped into a log, Rich would assume 80 columns and squeeze the tables into ellipses; quiet on a closed pipe
    from arenatui.terminal import out_console

    return out_console()


def cmd_tune(args: argparse.Namespace) -> int:
    out = _out()
    err = Console(stderr=True, highlight=False)
    if args.show:
        run_id, stored = stored_readouts(args.show, args.db)
        _not_a_load_run(run_id, args.db)
        if not stored:
            out.print(f"Run {run_id}: no readout (no level was held, or it ran before arenatui stored one).",
                      markup=False)
        for ro in stored:
            out.print(readout_table(ro))
        _print_budgets(out, run_id, args.db)
        if args.verbose:
            from arenatui.store import Store

            with Store(args.db) as store:
                for at, _key, _old, _new, reason in store.tuning_decisions(run_id):
                    line = Text(time.strftime("%H:%M:%S ", time.localtime(at)))
                    line.append(literal(reason, newlines=False))
                    out.print(line)
        return 0
    if not args.project:
        raise ArenaError("arena tune: pass --project FILE to tune, or --show RUN_ID to print a stored run's readout")
    if args.write is not None:
        from arenatui.commands.tune_budgets import parse_settings

        try:
            parse_settings(args.write)
        except ValueError as e:
            raise ArenaError(f"arena tune: {e}") from None
        writable_target(args.project)  # a read-only file is refused before minutes of tuning, not after
    res = tune(args.project, models=args.models, budget=args.budget, db=args.db, seed=args.seed,
               started=lambda: err.print(f"Tuning with at most {args.budget} calls per model, until each model has a "
                                         "verdict…", markup=False))
    for ro in res.readouts:
        out.print(readout_table(ro))
        out.print(recommendation_line(ro))
    if args.verbose:
        for d in res.decisions:
            out.print(literal(d, newlines=False))
    budgets = _print_budgets(out, res.run_id, args.db)
    ended = ("the budget was spent before every model had a verdict (raise --budget)" if res.budget_spent
             else "every model had a verdict")
    out.print(f"Run id: {res.run_id} ({res.wall_s:.1f} s; {ended})", markup=False)
    optima = res.optima
    if args.write is None:
        return 0
    from arenatui.commands.tune_budgets import parse_settings, writable

    chosen = parse_settings(args.write)
    tokens, timeout, skipped = writable(budgets, chosen)
    settings: dict[str, dict[str, object]] = {}
    if "concurrency" in chosen:
        if not optima:
            skipped.insert(0, "max_concurrency: not written (no model has a measured optimum)")
        for k, v in optima.items():
            settings.setdefault(k, {})["max_concurrency"] = v
    for k, v in tokens.items():
        settings.setdefault(k, {})["max_tokens"] = v
    run = {"timeout_s": timeout} if timeout is not None else None
    for why in skipped:
        out.print(why, markup=False)
    if not settings and run is None:
        out.print("wrote nothing: no recommendation rests on enough evidence", markup=False)
        return 1
    written = write_model_settings(args.project, settings, run)
    what = [f"{name} for {k}" for k, kv in settings.items() for name in kv] + (["[run] timeout_s"] if run else [])
    out.print(f"wrote {', '.join(what)} into {written.describe()}", markup=False)
    return 0


def recommendation_line(ro: ModelReadout) -> Text:
    """What `--write` would do for this model, from its verdict: the optimum, or why nothing."""
    line = Text("recommended max_concurrency for ")
    line.append(literal(ro.model_key, "bold", newlines=False))
    v = ro.verdict
    if v.optimum is not None:
        line.append(f": {v.optimum}\n")
    elif v.kind == "rate":
        line.append(": none written (a rate limit, not concurrency, binds: run it at 1 and lower the rate)\n")
    else:
        line.append(f": none written ({v.text})\n")
    return line


def _print_budgets(out: Console, run_id: str, db: str | None) -> Budgets:
    """Steps 2 and 4 of the tuning order beside the concurrency optimum: max_tokens and timeout_s."""
    from arenatui.commands.tune_budgets import budgets_for_run, print_budgets

    out.print(Text("max_tokens and timeout_s, from this run's answers", "bold"))
    budgets = budgets_for_run(run_id, db)
    print_budgets(out, budgets)
    return budgets  # what --write then writes: the store is read once


def cmd_sweep(args: argparse.Namespace) -> int:
    out = _out()
    err = Console(stderr=True, highlight=False)
    levels: tuple[int, ...] = args.levels
    err.print(f"Sweeping concurrency {', '.join(map(str, levels))}: one stored run per level…", markup=False)

    def progress(r: LevelRun, i: int) -> None:
        g = r.evidence
        err.print(f"  level {r.level} ({i} of {len(levels)}): {r.wall_s:.1f} s, {r.answered} answered, goodput "
                  f"{goodput_text(g, interval=False)}, 429s {limited_text(g, interval=False)}, run {r.run_id}",
                  markup=False)

    res = sweep_levels(args.project, levels, models=args.models, limit=args.limit, trials=args.trials, db=args.db,
                       seed=args.seed, on_level=progress)
    title = Text(f"sweep {res.group}: ")
    title.append(res.verdict.text)
    t = Table(title=title, title_justify="left", header_style="bold")
    # errored calls sit beside the wall clock: a level that looks faster because calls gave up says so
    for col in ("level", "wall s", "errored", "answered", "goodput/s (95%)", "429s (95%)", "p95 ms", "run id", ""):
        t.add_column(col, justify="left" if col in ("run id", "") else "right")
    knee = res.knee
    for r in res.runs:
        g = r.evidence
        note = "◀ knee" if r.level == knee else ("faster only because calls gave up" if r.errored and _faster(r, res)
                                                 else mark(g, None))
        t.add_row(str(r.level), f"{r.wall_s:.2f}", str(r.errored), str(r.answered), goodput_text(g).removesuffix("/s"),
                  limited_text(g), fmt_ms(g.p95_ms), r.run_id, note)
    out.print(t)
    out.print(f"verdict: {res.verdict.text}", markup=False)
    for note in res.notes:
        out.print(note, markup=False)
    return 0


def _faster(r: LevelRun, res: LevelSweep) -> bool:
    """Whether a level with errored calls has a shorter wall clock than the knee."""
    knee = next((x for x in res.runs if x.level == res.knee), None)
    return knee is not None and r.wall_s < knee.wall_s

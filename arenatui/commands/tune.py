"""The bodies of `arena tune` and `arena sweep`: run the drivers and print their tables for people."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console, RenderableType
from rich.text import Text

from arenatui.commands.tune_budgets import Budgets
from arenatui.commands.tune_runs import LevelRun, LevelSweep, stored_readouts, sweep_levels, tune
from arenatui.kernel.errors import ArenaError
from arenatui.kernel.events import VARIANT_SEP
from arenatui.kernel.units import plural
from arenatui.present.columns import HEADLINE, Column, Fitted
from arenatui.present.level_figures import fmt_ms, fmt_rate, fmt_share, goodput_text, limited_text
from arenatui.present.safe_text import literal
from arenatui.present.terminal import plain_listing
from arenatui.project.write import writable_target, write_model_settings
from arenatui.tuning.evidence import LevelEvidence
from arenatui.tuning.levels import ModelReadout, declared_level


def verdict_text(ro: ModelReadout) -> Text:
    """'model: verdict': the one line every CLI view prints for a model."""
    line = Text("")
    line.append(literal(ro.model_key, "bold", newlines=False))
    line.append(": ")
    line.append(ro.verdict.line(ro.model_key))
    return line


Level = tuple[LevelEvidence, str]
"""A level's evidence and its mark: "◀ best" (or "◀ knee"), "short" (not measured yet), or a note."""


def _missing(r: Level) -> str:
    return r[0].missing().removeprefix(f"level {r[0].level}: ")


LEVEL_COLUMNS: tuple[Column[Level], ...] = (
    Column("level", lambda r: r[0].level, priority=HEADLINE),
    Column("held s", lambda r: r[0].held_s, lambda v: f"{v:.1f}", priority=6),
    Column("answered", lambda r: r[0].answered, priority=8),
    Column("goodput/s (95%)", lambda r: goodput_text(r[0]).replace("/s", "", 1), priority=HEADLINE),
    Column("429s (95%)", lambda r: limited_text(r[0]), priority=HEADLINE),
    Column("transient", lambda r: r[0].transient_share, fmt_share, priority=4),
    Column("retries/s", lambda r: r[0].retries_per_s, fmt_rate, priority=3),
    Column("gave up", lambda r: r[0].given_up, priority=5),
    Column("n", lambda r: r[0].latencies, priority=2),
    Column("p50 ms", lambda r: r[0].p50_ms, fmt_ms, priority=4),
    Column("p95 ms", lambda r: r[0].p95_ms, fmt_ms, priority=7),
    Column("verdict", lambda r: r[1], priority=HEADLINE, right=False),
    Column("short of", _missing, priority=5, right=False),
)
"""A tuning readout's columns: the level, its goodput and 429 share, and its mark stay at any width; what a level
lacks (`short of`) is also in the verdict line above the table."""


def level_mark(r: LevelEvidence, best: int | None, word: str = "best") -> str:
    return f"◀ {word}" if r.level == best else "" if r.measured else "short"


def marks_legend(marks: Iterable[str]) -> str | None:
    """The verdict column's marks explained, those printed only (issue 37 item 14: on a narrow terminal `short of`
    is left out and `short` stood alone); None when none was printed."""
    said = set(marks)
    words = [w for mark, w in (("◀ best", "◀ best: the level the verdict names"),
                               ("◀ knee", "◀ knee: the level the verdict names"),
                               ("short", "short: not held long enough or too few answers to judge yet (`short of` "
                                         "says what it lacks)")) if mark in said]
    return "verdict column: " + "; ".join(words) if words else None


def readout_table(ro: ModelReadout, run_id: str = "RUN") -> RenderableType:
    """A model's verdict, then its levels fitted to the width they are drawn at (never a cut name or figure)."""
    from rich.console import Group

    rows = [(r, level_mark(r, ro.best)) for r in ro.levels]
    return Group(verdict_text(ro), Fitted(LEVEL_COLUMNS, rows,
                                          elsewhere=f" (COLUMNS=200 arena tune --show {run_id} has them)"))


def print_chart(out: Console, ro: ModelReadout) -> None:
    """Goodput by level for one model, fitted to the console's width, with its legend."""
    from arenatui.present.charts import GOODPUT_LEGEND, goodput_by_level

    rows = goodput_by_level(ro.levels, out.width, knee=ro.best)
    if rows:
        out.print(Text(GOODPUT_LEGEND, style="dim"), no_wrap=True, overflow="ellipsis")
        for row in rows:
            out.print(Text(row), no_wrap=True, overflow="ellipsis")
def _print_readouts(out: Console, run_id: str, stored: Sequence[ModelReadout], *, as_json: bool) -> None:
    """`tune --show` for a script: JSON (--json), or one tab-separated row per (model, level) into a pipe. The
    same readouts as the tables, only another way of writing them."""
    import dataclasses

    from arenatui.present.terminal import print_listing

    rows = [(ro, (lv, level_mark(lv, ro.best))) for ro in stored for lv in ro.levels]
    def level_column(c: Column[Level]) -> Column[Any]:
        return Column(c.title, lambda r: c.get(r[1]), c.fmt)

    columns: list[Column[Any]] = [Column("model", lambda r: r[0].model_key, right=False),
                                  *(level_column(c) for c in LEVEL_COLUMNS),
                                  Column("verdict", lambda r: r[0].verdict.text, right=False)]
    doc = {"run_id": run_id, "models": [
        {"model": ro.model_key, "verdict": ro.verdict.kind, "verdict_text": ro.verdict.text,
         "level": ro.verdict.level, "optimum": ro.verdict.optimum,
         "levels": [dataclasses.asdict(lv) for lv in ro.levels]} for ro in stored]}
    print_listing(out, columns, rows, as_json=doc, json_wanted=as_json)


def _print_legend(out: Console, readouts: Sequence[ModelReadout]) -> None:
    legend = marks_legend(level_mark(lv, ro.best) for ro in readouts for lv in ro.levels)
    if legend:
        out.print(legend, markup=False, highlight=False)


def _not_a_load_run(run_id: str, db: str | None) -> None:
    from arenatui.store import Store
    from arenatui.store.load_queries import run_kinds

    with Store(db, read_only=True) as store:
        if run_kinds(store, [run_id])[run_id][0] == "load":
            raise ArenaError(f"run {run_id} is a load run: it holds requests at offered rates, not concurrency "
                             f"levels; its figures: arena load --show {run_id}")


def _out() -> Console:
    # piped into a log, Rich would assume 80 columns and squeeze the tables into ellipses; quiet on a closed pipe
    from arenatui.present.terminal import out_console

    return out_console()


def _err() -> Console:
    # progress lines into a log stay one line each (Rich would wrap them at 80 columns)
    from arenatui.present.terminal import err_console

    return err_console()


def cmd_tune(args: argparse.Namespace) -> int:
    out = _out()
    err = _err()
    if args.show:
        if args.show == "last":  # the newest sweep that is not running: a running one has no readout yet
            from arenatui.commands.stored import chosen_last

            args.show = chosen_last(args.db, "sweep")
        run_id, stored = stored_readouts(args.show, args.db)
        _not_a_load_run(run_id, args.db)
        if args.json or plain_listing():  # JSON alone; into a pipe the levels tab-separated, the rest as ever
            _print_readouts(out, run_id, stored, as_json=args.json)
            if args.json:
                return 0
        else:
            if not stored:
                out.print(f"Run {run_id}: no readout (no level was held, or it ran before arenatui stored one).",
                          markup=False)
            for ro in stored:
                out.print(readout_table(ro, run_id))
                if out.is_terminal:  # a picture for people; a pipe gets the table only
                    print_chart(out, ro)
            _print_legend(out, stored)
        _print_declared(out, run_id, args.db, stored)
        _print_budgets(out, run_id, args.db)
        if args.verbose:
            from arenatui.store import Store

            with Store(args.db, read_only=True) as store:
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
               started=lambda: err.print(f"Tuning with at most {plural(args.budget, 'call')} per model, until each "
                                         "model has a verdict…", markup=False),
               progress=lambda line: err.print(line, markup=False, highlight=False),
               live=err if err.is_terminal else None)
    for ro in res.readouts:
        out.print(readout_table(ro, res.run_id))
        out.print(recommendation_line(ro))
    _print_legend(out, res.readouts)
    if args.verbose:
        for d in res.decisions:
            out.print(literal(d, newlines=False))
    _print_declared(out, res.run_id, args.db, res.readouts)
    _print_single_slot(out, res.run_id, args.db)
    budgets = _print_budgets(out, res.run_id, args.db)
    ended = ("the budget was spent before every model had a verdict (raise --budget)" if res.budget_spent
             else "every model had a verdict")
    out.print(f"Run id: {res.run_id} ({res.wall_s:.1f} s; {ended})", markup=False)
    optima = res.optima
    if args.write is None:
        return 0
    from arenatui.commands.tune_budgets import parse_settings, writable
    from arenatui.tuning.budgets import below_floor

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
    if "concurrency" in chosen and not optima and (settings or run is not None):
        # as the README says: with no optimum at all nothing is written (the other settings neither) and exit 1
        out.print("wrote nothing: no model has a measured optimum (write max_tokens or timeout_s alone with "
                  "--write max_tokens,timeout_s)", markup=False)
        return 1
    if not settings and run is None:
        out.print("wrote nothing: no recommendation rests on enough evidence", markup=False)
        return 1
    written = write_model_settings(args.project, settings, run)
    what = [f"{name} for {k}" for k, kv in settings.items() for name in kv] + (["[run] timeout_s"] if run else [])
    out.print(f"wrote {', '.join(what)} into {written.describe()}", markup=False)
    floor = below_floor(timeout) if timeout is not None else None
    if floor is not None:  # never a timeout measured on answers faster than hosted calls without saying so
        out.print(floor, markup=False)
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


def _print_declared(out: Console, run_id: str, db: str | None, readouts: Sequence[ModelReadout]) -> None:
    """The rate limits each provider stated in its response headers, with what is left and the concurrency they
    would allow at the latency measured; nothing when no provider stated any."""
    from arenatui.store import Store

    with Store(db, read_only=True) as store:
        declared = store.declared_limits(run_id)
    if not declared:
        return
    out.print(Text("declared rate limits (the providers' response headers; a prior, not evidence)", "bold"))
    latency = {ro.model_key.partition(VARIANT_SEP)[0]: _typical_latency_s(ro) for ro in readouts}
    for key, (_at, limits) in declared.items():
        line = Text("  ")
        line.append(literal(key, "bold", newlines=False))
        line.append(f": {limits.describe()}")
        level = declared_level(limits, latency.get(key))
        if level is not None:
            line.append(f"; ≈ {level:.1f} in flight at its measured p50 latency")
        out.print(line)


def _print_single_slot(out: Console, run_id: str, db: str | None) -> None:
    """What to change for a model whose server stops a stream when another request arrives (one slot)."""
    from arenatui.store import Store
    from arenatui.store.queries import single_slot_lines

    with Store(db, read_only=True) as store:
        for line in single_slot_lines(store, run_id):
            out.print(line, markup=False, style="bold yellow", soft_wrap=True)


def _typical_latency_s(ro: ModelReadout) -> float | None:
    """The p50 latency at the readout's best level, else at the level held longest."""
    rows = [r for r in ro.levels if r.latency_s is not None]
    best = [r for r in rows if r.level == ro.best]
    pick = best[0] if best else max(rows, key=lambda r: r.held_s, default=None)
    return None if pick is None else pick.latency_s


def _print_budgets(out: Console, run_id: str, db: str | None) -> Budgets:
    """Steps 2 and 4 of the tuning order beside the concurrency optimum: max_tokens and timeout_s."""
    from arenatui.commands.tune_budgets import budgets_for_run, print_budgets

    out.print(Text("max_tokens and timeout_s, from this run's answers", "bold"))
    budgets = budgets_for_run(run_id, db)
    print_budgets(out, budgets)
    return budgets  # what --write then writes: the store is read once


def cmd_sweep(args: argparse.Namespace) -> int:
    out = _out()
    err = _err()
    levels: tuple[int, ...] = args.levels
    err.print(f"Sweeping concurrency {', '.join(map(str, levels))}: one stored run per level…", markup=False)

    def starting(level: int, i: int) -> None:
        err.print(f"  level {level} ({i} of {len(levels)}): running…", markup=False)

    def progress(r: LevelRun, i: int) -> None:
        g = r.evidence
        err.print(f"  level {r.level} ({i} of {len(levels)}): {r.wall_s:.1f} s, {r.answered} answered, goodput "
                  f"{goodput_text(g, interval=False)}, 429s {limited_text(g, interval=False)}, run {r.run_id}",
                  markup=False)

    res = sweep_levels(args.project, levels, models=args.models, limit=args.limit, trials=args.trials, db=args.db,
                       seed=args.seed, on_level=progress, on_start=starting)
    title = Text(f"sweep {res.group}: ")
    title.append(res.verdict.line())
    out.print(title)
    out.print(Fitted(SWEEP_COLUMNS, [(r, _sweep_mark(r, res)) for r in res.runs],
                     elsewhere=" (COLUMNS=200 arena sweep prints them all)"))
    out.print(f"verdict: {res.verdict.line()}", markup=False)
    legend = marks_legend(_sweep_mark(r, res) for r in res.runs)
    if legend:
        out.print(legend, markup=False, highlight=False)
    for note in res.notes:
        out.print(note, markup=False)
    return 0


def _faster(r: LevelRun, res: LevelSweep) -> bool:
    """Whether a level with errored calls has a shorter wall clock than the knee."""
    knee = next((x for x in res.runs if x.level == res.knee), None)
    return knee is not None and r.wall_s < knee.wall_s


def _sweep_mark(r: LevelRun, res: LevelSweep) -> str:
    # errored calls sit beside the wall clock: a level that looks faster because calls gave up says so
    if r.errored and r.level != res.knee and _faster(r, res):
        return "faster: calls gave up"
    return level_mark(r.evidence, res.knee, "knee")


Swept = tuple[LevelRun, str]

SWEEP_COLUMNS: tuple[Column[Swept], ...] = (
    Column("level", lambda r: r[0].level, priority=HEADLINE),
    Column("wall s", lambda r: r[0].wall_s, lambda v: f"{v:.2f}", priority=8),
    Column("errored", lambda r: r[0].errored, priority=9),
    Column("answered", lambda r: r[0].answered, priority=6),
    Column("goodput/s (95%)", lambda r: goodput_text(r[0].evidence).replace("/s", "", 1), priority=HEADLINE),
    Column("429s (95%)", lambda r: limited_text(r[0].evidence), priority=HEADLINE),
    Column("p95 ms", lambda r: r[0].evidence.p95_ms, fmt_ms, priority=7),
    Column("run id", lambda r: r[0].run_id, priority=4, right=False),
    Column("verdict", lambda r: r[1], priority=HEADLINE, right=False),
    Column("short of", lambda r: _missing((r[0].evidence, r[1])), priority=5, right=False),
)
"""`arena sweep`'s columns: one stored run per level; the level, its goodput, 429 share and mark stay at any width,
the wall clock and the errored calls beside it as long as they can."""

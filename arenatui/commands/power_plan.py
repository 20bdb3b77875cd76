"""`arena plan`: before a run, what its cases can detect: the minimum detectable difference at 80% power for a
paired comparison, and the cases a target difference needs (arenatui.stats.power states the formula)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from arenatui.kernel.errors import ArenaError
from arenatui.kernel.units import plural


def _unit_share(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {value!r}") from None
    if not 0.0 < x < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, got {x:g}")
    return x


def add_plan_parser(sub: Any) -> None:
    p = sub.add_parser("plan", help="before a run: the smallest difference its cases detect (80%% power), and the "
                                    "cases a target difference needs")
    p.add_argument("--project", "-p", help="project TOML file, or a directory holding arena.toml")
    p.add_argument("--models", type=lambda v: tuple(x.strip() for x in v.split(",") if x.strip()), default=(),
                   help="only these model keys (comma-separated)")
    p.add_argument("--tags", type=lambda v: tuple(x.strip() for x in v.split(",") if x.strip()), default=(),
                   help="only cases with any of these tags or strata")
    p.add_argument("--limit", type=int, help="only the first N cases (after --tags)")
    p.add_argument("--trials", type=int, help="trials per (model, case), overriding [run].trials")
    p.add_argument("--baseline", type=_unit_share, default=0.8,
                   help="the accuracy the compared models are expected near (default 0.8)")
    p.add_argument("--mde", type=_unit_share, help="a target difference: how many cases detect it")
    p.add_argument("--table", action="store_true", help="the table of n cases against MDE for common baselines "
                                                          "(× marks a difference that would push accuracy above 1)")
    p.add_argument("--run", metavar="RUN", help="after a run: plan from its observed spread of per-case differences "
                                                "(trials, partial credit and shared errors as they were), not the "
                                                "0/1, one-trial, independent-errors assumption")
    p.add_argument("--db", help="results database (with --run)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_plan)


def _observed(db: str | None, run: str) -> tuple[str, float, float, int]:
    """(run id, the median over model pairs of the sd of per-case differences, the mean quality, pairs)."""
    import numpy as np

    from arenatui.results.read import read_run
    from arenatui.stats import answered_models
    from arenatui.stats.power import observed_sd
    from arenatui.store import Store
    from arenatui.store.queries import resolve_run

    with Store(db, read_only=True) as store:
        results = read_run(store, resolve_run(store, run), latency=False, detail=False).results
    models = answered_models(results)
    sds, means = [], []
    for i, a in enumerate(models):
        sa = results.case_scores(a)[results.working]
        means.append(float(np.nanmean(sa)))
        for b in models[i + 1:]:
            sb = results.case_scores(b)[results.working]
            both = ~np.isnan(sa) & ~np.isnan(sb)
            sd = observed_sd([float(x) for x in (sa - sb)[both]])
            if np.isfinite(sd) and sd > 0:
                sds.append(sd)
    if not sds:
        raise ArenaError(f"plan --run: run {results.run_id} has no pair of models whose per-case scores differ: "
                         "nothing to plan from; drop --run for the planning assumption")
    return results.run_id, float(np.median(sds)), float(np.mean(means)), len(sds)


def cmd_plan(args: argparse.Namespace) -> int:
    import sys

    from rich.table import Table

    from arenatui.present.terminal import out_console, plain_listing, tab_separated
    from arenatui.stats.power import (
        POWER,
        TABLE_BASELINES,
        cases_for,
        detectable,
        impossible,
        mde_table,
        planned_cases,
        planned_mde,
    )

    console = out_console()  # quiet on a closed pipe (exit 141, not Rich's 1); 160 columns into a log
    out: dict[str, Any] = {"power": POWER, "level": 0.95, "baseline": args.baseline}
    if args.project is None and not args.table and args.mde is None:
        raise ArenaError("plan: pass --project FILE (its planned cases), --mde D (the cases a difference needs at "
                         "--baseline), or --table for the table of n against MDE")
    sd: float | None = None
    if args.run is not None:
        run_id, sd, base, pairs = _observed(args.db, args.run)
        out.update({"baseline": base, "observed_sd": sd, "run": run_id,
                    "assumption": f"the spread of per-case differences observed in run {run_id} (sd {sd:.3f}, the "
                                  f"median over {plural(pairs, 'model pair')}; trials, partial credit and shared "
                                  "errors as they were)"})
        args.baseline = base
    else:
        out["assumption"] = ("0/1 scores, one trial's noise per case and models whose errors are independent "
                             "(conservative: models failing the same cases need fewer, so `arena compare`, which "
                             "reads a run's observed pairing, names a smaller difference)")

    def mde_of(n: int) -> float | None:
        return planned_mde(n, args.baseline) if sd is None else detectable(n, sd)

    def cases_of(d: float) -> int | None:
        return planned_cases(d, args.baseline) if sd is None else cases_for(d, sd)

    if args.project is not None:
        from arenatui.kernel.events import split_lane
        from arenatui.plan import Filters, make_plan
        from arenatui.project import load_project

        plan = make_plan(load_project(args.project), Filters(models=args.models, tags=args.tags, limit=args.limit,
                                                             trials=args.trials))
        n = sum(not c.sealed for c in plan.cases)
        mde = mde_of(n)
        models = list(dict.fromkeys(split_lane(m.key)[0] for m in plan.models))  # lanes → the models they ask
        out.update({"project": plan.project.name, "cases": n, "sealed_cases": len(plan.cases) - n,
                    "trials": plan.trials, "models": models, "calls": plan.total, "mde": mde})
        if sd is None and plan.trials > 1 and mde is not None:
            # trials average away within-case noise only; how much of it there is is unknown before a run
            out["mde_all_noise_within_cases"] = mde / math.sqrt(plan.trials)
    if args.mde is not None:
        out["target"] = args.mde
        out["cases_for_target"] = cases_of(args.mde)
    if args.table:
        out["table"] = [{"cases": n_, "mde": dict(zip((str(b) for b in TABLE_BASELINES), row, strict=True)),
                         "impossible": [str(b) for b, v in zip(TABLE_BASELINES, row, strict=True) if impossible(b, v)]}
                        for n_, row in mde_table()]
    if args.json:
        sys.stdout.write(json.dumps(out, indent=2, allow_nan=False) + "\n")
        return 0
    if "cases" in out:
        console.print(f"{out['project']}: {plural(out['cases'], 'working case')} × {plural(out['trials'], 'trial')}, "
                      f"{plural(len(out['models']), 'model')} ({plural(out['calls'], 'call')}).", markup=False)
        mde_text = "-" if out["mde"] is None else f"{out['mde']:.3f}"
        console.print(f"For {POWER:.0%} power at 95%, a paired comparison of two models near {args.baseline:.3g} "
                      f"accuracy detects a difference of about {mde_text} over these cases.", markup=False)
        if "mde_all_noise_within_cases" in out:
            console.print(f"With {out['trials']} trials it is between {mde_text} (the noise all between cases) and "
                          f"{out['mde_all_noise_within_cases']:.3f} (all within cases, which trials average away); "
                          "after a run, arena plan --run RUN reads which.", markup=False)
    if args.mde is not None:
        need = out["cases_for_target"]
        console.print(f"To detect a difference of {args.mde:g} at {POWER:.0%} power near {args.baseline:.3g}: "
                      f"about {need} cases" + (f" ({out['cases']} planned)." if "cases" in out else "."),
                      markup=False)
    if "cases" in out or args.mde is not None:
        console.print(f"This plan rests on {out['assumption']}."
                      + ("" if sd is not None else " After a run, arena plan --run RUN plans from what it observed."),
                      markup=False)
    def cell(b: float, v: float | None) -> str:
        """A table cell: the difference, marked × where it would take accuracy above 1."""
        return "-" if v is None else f"× ({v:.3f})" if impossible(b, v) else f"{v:.3f}"

    if args.table and plain_listing():  # into a pipe: the table as tab-separated columns, for a script
        sys.stdout.write(tab_separated(["cases", *(f"p = {b:g}" for b in TABLE_BASELINES)],
                                       [[str(n_), *(cell(b, v) for b, v in zip(TABLE_BASELINES, row, strict=True))]
                                        for n_, row in mde_table()]) + "\n")
    elif args.table:
        t = Table(title=f"Minimum detectable difference at baseline accuracy p ({POWER:.0%} power, 95%, paired)",
                  title_justify="left", header_style="bold",
                  caption="× : p + the difference would be above 1: no pair of models that far apart exists there",
                  caption_justify="left")
        t.add_column("cases", justify="right")
        for b in TABLE_BASELINES:
            t.add_column(f"p = {b:g}", justify="right")
        for n_, row in mde_table():
            t.add_row(str(n_), *(cell(b, v) for b, v in zip(TABLE_BASELINES, row, strict=True)))
        console.print(t)
    return 0

"""`arena plan`: before a run, what its cases can detect: the minimum detectable difference at 80% power for a
paired comparison, and the cases a target difference needs (arenatui.stats.power states the formula)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from arenatui.errors import ArenaError
from arenatui.wording import plural


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
    p.add_argument("--table", action="store_true", help="the table of n cases against MDE for common baselines")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=cmd_plan)


def cmd_plan(args: argparse.Namespace) -> int:
    import sys

    from rich.table import Table

    from arenatui.stats.power import POWER, TABLE_BASELINES, mde_table, planned_cases, planned_mde
    from arenatui.terminal import out_console, plain_listing, tab_separated

    console = out_console()  # quiet on a closed pipe (exit 141, not Rich's 1); 160 columns into a log
    out: dict[str, Any] = {"power": POWER, "level": 0.95, "baseline": args.baseline}
    if args.project is None and not args.table:
        raise ArenaError("plan: pass --project FILE (its planned cases), or --table for the table of n against MDE")
    if args.project is not None:
        from arenatui.config import load_project
        from arenatui.plan import Filters, make_plan

        plan = make_plan(load_project(args.project), Filters(models=args.models, tags=args.tags, limit=args.limit,
                                                             trials=args.trials))
        n = sum(not c.sealed for c in plan.cases)
        mde = planned_mde(n, args.baseline)
        out.update({"project": plan.project.name, "cases": n, "sealed_cases": len(plan.cases) - n,
                    "trials": plan.trials, "models": [m.key for m in plan.models], "calls": plan.total, "mde": mde})
    if args.mde is not None:
        out["target"] = args.mde
        out["cases_for_target"] = planned_cases(args.mde, args.baseline)
    if args.table:
        out["table"] = [{"cases": n_, "mde": dict(zip((str(b) for b in TABLE_BASELINES), row, strict=True))}
                        for n_, row in mde_table()]
    if args.json:
        sys.stdout.write(json.dumps(out, indent=2, allow_nan=False) + "\n")
        return 0
    if "cases" in out:
        console.print(f"{out['project']}: {plural(out['cases'], 'working case')} × {plural(out['trials'], 'trial')}, "
                      f"{plural(len(out['models']), 'model')} ({plural(out['calls'], 'call')}).", markup=False)
        mde_text = "-" if out["mde"] is None else f"{out['mde']:.3f}"
        console.print(f"For {POWER:.0%} power at 95%, a paired comparison of two models near {args.baseline:g} "
                      f"accuracy detects a difference of about {mde_text} over these cases.", markup=False)
    if args.mde is not None:
        need = out["cases_for_target"]
        console.print(f"To detect a difference of {args.mde:g} at {POWER:.0%} power: about {need} cases"
                      + (f" ({out['cases']} planned)." if "cases" in out else "."), markup=False)
    if "cases" in out or args.mde is not None:
        console.print("Assumes 0/1 scores and models whose errors are independent (conservative: models failing "
                      "the same cases need fewer); trials average away within-case noise only, so they are not "
                      "counted. After a run, compare states the same figure from the observed differences.",
                      markup=False)
    if args.table and plain_listing():  # into a pipe: the table as tab-separated columns, for a script
        sys.stdout.write(tab_separated(["cases", *(f"p = {b:g}" for b in TABLE_BASELINES)],
                                       [[str(n_), *("-" if v is None else f"{v:.3f}" for v in row)]
                                        for n_, row in mde_table()]) + "\n")
    elif args.table:
        t = Table(title=f"Minimum detectable difference at baseline accuracy p ({POWER:.0%} power, 95%, paired)",
                  title_justify="left", header_style="bold")
        t.add_column("cases", justify="right")
        for b in TABLE_BASELINES:
            t.add_column(f"p = {b:g}", justify="right")
        for n_, row in mde_table():
            t.add_row(str(n_), *("-" if v is None else f"{v:.3f}" for v in row))
        console.print(t)
    return 0

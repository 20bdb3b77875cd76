"""The Python entry points: `bench()` / `await abench()` run a sweep and return a `RunResult`.

They drive the same `Sweep` as ``arena evaluate``: the same validation (a `Project` built in Python goes through
the TOML loader's checks, so a mistake reads the same one-paragraph error), the same store, run ids and resume,
so ``arena browse``, ``arena report`` and ``arena evaluate --resume`` work on runs made from Python.
"""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from arenatui.config.schema import Project
from arenatui.kernel.errors import ArenaError

if TYPE_CHECKING:
    from arenatui.session.sweep import Sweep
    from arenatui.stats.compare import Comparison
    from arenatui.stats.items import RunResults
    from arenatui.stats.leaderboard import ModelRow

IN_LOOP = "bench() drives its own event loop; inside one, use: await abench(...)"


@dataclass(frozen=True, slots=True)
class RunResult:
    """A stored run, read back from its database: the same figures `arena report` prints.

    Every method reads the store afresh, so a result stays true after the run is resumed."""

    run_id: str
    db: Path
    """The results database holding the run."""
    status: str
    """How the sweep ended: finished, cancelled or failed."""
    k_values: tuple[int, ...] = (1,)
    """The k values asked for with `bench(k_values=...)`: `pass_at` reports these."""

    def results(self) -> RunResults:
        """The run's per (model, case) arrays (arenatui.stats.items.RunResults)."""
        from arenatui.results.runs import read_results
        from arenatui.store import Store

        with Store(self.db) as store:
            return read_results(store, self.run_id)

    @property
    def models(self) -> tuple[str, ...]:
        """The run's models, in project order."""
        return self.results().models

    def _model(self, results: RunResults, model: str | None) -> str | None:
        if model is not None and model not in results.models:
            raise ArenaError(f"run {self.run_id} has no model {model!r}; it has: {', '.join(results.models)}")
        return model

    def average_score(self, model: str | None = None) -> float:
        """Mean score over scored working cases (each case's trials averaged first); one model's, or every
        model's cases pooled. Errored calls are coverage, never zeros; NaN when nothing was scored."""
        import numpy as np

        r = self.results()
        names = [m] if (m := self._model(r, model)) is not None else list(r.models)
        scores = np.concatenate([r.case_scores(n)[r.working] for n in names]) if names else np.zeros(0)
        scores = scores[~np.isnan(scores)]
        return float(scores.mean()) if scores.size else math.nan

    def pass_at_k(self, k: int, model: str | None = None) -> float:
        """Unbiased pass@k over working cases with at least k answered trials (one model's, or every model's
        cases pooled); NaN where no case has k trials."""
        import numpy as np

        from arenatui.stats.passk import pass_at_k

        r = self.results()
        m = self._model(r, model)
        idx = [r.model_index(m)] if m is not None else list(range(len(r.models)))
        n = np.concatenate([r.scored[i][r.working] for i in idx]) if idx else np.zeros(0, np.int64)
        c = np.concatenate([r.passed[i][r.working] for i in idx]) if idx else np.zeros(0, np.int64)
        return pass_at_k(n, c, k)

    def pass_at(self, model: str | None = None) -> dict[int, float]:
        """pass@k for each of `k_values`."""
        return {k: self.pass_at_k(k, model) for k in self.k_values}

    def leaderboard(self) -> list[ModelRow]:
        """The leaderboard's rows (arenatui.stats.leaderboard.ModelRow), best first: what reports print."""
        from arenatui.stats.leaderboard import leaderboard

        return leaderboard(self.results())

    def compare(self, a: str, b: str) -> Comparison:
        """The paired bootstrap verdict of model `a` against `b` over the cases both have scores for
        (arenatui.stats.compare.Comparison: `.verdict`, `.better`, `.diff`)."""
        from arenatui.stats.compare import compare_models

        r = self.results()
        self._model(r, a)
        self._model(r, b)
        return compare_models(r, a, b)

    def report(self, path: str | Path, format: Literal["md", "json", "html"] = "md") -> Path:
        """Write the decision report (as `arena report --format FORMAT -o PATH`); returns the path."""
        from arenatui.commands.report import build_report, render
        from arenatui.store import Store

        with Store(self.db) as store:
            rep = build_report(store, self.run_id)
        out = Path(path)
        out.write_text(render(rep, format), encoding="utf-8")
        return out

    def export(self, path: str | Path, format: Literal["jsonl", "csv"] = "jsonl") -> Path:
        """Write every call as a row (as `arena export --format FORMAT -o PATH`); returns the path."""
        from arenatui.commands.export import write_export
        from arenatui.store import Store

        out = Path(path)
        with Store(self.db) as store, out.open("w", encoding="utf-8", newline="") as f:
            write_export(store, self.run_id, format, f)
        return out


def _validated(project: str | Path | Project) -> Project:
    """A project file loaded, or a Project built in Python checked exactly as the TOML loader checks a file."""
    from arenatui.project.read import load_project, project_from_dict, project_to_dict

    if not isinstance(project, Project):
        return load_project(project)
    raw = project_to_dict(project)
    for m in raw["models"]:
        if m.get("candidate") is True:  # the default: leave it to the loader's rule (a judge only judges)
            del m["candidate"]
    return project_from_dict(raw, project.path, _solvers(project))


def _solvers(project: str | Path | Project | None) -> dict[str, Callable[..., Any]]:
    if not isinstance(project, Project):
        return {}
    return {m.key: m.solver for m in project.models if m.solver is not None}


def _shared_instances_checked(project: Project, concurrency: int | None) -> None:
    """A solver instance (not a factory) shared by every trial may only run where no two trials overlap."""
    from arenatui.kernel.errors import SolverMisuse
    from arenatui.providers.solver import holds_state, is_shared_solver

    level = concurrency or project.run.concurrency
    for m in project.models:
        if m.solver is None or not is_shared_solver(m.solver) or not holds_state(m.solver):
            continue
        if m.concurrency != "serial" and level > 1 and (m.max_concurrency or level) > 1:
            raise SolverMisuse(
                f"model {m.key!r} was given one solver instance ({type(m.solver).__name__}) for every trial, at "
                f"concurrency {level}: trials running at once would share its state. Pass a factory instead "
                f"(solver=lambda ctx: {type(m.solver).__name__}(...), called once per trial), or concurrency=1, "
                "or concurrency='serial' on the model")


def _sweep(project: str | Path | Project | None, *, models: Sequence[str] | None, tags: Sequence[str] | None,
           limit: int | None, trials: int | None, k_values: Sequence[int] | None, concurrency: int | None,
           seed: int | None, db: str | Path | None, tune: bool, resume: str | None) -> Sweep:
    from arenatui.plan import Filters
    from arenatui.session.sweep import Sweep, SweepOptions

    if resume is not None:
        if models or tags or limit is not None or trials is not None or seed is not None:
            raise ArenaError("resume= continues a run with the seed and filters it was started with: drop models, "
                             "tags, limit, trials and seed")
        opts = SweepOptions(db=db, resume=resume, concurrency=concurrency, tune=tune, solvers=_solvers(project))
    else:
        if project is None:
            raise ArenaError("bench() needs a project: a TOML file, a directory holding arena.toml, or a Project")
        checked = _validated(project)
        _shared_instances_checked(checked, concurrency)
        opts = SweepOptions(project=checked, filters=Filters(models=tuple(models or ()), tags=tuple(tags or ()),
                                                             limit=limit, trials=trials),
                            db=db, concurrency=concurrency, seed=seed, tune=tune, started_by="bench")
    sweep = Sweep(opts, live_metrics=False)
    for k in k_values or ():
        if not 1 <= k <= sweep.plan.trials:
            raise ArenaError(f"k_values: pass@{k} needs 1 <= k <= trials ({sweep.plan.trials})")
    return sweep


def _result(sweep: Sweep, status: str, k_values: Sequence[int] | None) -> RunResult:
    return RunResult(sweep.run_id, sweep.db_path.resolve(), status, tuple(k_values or (1,)))


def bench(project: str | Path | Project | None = None, *, models: Sequence[str] | None = None,
          tags: Sequence[str] | None = None, limit: int | None = None, trials: int | None = None,
          k_values: Sequence[int] | None = None, concurrency: int | None = None, seed: int | None = None,
          db: str | Path | None = None, tune: bool = False, console: bool = False,
          resume: str | None = None) -> RunResult:
    """Run a sweep to its end and return its result; the run is stored like one `arena evaluate` makes.

    `project` is a TOML file (or a directory holding arena.toml) or a `Project`; the filters are the CLI's
    (`--models`, `--tags`, `--limit`, `--trials`, `--concurrency`, `--seed`, `--db`, `--tune`). `resume` ("last" or
    a run id) makes the calls a stored run is missing (pass the same Project again when its models were given
    solvers from Python). `console=True` opens the live console when stdout is a terminal.

    Drives its own event loop (`anyio.run`): inside a running loop it raises RuntimeError; use `await abench()`.
    Ctrl-C stops the run (every finished call is stored) and raises KeyboardInterrupt.
    """
    if _in_event_loop():
        raise RuntimeError(IN_LOOP)
    import anyio

    def make() -> Sweep:
        return _sweep(project, models=models, tags=tags, limit=limit, trials=trials, k_values=k_values,
                      concurrency=concurrency, seed=seed, db=db, tune=tune, resume=resume)

    if console and sys.stdout.isatty():
        from arenatui.tui.app import ArenaApp

        sweep = make()  # as `arena run` does: validated before the console starts its own loop
        ArenaApp(sweep).run()
        if sweep.error is not None:
            raise sweep.error
        return _result(sweep, sweep.status or "cancelled", k_values)

    async def go() -> RunResult:
        sweep = make()
        return _result(sweep, await sweep.run(), k_values)

    return anyio.run(go)


async def abench(project: str | Path | Project | None = None, *, models: Sequence[str] | None = None,
                 tags: Sequence[str] | None = None, limit: int | None = None, trials: int | None = None,
                 k_values: Sequence[int] | None = None, concurrency: int | None = None, seed: int | None = None,
                 db: str | Path | None = None, tune: bool = False, resume: str | None = None) -> RunResult:
    """`bench()` for code already inside an event loop (asyncio or trio, through anyio): the same arguments but
    `console` (the console needs a loop of its own)."""
    sweep = _sweep(project, models=models, tags=tags, limit=limit, trials=trials, k_values=k_values,
                   concurrency=concurrency, seed=seed, db=db, tune=tune, resume=resume)
    return _result(sweep, await sweep.run(), k_values)


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        pass
    try:
        import sniffio

        sniffio.current_async_library()
        return True
    except Exception:
        return False


__all__ = ["RunResult", "abench", "bench"]

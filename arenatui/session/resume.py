"""Resume as data: what a stored run says of the sweep that continues it, read in one place.

`read_resume(store, run, ...)` reads it all (the stored configuration as the run recorded it, its filters, the calls
done, the answers awaiting their judge, the open steps of repairs and escalations, the chain outcomes, the stored
rows live metrics start from, the time already spent and the recent attempts the client's rate limiters continue
from) into one frozen `ResumeState`, whose plan is built once and never changed after. `Sweep` only wires it, and a
test reads it from a database without running a sweep.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arenatui.config import Project
from arenatui.kernel.errors import PlanError
from arenatui.kernel.events import lane_key
from arenatui.kernel.units import plural
from arenatui.plan import Filters, Plan, Resumed, make_plan
from arenatui.project import load_project, project_from_dict, project_to_dict
from arenatui.session.live import STORED_COLUMNS, busy_seconds, resumed_rows
from arenatui.store import Store
from arenatui.store.db import RunRecord

LIMIT_WINDOW_S = 60.0
"""How far back resume looks for attempts to seed the client's rpm/tpm limiters (their window)."""


@dataclass(frozen=True, slots=True)
class ResumeState:
    """A stored sweep as the session that continues it needs it."""

    record: RunRecord
    filters: Filters
    """The run's own filters (kept with the run: a resume never changes them)."""
    plan: Plan
    """The plan minus what is stored, with the answers awaiting their judge, the open steps and the chain outcomes;
    built under this session's filters (`--prompts` on a resume narrows the session only)."""
    live_rows: tuple[tuple[Any, ...], ...]
    """Every stored figure, so the live view starts from them (spend, retries, latencies, errors), not zeros."""
    elapsed_s: float
    """The time the earlier sessions spent working (their calls' spans joined)."""
    recent: tuple[tuple[str, str, float], ...]
    """Attempts within the limiters' window before now (lane, kind, time): the client's rpm/tpm limiters go on
    from them."""
    notices: tuple[str, ...]
    """What changed in the project file since (the stored configuration is used)."""

    @property
    def run_id(self) -> str:
        return self.record.run_id


def read_resume(store: Store, run: str, *, retry_errored: bool = False, prompts: Sequence[str] = (),
                solvers: Mapping[str, Any] | None = None, now: float | None = None) -> ResumeState:
    """The state of stored run `run` (an id or 'last') for a sweep to continue. A load run is refused (PlanError):
    its requests went out on a schedule and are never resumed."""
    from arenatui.store.load_queries import run_kinds
    from arenatui.store.queries import judged_rows, recent_attempts  # numpy: only a resume pays for it

    rec = store.get_run(run)
    if run_kinds(store, [rec.run_id])[rec.run_id][0] == "load":  # its plan is a project's: never resumed
        raise PlanError(f"run {rec.run_id} is a load run ({run!r}): its requests went out on a schedule and a load "
                        "run is not resumed (that ran a sweep's calls into it); pass a sweep's run id (arena runs "
                        "lists them), or start a new load run with arena load")
    project = project_from_dict(rec.config, Path(rec.project_path or f"run {rec.run_id}"), solvers or None)
    filters = Filters.from_dict(rec.filters)
    session = dataclasses.replace(filters, prompts=tuple(prompts)) if prompts else filters
    done = store.done_keys(rec.run_id, retry_errored=retry_errored)
    # answers an interruption left unjudged (and, with --retry-errored, failed judgings) are judged again; their
    # models are never called again for them
    awaiting = tuple(store.awaiting_judge(rec.run_id, retry_errored=retry_errored))
    # chains of steps go on where they stopped
    stepped = project.run.repair is not None or any(m.escalate_to for m in project.models)
    steps = dict(store.open_steps(rec.run_id)) if stepped else {}
    # a chained project: the dependents still to run take their inputs from stored answers (of every case another
    # depends on: the filters pick which dependents run)
    parents = {p for c in project.cases for p in c.depends_on}
    chains = store.chain_outcomes(rec.run_id, parents, retry_errored=retry_errored) if parents else {}
    plan = make_plan(project, session, Resumed(done, awaiting, steps, chains))
    rows = [(lane_key(r[0], r[-1]), *r[1:-1]) for r in
            store.results(rec.run_id, (*STORED_COLUMNS, "started_at", "finished_at", "variant"))]
    rows += judged_rows(store, rec.run_id, retry_errored=retry_errored)  # the judge lanes' rows
    n = len(STORED_COLUMNS)
    live_rows = tuple(r[:n] for r in resumed_rows(rows, retry_errored=retry_errored))
    elapsed = busy_seconds((r[n], r[n + 1]) for r in rows if r[n] and r[n + 1])
    now = time.time() if now is None else now
    recent = tuple(recent_attempts(store, rec.run_id, now - LIMIT_WINDOW_S))
    return ResumeState(rec, filters, plan, live_rows, elapsed, recent,
                       tuple(project_changes(rec.project_path, project)))


def _differences(what: str, old: dict[str, object], new: dict[str, object]) -> list[str]:
    out = []
    added = [k for k in new if k not in old]
    removed = [k for k in old if k not in new]
    changed = [k for k in old if k in new and old[k] != new[k]]
    for verb, keys in (("added", added), ("removed", removed), ("changed", changed)):
        if keys:
            shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
            out.append(f"{plural(len(keys), what)} {verb} ({shown})")
    return out


def project_changes(project_path: str | None, stored: Project) -> list[str]:
    """What differs between a resumed run's stored project and its file now: said, never applied."""
    if not project_path or not Path(project_path).exists():
        return []
    try:
        now = project_to_dict(load_project(project_path))
    except Exception:  # advice only: whatever is wrong with the file now must not stop the resume
        return [f"the project file {project_path} no longer loads; the run's stored configuration is used"]
    then = project_to_dict(stored)
    diffs = _differences("model", {m["key"]: m for m in then["models"]}, {m["key"]: m for m in now["models"]})
    diffs += _differences("case", {c["id"]: c for c in then["cases"]}, {c["id"]: c for c in now["cases"]})
    rest = [k for k in then if k not in ("models", "cases", "project") and then[k] != now.get(k)]
    if rest:
        diffs.append("settings changed in " + ", ".join(f"[{k}]" for k in rest))
    if not diffs:
        return []
    return [f"the project file {project_path} changed since this run started: {'; '.join(diffs)}. The run's stored "
            "configuration is used; start a new run (without --resume) to use the file as it is now"]

"""`arena merge`: the shards of one run, each in its own database, joined exactly into one.

Rows are copied as they are (results, failed attempts, judgments, load requests and segments, client load,
concurrency changes, tuner decisions, the shards' own rows): nothing is summarised, so every figure a view shows
of the merged run is recomputed from the raw rows and percentiles are exact. Rows move inside SQLite, never through
Python objects, so memory stays flat however large the shards are (benchmarks/merge_scale.py): each input is
ATTACHed and its rows appended to a temporary table (on disk), then one transaction writes them into the output
in key order, so a refused or failed merge leaves nothing of the run behind, and the file is laid out as a run made
on one machine (measured: the leaderboard of a merged 1,000,000-call run read as fast as an unsharded one's, and as
fast as one written shard after shard while the file sat in the page cache).

Refused, with the difference named: shards whose plans differ (project, cases, filters, rates, the start barrier),
shards of different shard counts, the same shard twice, the same call twice, and a shard still running. Other runs
already in the output database are kept; a run merged there before can take more of its shards later.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arenatui.kernel.errors import PlanError, StoreError
from arenatui.store.db import SQL_ERRORS, Store, explain_error

_ROW_TABLES = ("results", "failed_attempts", "judgments", "load_requests", "client_load", "concurrency_changes",
               "tuning_decisions", "run_shards")
"""Tables whose rows of a run are copied from every shard (load_segments are one plan: merged, not copied)."""
_LATEST_TABLES = ("load_segments", "declared_limits")
"""Tables with one row per key that every shard may hold: merged (load segments as one plan; a model's declared
rate limits, the latest a shard saw), not copied."""
_KEYS = {"results": ("model_key", "case_id", "trial"), "judgments": ("model_key", "case_id", "trial"),
         "load_requests": ("seq",), "run_shards": ("shard",)}
"""The tables with a key per call: a key twice is an overlap (the same call in two shards)."""
_ORDER = {**_KEYS, "failed_attempts": ("model_key", "case_id", "trial", "attempt", "at"), "client_load": ("at",),
          "concurrency_changes": ("at",), "tuning_decisions": ("at",)}
"""The order each table's rows are written in: its key, or its time."""
_PER_MACHINE = ("shard", "processes")
"""Filters that differ between a run's shards by design (which shard; each machine's own process count)."""
_STATUS_ORDER = ("running", "failed", "interrupted", "cancelled", "finished")
"""A merged run's status is its worst shard's (a still running shard is refused before)."""


@dataclass(frozen=True, slots=True)
class _Input:
    path: Path
    run: dict[str, Any]
    """The run's `runs` row, by column name."""
    status: str
    """As `Store.get_run` tells it (a dead holder's 'running' is 'interrupted')."""
    shards: tuple[tuple[int, int], ...]
    """(shard, shard count) rows it holds of the run; () for an unsharded database."""
    cases: str | None
    """The digest of the run's case set (what plans compare: the cases themselves are read only to name a
    difference)."""


@dataclass(slots=True)
class Merged:
    """What a merge did."""

    run_id: str
    kind: str
    status: str
    shard_count: int
    """The run's shard count (1 when its databases were not sharded)."""
    present: list[int] = field(default_factory=list)
    """Shard indices the output now holds."""
    added: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    """Per input file, the shards it brought."""
    rows: dict[str, int] = field(default_factory=dict)
    """Rows copied per table."""

    @property
    def missing(self) -> list[int]:
        return [i for i in range(self.shard_count) if i not in self.present] if self.present else []


def _columns(conn: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA {schema}.table_info({table})")]


def _first_difference(a: Any, b: Any, path: str, names: tuple[str, str] = ("one", "the other")) -> str | None:
    """Where two JSON values first differ, as 'path: A in one, B in the other' (None when equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return (f"{path}.{k}: {'absent' if k not in a else 'set'} in {names[0]}, "
                        f"{'absent' if k not in b else 'set'} in {names[1]}")
            found = _first_difference(a[k], b[k], f"{path}.{k}", names)
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items in {names[0]}, {len(b)} in {names[1]}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            key = x.get("id") or x.get("key") if isinstance(x, dict) else None
            found = _first_difference(x, y, f"{path}[{key!r}]" if key else f"{path}[{i}]", names)
            if found:
                return found
        return None
    if a != b:
        def short(v: Any) -> str:
            text = json.dumps(v)
            return text if len(text) <= 60 else text[:57] + "..."
        return f"{path}: {short(a)} in {names[0]}, {short(b)} in {names[1]}"
    return None


def _plan_of(inp: _Input) -> dict[str, Any]:
    filters = {k: v for k, v in json.loads(inp.run["filters_json"]).items() if k not in _PER_MACHINE}
    config = json.loads(inp.run["config_json"])
    for m in config.get("models") or ():
        if isinstance(m, dict):  # each machine may call the replica beside it: the same model, another address
            m.pop("base_url", None)
    return {"kind": inp.run["kind"], "project": inp.run["project"], "planned": inp.run["planned"],
            "config": config, "cases": inp.cases, "filters": filters}


def _read_input(path: Path, run: str | None) -> tuple[_Input | None, list[str]]:
    """The run of one input database (None when it does not hold `run`), and every run id it holds."""
    if not path.is_file():
        raise StoreError(f"arena merge: {str(path)!r} is not a file; expected a shard's results database (--db)")
    with Store(path) as store:
        ids = [r[0] for r in store.conn.execute("SELECT run_id FROM runs ORDER BY started_at")]
        if run is None:
            return None, ids
        if run not in ids:
            return None, ids
        _check_run_row(store.conn, path, run)
        rec = store.get_run(run)
        store.conn.row_factory = sqlite3.Row
        row = store.conn.execute("SELECT * FROM runs WHERE run_id = ?", (run,)).fetchone()
        store.conn.row_factory = None
        shards = tuple(store.conn.execute("SELECT shard, shards FROM run_shards WHERE run_id = ? ORDER BY shard",
                                          (run,)).fetchall())
        return _Input(path, dict(row), rec.status, shards, row["case_set"]), ids


def _cases(inp: _Input) -> Any:
    with Store(inp.path) as store:
        return store.get_run(str(inp.run["run_id"])).config.get("cases")


def _choose_run(inputs: Sequence[Path], run: str | None) -> str:
    if run is not None:
        return run
    held = [set(_read_input(p, None)[1]) for p in inputs]
    common = set.intersection(*held) if held else set()
    if len(common) == 1:
        return common.pop()
    if not common:
        listed = "; ".join(f"{p} holds {', '.join(sorted(h)) or 'no run'}" for p, h in zip(inputs, held, strict=True))
        raise PlanError(f"arena merge: no run id is in every input ({listed}). The shards of one run share one id: "
                        "start each with the same --run-id")
    raise PlanError(f"arena merge: the inputs share several runs ({', '.join(sorted(common))}); name one with --run")


def merge(out: Path | str, inputs: Sequence[Path | str], run: str | None = None) -> Merged:
    """Merge run `run` (default: the one run every input holds) from `inputs` into the database `out`."""
    out = Path(out)
    if out.exists() and not out.is_file():  # /dev/null, a FIFO, a directory: SQLite would leave a journal beside it
        raise PlanError(f"arena merge: {str(out)!r} is not a regular file; write the merge to a database file (a new "
                        "path, or one an earlier merge made)")
    paths = [Path(p) for p in inputs]
    for p in paths:
        if p.exists() and out.exists() and p.resolve() == out.resolve():
            raise PlanError(f"arena merge: {str(p)!r} is both the output and an input; write the merge to a new file")
    if len({p.resolve() for p in paths}) != len(paths):
        raise PlanError("arena merge: an input is named twice; each shard's database once")
    run_id = _choose_run(paths, run)
    found = [_read_input(p, run_id) for p in paths]
    for p, (inp, _ids) in zip(paths, found, strict=True):
        if inp is None:
            raise PlanError(f"arena merge: {str(p)!r} holds no run {run_id!r}; `arena runs --db {p}` lists its runs")
    shard_inputs = [inp for inp, _ in found if inp is not None]
    with Store(out) as store:
        conn = store.conn
        existing = conn.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        have = {int(s): int(n) for s, n in conn.execute("SELECT shard, shards FROM run_shards WHERE run_id = ?",
                                                        (run_id,))}
        if existing is not None and not have:
            raise PlanError(f"arena merge: {str(out)!r} already holds run {run_id} unsharded; merge into another file")
        reference = _read_input(out, run_id)[0] if existing is not None else shard_inputs[0]
        assert reference is not None
        _check(reference, shard_inputs, have)
        counts = {n for inp in shard_inputs for _, n in inp.shards} | set(have.values())
        merged = Merged(run_id, str(reference.run["kind"]), "finished", counts.pop() if counts else 1)
        _stage(conn, shard_inputs, run_id, new_run=existing is None)
        _commit(conn, shard_inputs, run_id, new_run=existing is None, merged=merged)  # all or nothing
    return merged


def _check(reference: _Input, inputs: Sequence[_Input], have: dict[int, int]) -> None:
    plan = _plan_of(reference)
    for inp in inputs:
        if inp.status == "running":
            raise PlanError(f"arena merge: run {inp.run['run_id']} in {str(inp.path)!r} is still running; merge "
                            "it when it has ended (a shard's calls would be missing)")
        if inp is not reference:
            names = (repr(str(reference.path)), repr(str(inp.path)))
            diff = _first_difference(plan, _plan_of(inp), "plan", names)
            if diff and diff.startswith("plan.cases:"):  # name the first case that differs
                diff = _first_difference(_cases(reference), _cases(inp), "plan.cases", names) or diff
            if diff:
                raise PlanError(f"arena merge: the shards planned run {inp.run['run_id']} differently ({diff}); only "
                                "shards of one plan merge. Start every shard with the same project, seed, filters and "
                                "options")
    seen: dict[int, str] = {s: "the output" for s in have}
    counts = {n: "the output" for n in have.values()}
    for inp in inputs:
        for s, n in inp.shards:
            if counts and n not in counts:
                other = next(iter(counts.items()))
                raise PlanError(f"arena merge: {str(inp.path)!r} holds shard {s}/{n} but {other[1]} holds shards of "
                                f"{other[0]}; a run's shards share one N")
            counts[n] = str(inp.path)
            if s in seen:
                raise PlanError(f"arena merge: shard {s}/{n} is in both {seen[s]} and {str(inp.path)!r}: the same "
                                "calls twice; merge each shard once")
            seen[s] = repr(str(inp.path))


def _stage(conn: sqlite3.Connection, inputs: Sequence[_Input], run_id: str, *, new_run: bool) -> None:
    """Copy every input's rows of the run into temporary tables (appended in order: sequential I/O), each row
    tagged with its input, and check the load segments agree. Nothing is written to the output yet."""
    conn.execute("PRAGMA temp_store = FILE")  # staged rows spill to a temporary file, never to memory
    for table in (*_ROW_TABLES, *_LATEST_TABLES, *(("runs", "case_sets") if new_run else ())):
        conn.execute(f"DROP TABLE IF EXISTS temp.merge_{table}")
        conn.execute(f"CREATE TEMP TABLE merge_{table} AS SELECT *, 0 AS merge_input FROM main.{table} WHERE 0")
    for i, inp in enumerate(inputs):
        try:
            conn.execute("ATTACH DATABASE ? AS src", (str(inp.path),))
        except SQL_ERRORS as e:
            raise explain_error(inp.path, e) from None
        try:
            if new_run and i == 0:
                _stage_rows(conn, "case_sets", "digest = (SELECT case_set FROM src.runs WHERE run_id = ?)", run_id, i)
                _stage_rows(conn, "runs", "run_id = ?", run_id, i)
            for table in (*_ROW_TABLES, *_LATEST_TABLES):
                _stage_rows(conn, table, "run_id = ?", run_id, i)
            _check_rows(conn, inp, i)
            _check_segments(conn, "temp.merge_load_segments", run_id, inp, inputs)
        except SQL_ERRORS as e:
            raise explain_error(inp.path, e) from None
        finally:
            conn.execute("DETACH DATABASE src")


def _tampered(inp: _Input | Path, what: str) -> PlanError:
    path = inp.path if isinstance(inp, _Input) else inp
    return PlanError(f"arena merge: {str(path)!r} holds {what}; arenatui never writes that, so the file was altered "
                     "or damaged: merge only shards as their runs wrote them (run that shard again)")


def _check_run_row(conn: sqlite3.Connection, path: Path, run: str) -> None:
    """The run's own row, before anything reads it: its plan is JSON objects and its times are numbers."""
    row = conn.execute("SELECT config_json, filters_json, typeof(planned), typeof(started_at), typeof(finished_at) "
                       "FROM runs WHERE run_id = ?", (run,)).fetchone()
    for name, text in (("config_json", row[0]), ("filters_json", row[1])):
        try:
            ok = isinstance(json.loads(text), dict)
        except (TypeError, ValueError, RecursionError):
            ok = False
        if not ok:
            raise _tampered(path, f"run {run} with a runs.{name} that is not a JSON object")
    for name, kind, allowed in (("planned", row[2], ("integer",)), ("started_at", row[3], ("integer", "real")),
                                ("finished_at", row[4], ("integer", "real", "null"))):
        if kind not in allowed:
            raise _tampered(path, f"run {run} with runs.{name} of type {kind} (expected a number)")


def _check_rows(conn: sqlite3.Connection, inp: _Input, index: int) -> None:
    """Every staged row of one input against the column types and, for results, the input's own stored plan:
    a number column holds a number, a score is in [0, 1], passed agrees with the status, and every call key is one
    the plan has (its models, prompt variants, cases and trials). Tampered rows flipped a merged ranking before."""
    for table in _ROW_TABLES:
        numeric = [c for c, kind in ((r[1], str(r[2]).upper())
                                     for r in conn.execute(f"PRAGMA main.table_info({table})"))
                   if "INT" in kind or "REAL" in kind]
        if not numeric:
            continue
        bad = " OR ".join(f"typeof({c}) NOT IN ('integer', 'real', 'null')" for c in numeric)
        row = conn.execute(f"SELECT {', '.join(numeric)} FROM temp.merge_{table} WHERE merge_input = ? AND ({bad}) "
                           "LIMIT 1", (index,)).fetchone()
        if row is not None:
            col, value = next((c, v) for c, v in zip(numeric, row, strict=True)
                              if v is not None and not isinstance(v, (int, float)))
            shown = value if isinstance(value, str) and len(value) <= 40 else f"{str(value)[:37]}..."
            raise _tampered(inp, f"a {table} row whose {col} is {shown!r}, not a number")
    plan = json.loads(inp.run["config_json"])
    filters = json.loads(inp.run["filters_json"])
    models = {str(m.get("key")) for m in plan.get("models") or () if isinstance(m, dict)}
    variants = {""} | {str(p.get("name")) for p in plan.get("prompts") or () if isinstance(p, dict)}
    cases = {str(c.get("id")) for c in _cases(inp) or () if isinstance(c, dict)}
    run_cfg = plan.get("run") if isinstance(plan.get("run"), dict) else {}
    trials = filters.get("trials") or run_cfg.get("trials") or 1
    trials = trials if isinstance(trials, int) and not isinstance(trials, bool) else 1
    conn.execute("DROP TABLE IF EXISTS temp.merge_plan")
    conn.execute("CREATE TEMP TABLE merge_plan (kind TEXT, key TEXT, PRIMARY KEY (kind, key))")
    conn.executemany("INSERT OR IGNORE INTO temp.merge_plan VALUES (?, ?)",
                     [("model", k) for k in models] + [("variant", v) for v in variants] +
                     [("case", c) for c in cases])
    try:
        row = conn.execute(
            "SELECT model_key, variant, case_id, trial, status, score, passed FROM temp.merge_results "
            "WHERE merge_input = ? AND (model_key NOT IN (SELECT key FROM temp.merge_plan WHERE kind = 'model') "
            "OR variant NOT IN (SELECT key FROM temp.merge_plan WHERE kind = 'variant') "
            "OR case_id NOT IN (SELECT key FROM temp.merge_plan WHERE kind = 'case') "
            "OR typeof(trial) != 'integer' OR trial < 0 OR trial >= ? "
            "OR (score IS NOT NULL AND (score < 0 OR score > 1)) OR passed NOT IN (0, 1) "
            "OR (passed = 1) != (status = 'passed') OR (passed = 1 AND score IS NULL)) LIMIT 1",
            (index, trials)).fetchone()
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.merge_plan")
    if row is None:
        return
    model, variant, case, trial, status, score, passed = row
    call = f"a result (model {model!r}, case {case!r}, trial {trial}{f', variant {variant!r}' if variant else ''})"
    if model not in models:
        why = f"of model {model!r}, which its plan does not have (it has {', '.join(sorted(models))})"
    elif variant not in variants:
        why = f"of prompt variant {variant!r}, which its plan does not have"
    elif case not in cases:
        why = f"of case {case!r}, which its plan does not have"
    elif not isinstance(trial, int) or not 0 <= trial < trials:
        why = f"of trial {trial}, outside its plan's {trials} trial{'s' if trials != 1 else ''} (0 to {trials - 1})"
    elif score is not None and not 0 <= score <= 1:
        why = f"with score {score:g} (a score is from 0 to 1)"
    else:
        why = f"with passed {passed!r} beside status {status!r} and score {score!r} (passed is 1 exactly when " \
              "the status is 'passed', and then it has a score)"
    raise _tampered(inp, f"{call} {why}")


def _stage_rows(conn: sqlite3.Connection, table: str, where: str, run_id: str, index: int) -> None:
    """Append src.table's matching rows to temp.merge_table, column by name (a column only one side has is left
    out: inputs of an older or newer schema still merge)."""
    theirs = set(_columns(conn, "src", table))
    cols = ", ".join(c for c in _columns(conn, "main", table) if c in theirs)
    if cols:
        conn.execute(f"INSERT INTO temp.merge_{table} ({cols}, merge_input) SELECT {cols}, ? FROM src.{table} "
                     f"WHERE {where}", (index, run_id))


def _check_segments(conn: sqlite3.Connection, against: str, run_id: str, inp: _Input,
                    inputs: Sequence[_Input]) -> None:
    """Every load shard walks the same segments: refuse ones that differ (a rate changed on one machine). A stop
    cuts a segment at a moment that differs by machine: its end may differ."""
    me = inputs.index(inp) if inp in inputs else -1
    mine = f"(SELECT * FROM temp.merge_load_segments WHERE merge_input = {me})" if me >= 0 else "src.load_segments"
    others = f"(SELECT * FROM {against} WHERE merge_input != {me})" if against.startswith("temp.") else against
    differ = conn.execute(
        f"SELECT s.segment, s.rate, s.start_s, m.rate, m.start_s FROM {mine} s JOIN {others} m "
        "ON m.run_id = s.run_id AND m.segment = s.segment WHERE s.run_id = ? AND (m.rate != s.rate OR "
        "abs(m.start_s - s.start_s) > 1e-6) LIMIT 1", (run_id,)).fetchone()
    if differ:
        seg, rate, start, m_rate, m_start = differ
        raise PlanError(f"arena merge: segment {seg} of run {run_id} is {rate:g}/s from {start:.3f} s in "
                        f"{str(inp.path)!r} but {m_rate:g}/s from {m_start:.3f} s in another shard (a rate was "
                        "changed on one machine): its shards offered different loads and cannot merge")


def _commit(conn: sqlite3.Connection, inputs: Sequence[_Input], run_id: str, *, new_run: bool,
            merged: Merged) -> None:
    """Write the staged rows into the output in one transaction, each table in its key's order (as a run made on
    one machine lays them out: a walk of a run's results by model, case, trial reads the file in order)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if new_run:
            _unstage(conn, "case_sets", "digest", ignore=True)
            _unstage(conn, "runs", "run_id")
        elif conn.execute("SELECT 1 FROM main.load_segments WHERE run_id = ? LIMIT 1", (run_id,)).fetchone():
            for inp in inputs:
                _check_segments(conn, "main.load_segments", run_id, inp, inputs)
        for table in _ROW_TABLES:
            try:
                merged.rows[table] = _unstage(conn, table, ", ".join(_ORDER[table]))
            except sqlite3.IntegrityError:
                raise PlanError(_overlap(conn, table, run_id, inputs)) from None
        conn.execute(
            "INSERT INTO main.load_segments (run_id, segment, rate, start_s, end_s, warmup_s, source, dropped) "
            "SELECT run_id, segment, rate, start_s, max(end_s), warmup_s, source, SUM(dropped) "
            "FROM temp.merge_load_segments "
            "WHERE true GROUP BY run_id, segment ORDER BY segment "  # WHERE: SQLite's upsert-after-SELECT rule
            # each machine dropped its own share of a segment's requests: they add up
            "ON CONFLICT (run_id, segment) DO UPDATE SET end_s = max(end_s, excluded.end_s), "
            "dropped = dropped + excluded.dropped")
        # each machine kept the limits its provider declared last: the latest of them is the run's
        cols = _columns(conn, "main", "declared_limits")
        conn.execute(
            f"INSERT INTO main.declared_limits ({', '.join(cols)}) SELECT {', '.join(cols)} "
            "FROM temp.merge_declared_limits WHERE true ORDER BY at "
            "ON CONFLICT (run_id, model_key) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in cols if c not in ("run_id", "model_key"))
            + " WHERE excluded.at >= declared_limits.at")
        _finish_run(conn, run_id, inputs, merged)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        for table in (*_ROW_TABLES, *_LATEST_TABLES, "runs", "case_sets"):
            conn.execute(f"DROP TABLE IF EXISTS temp.merge_{table}")
    merged.added = [(str(inp.path), tuple(s for s, _ in inp.shards)) for inp in inputs]


def _unstage(conn: sqlite3.Connection, table: str, order: str, *, ignore: bool = False) -> int:
    cols = ", ".join(_columns(conn, "main", table))
    cur = conn.execute(f"INSERT {'OR IGNORE ' if ignore else ''}INTO main.{table} ({cols}) SELECT {cols} "
                       f"FROM temp.merge_{table} ORDER BY {order}")
    return max(0, cur.rowcount)


def _overlap(conn: sqlite3.Connection, table: str, run_id: str, inputs: Sequence[_Input]) -> str:
    """The refusal for a key met twice: which call, and which files (or the output) brought it."""
    keys = _KEYS.get(table, ())
    if not keys:
        return f"arena merge: run {run_id}'s {table} rows meet twice: the shards overlap"
    cols = ", ".join(keys)
    row = conn.execute(f"SELECT {cols}, MIN(merge_input), MAX(merge_input) FROM temp.merge_{table} "
                       f"GROUP BY {cols} HAVING COUNT(*) > 1 LIMIT 1").fetchone()
    if row is not None:
        where = f"both {str(inputs[row[-2]].path)!r} and {str(inputs[row[-1]].path)!r} hold"
    else:
        match = " AND ".join(f"m.{k} = s.{k}" for k in keys)
        row = conn.execute(f"SELECT {cols}, merge_input FROM temp.merge_{table} s WHERE EXISTS (SELECT 1 FROM "
                           f"main.{table} m WHERE m.run_id = s.run_id AND {match}) LIMIT 1").fetchone()
        where = (f"{str(inputs[row[-1]].path)!r} and the output already hold" if row is not None
                 else "two inputs hold")
    what = ", ".join(f"{k} {v!r}" for k, v in zip(keys, row or (), strict=False)) or "a row"
    return (f"arena merge: {where} {what} of run {run_id} ({table}): the shards overlap (the same call twice). "
            "Merge each shard once; shards of one run take disjoint calls when started with the same N and "
            "different K")


def _finish_run(conn: sqlite3.Connection, run_id: str, inputs: Sequence[_Input], merged: Merged) -> None:
    """The merged run's record: its worst shard's status, the earliest start and latest end, no live holder, and
    the filters without this or that machine's shard (inside _commit's transaction)."""
    statuses = [(inp.status, str(inp.path)) for inp in inputs]
    stored = conn.execute("SELECT status FROM main.runs WHERE run_id = ?", (run_id,)).fetchone()
    if stored is not None and stored[0] != "running":  # a merged run from before: its own shards' worst
        statuses.append((stored[0], "an earlier merge"))
    status, where = min(statuses, key=lambda s: _STATUS_ORDER.index(s[0]) if s[0] in _STATUS_ORDER else 0)
    merged.status = status
    merged.present = [int(r[0]) for r in conn.execute("SELECT shard FROM run_shards WHERE run_id = ? ORDER BY shard",
                                                      (run_id,))]
    message = None if status == "finished" else f"a shard ({where}) ended {status}"
    if merged.missing:
        missing = ", ".join(map(str, merged.missing))
        message = (message + "; " if message else "") + \
            f"{len(merged.present)} of {merged.shard_count} shards merged (missing: {missing})"
    filters = json.loads(conn.execute("SELECT filters_json FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0])
    for k in _PER_MACHINE:
        filters.pop(k, None)
    starts = [float(inp.run["started_at"]) for inp in inputs]
    ends = [float(inp.run["finished_at"]) for inp in inputs if inp.run.get("finished_at") is not None]
    conn.execute("UPDATE runs SET status = ?, message = ?, started_at = min(started_at, ?), "
                 "finished_at = max(coalesce(finished_at, 0), ?), pid = NULL, host = 'merged', "
                 "heartbeat_at = NULL, filters_json = ? WHERE run_id = ?",
                 (status, message, min(starts), max(ends) if ends else 0.0, json.dumps(filters), run_id))



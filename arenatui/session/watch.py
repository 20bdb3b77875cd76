"""A run another process is running, followed through its results database(s) only: `arena watch`'s model.

The stored rows are folded back into a `LiveMetrics` as the events they were (a result is a call started and
finished, a retried attempt a retry, a level change a level change, a tuner decision a decision), new rows only, by
rowid: so the matrix, the rates over the window, retries, the 429 share, percentiles and sparklines are computed by
the one piece of code the console uses, from the same facts. What only the running process knows (calls in flight
and backing off, caps, the target, pause, the tuner) comes from the live state it publishes once a second
(store.live_state). Several databases are the shards of one run: their rows are disjoint, so folding them all into
one LiveMetrics merges them exactly (the rule `arena merge` follows), and a request goes to every shard.
"""

from __future__ import annotations

import dataclasses
import glob
import math
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arenatui.kernel.errors import ArenaError, PlanError, StoreError
from arenatui.kernel.events import (
    JUDGE_LANE_PREFIX,
    CallFinished,
    CallResult,
    CallRetrying,
    CallStarted,
    ClientLoadSampled,
    ConcurrencyChanged,
    JudgeFinished,
    RunFinished,
    RunPaused,
    RunResumed,
    TunerDecided,
    lane_key,
)
from arenatui.load.live import LoadSnapshot
from arenatui.scoring.failure_modes import TRUNCATED_FINISH
from arenatui.session.live import (
    ERRORED,
    FAILED,
    MESSAGES_KEPT,
    NO_TEXT,
    NO_TEXT_MODES,
    PASSED,
    QUEUED,
    UNREACHABLE,
    UNSCORED,
    LiveMetrics,
)
from arenatui.store.db import Connection, RunRecord, Store, sql_errors_explained
from arenatui.store.live_state import (
    ControlRequest,
    LaneLive,
    LiveState,
    answers,
    ask,
    open_for_requests,
    read_live_state,
    request,
)
from arenatui.store.queries import RunPlan, resolve_run, stored_plan
from arenatui.store.watch_queries import (
    FOLD_BATCH,
    FOLLOWED,
    StoredSoFar,
    new_client_load,
    new_concurrency_changes,
    new_judgments,
    new_load_requests,
    new_results,
    new_retries,
    new_tuning_decisions,
    resumed_results,
    run_end,
    stored_so_far,
)

if TYPE_CHECKING:
    from arenatui.session.live import _ModelAgg
    from arenatui.tuning.levels import ModelReadout

def shard_paths(given: Sequence[str]) -> list[Path]:
    """`--db` values as database files: a directory stands for its *.db files, a pattern for its matches."""
    out: list[Path] = []
    for g in given:
        p = Path(g)
        if p.is_dir():
            found = sorted(p.glob("*.db"))
            if not found:
                raise PlanError(f"--db {g}: the directory holds no *.db file (the shards' databases)")
            out += found
        elif any(ch in g for ch in "*?["):
            matched = sorted(Path(m) for m in glob.glob(g))
            if not matched:
                raise PlanError(f"--db {g}: no file matches the pattern")
            out += matched
        else:
            out.append(p)
    return list(dict.fromkeys(out))


@dataclass(slots=True)
class Shard:
    """One database of the watched run, and how far its rows have been folded."""

    path: Path
    conn: Connection
    record: RunRecord
    cursors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FOLLOWED, 0))
    state: LiveState | None = None
    writable: bool | None = None
    """Whether control requests can be written to it (None until the first request)."""
    ended: str | None = None
    """How its run ended, once the runs table says so."""
    cancelled: dict[int, CallResult] = field(default_factory=dict)
    """Calls stored 'cancelled' (an earlier session's stop), by rowid, as folded: a resume replaces such a row in
    place, under the same rowid, so these are read again until they hold a result, whose spend includes what the
    cancelled attempts spent (UPSERT_RESULT adds them): that part, folded already, is taken back then."""
    unscored: set[tuple[str, str, int]] = field(default_factory=set)
    """Candidate calls (lane, case, trial) folded unscored and not yet judged: a verdict moves such a call on; a
    call whose row was read after its verdict had rewritten it is counted scored already."""


class WatchedRun:
    """Everything `arena watch` shows of a run, refreshed by `poll()` (call it a few times a second)."""

    def __init__(self, dbs: Sequence[Path], run: str = "last", *, read_now: bool = True) -> None:
        if not dbs:
            raise PlanError("arena watch needs a results database: --db PATH (several for the shards of one run)")
        self.shards: list[Shard] = []
        run_id = run
        for path in dbs:
            with Store(path, read_only=True) as store:
                record = resolve_run(store, run_id)
            run_id = record.run_id  # 'last' means the first database's newest run; the other shards hold it too
            from arenatui.store.db import connect_read_only

            self.shards.append(Shard(path, connect_read_only(path), record))
        self.run_id = run_id
        first = self.shards[0].record
        self.plan: RunPlan = stored_plan(first)
        self.project_name = first.project
        self.db_path = self.shards[0].path
        keys = [lane_key(m, v) for m in self.plan.models for v in (self.plan.variants.get(m) or ("",))]
        judged: dict[str, set[str]] = {}
        for j in self.plan.judged:
            judged.setdefault(JUDGE_LANE_PREFIX + j.judge, set()).update(j.judged)
        per_case = len(keys) * self.plan.trials  # a judge lane's calls per judged case: candidates × trials
        self._model_index = {k: i for i, k in enumerate(keys)}
        self.live = LiveMetrics(keys, [c.id for c in self.plan.cases], self.plan.trials, clock=time.time,
                                judges=[(k, frozenset(cases), per_case) for k, cases in judged.items()])
        self.live.t0 = min(s.record.started_at for s in self.shards)
        # planned: the whole run's calls (a shard's record holds the whole plan's count too), so the shards given
        # fill one matrix; a watcher given some of the shards shows how far they took the whole run
        self._lanes = frozenset(self.live.row_keys)
        self.control = RemoteControl(self)
        self.tuner = RemoteTuner(self)
        self.tune_at_start = False
        """(The run screen's: the watcher shows the rates pane first.)"""
        self.asked: dict[tuple[int, int], ControlRequest] = {}
        """Requests sent and not yet answered: (shard index, request id) → request."""
        self.answered: list[tuple[ControlRequest, str, str | None]] = []
        """Answers heard since the view last took them (take_answers)."""
        self.read_only_reason: str | None = None
        self._merged_dir: tempfile.TemporaryDirectory[str] | None = None
        self._merges = 0
        self.catching_up = True
        """Whether the figures are behind the database: the stored rows not read yet (read_now=False, until
        take_stored), or the last poll left rows unread (it reads at most FOLD_BATCH per table)."""
        self.stored_read = False
        """Whether the rows stored before the watcher opened are in the figures (until then poll folds none)."""
        if read_now:
            self.take_stored(self.read_stored())
        else:
            self.poll()

    def read_stored(self) -> list[StoredSoFar]:
        """Every shard's rows stored so far, as SQL aggregates (seconds on a million calls): on a connection of its
        own, so a view can read them in a thread while it shows the screen and polls the live state."""
        from arenatui.store.db import connect_read_only

        out = []
        for sh in self.shards:
            with sql_errors_explained(sh.path):
                conn = connect_read_only(sh.path)
                try:
                    out.append(stored_so_far(conn, self.run_id, self.live.t0, sorted(TRUNCATED_FINISH),
                                             sorted(NO_TEXT_MODES)))
                finally:
                    conn.close()
        return out

    def take_stored(self, so_far: Sequence[StoredSoFar]) -> None:
        """read_stored's aggregates into the figures (on the thread that owns them), then a poll from there."""
        for sh, stored in zip(self.shards, so_far, strict=True):
            self._seed(sh, stored)
        self.stored_read = True
        self.poll()

    # ---- following -----------------------------------------------------------------------------

    def poll(self) -> None:
        """Fold every shard's new rows, read the live states and the answers to requests."""
        behind = False
        for i, sh in enumerate(self.shards):
            with sql_errors_explained(sh.path):  # SQLite's errors leave as the StoreError that explains them
                behind = (self._fold(sh) if self.stored_read else True) or behind
                sh.state = read_live_state(sh.conn, self.run_id)
                sh.ended = run_end(sh.conn, self.run_id)  # None again when a resume runs it again
                self._answers(i, sh)
        self.catching_up = behind
        self._apply_live()

    def _seed(self, sh: Shard, so_far: StoredSoFar) -> None:
        """A shard's rows stored before the watcher opened, all but the newest TAIL, as SQL aggregates straight into
        the figures (a million calls replayed one by one took 20-40 s; aggregated, well under a second), each
        sum where LiveMetrics' own fold (`_finished`, `_retrying`) would put it. The newest rows are folded one by one
        by the first polls, which gives the rates over the window, the sparklines and the latencies."""
        live = self.live
        cases = {c: i for i, c in enumerate(live.case_ids)}
        n_cases = len(live.case_ids)
        rows = {k: live.rows[i] for k, i in self._model_index.items()}
        no_text = live.cells[NO_TEXT]
        for model, variant, case_id, *counts, cost, itok, otok, rtok, est, trunc, score, empty in so_far.results:
            key = lane_key(model, variant)
            agg = rows.get(key)
            c = cases.get(case_id)
            if agg is None or c is None:
                continue
            idx = self._model_index[key] * n_cases + c
            for status, n in zip(("passed", "failed", "errored", "unscored", "unreachable"), counts, strict=False):
                if n:
                    self._seeded_call(agg, idx, status, n, 0.0, 0, 0)
            no_text[idx] += empty or 0  # answers with no text among the failed (the matrix's ∅), as the fold counts
            agg.cost += cost or 0.0
            agg.input_tokens += itok or 0
            agg.output_tokens += otok or 0
            agg.reasoning_tokens += rtok or 0
            agg.estimated += est or 0
            agg.truncated += trunc or 0
            agg.score_sum += score or 0.0
        self._seed_misses(rows, so_far.misses)
        for model, variant, n, limited in so_far.retries:
            if (agg := rows.get(lane_key(model, variant))) is not None:
                agg.retries += n
                agg.rate_limited += limited or 0
                agg.session_attempts += n
                agg.attempts += n
        for judge, case_id, status, ec, n, cost, itok, otok, _att in so_far.judgments:
            lane = JUDGE_LANE_PREFIX + judge
            c = cases.get(case_id)
            if lane not in self._lanes or c is None:
                continue
            mi = live.row_keys.index(lane)
            agg = live.rows[mi]
            self._seeded_call(agg, mi * n_cases + c, status, n, cost, itok, otok)
            if status == "errored":
                agg.errors[ec or "error"] = agg.errors.get(ec or "error", 0) + n
        self._seed_series(so_far)
        sh.unscored.update((lane_key(m, v), c, t) for m, v, c, t in so_far.awaiting)
        sh.cursors.update(so_far.cursors)
        self._fold_retries(so_far.open_retries)
        self._fold_results(sh, so_far.cancelled)

    @staticmethod
    def _seed_misses(rows: dict[str, _ModelAgg], misses: Sequence[tuple[Any, ...]]) -> None:
        """Failed calls by failure mode, errored ones by class and message, into each lane's figures."""
        for model, variant, status, mode, cls, message, n in misses:
            if (agg := rows.get(lane_key(model, variant))) is None:
                continue
            if status == "failed":
                if mode is not None:
                    agg.failures[mode] = agg.failures.get(mode, 0) + n
            elif status in ("errored", "unreachable"):
                agg.errors[cls or "error"] = agg.errors.get(cls or "error", 0) + n
                text = message or "(no message)"  # as live's _count_message: the first MESSAGES_KEPT distinct
                if text in agg.error_messages or len(agg.error_messages) < MESSAGES_KEPT:
                    agg.error_messages[text] = agg.error_messages.get(text, 0) + n

    def _seed_series(self, so_far: StoredSoFar) -> None:
        """The whole run's calls and retries per second (the header's sparklines), as `_finished` bumps them."""
        live = self.live
        for series, per_s in ((live._done_sec, so_far.done_per_s), (live._retry_sec, so_far.retries_per_s)):
            for sec, n in per_s:
                if sec >= len(series):
                    series.extend([0] * (sec + 1 - len(series)))
                series[sec] += n

    def _seeded_call(self, agg: _ModelAgg, idx: int, status: str, n: int, cost: float, itok: int, otok: int) -> None:
        """`n` finished calls of one cell and status into a lane's figures and the matrix (a stored call's retried
        attempts come from failed_attempts, as the fold counts them)."""
        agg.done += n
        agg.session_attempts += n
        agg.attempts += n
        agg.cost += cost or 0.0
        agg.input_tokens += itok or 0
        agg.output_tokens += otok or 0
        dst = {"passed": PASSED, "failed": FAILED, "unscored": UNSCORED, "unreachable": UNREACHABLE}.get(status,
                                                                                                    ERRORED)
        if dst == PASSED:
            agg.passed += n
        elif dst == FAILED:
            agg.failed += n
        elif dst == UNSCORED:
            agg.unscored += n
        else:
            agg.errored += n
        cells = self.live.cells
        cells[QUEUED][idx] -= min(n, cells[QUEUED][idx])
        cells[dst][idx] += n

    def _fold(self, sh: Shard) -> bool:
        """A shard's new rows as the events they were; whether rows are left for the next poll."""
        live = self.live
        on = live.on_event
        c = sh.cursors
        # retries first: a call's retried attempts are stored in the batch that may also hold its result
        retries = new_retries(sh.conn, self.run_id, c["failed_attempts"])
        if retries:
            c["failed_attempts"] = retries[-1][0]
        self._fold_retries(retries)
        # at most FOLD_BATCH a refresh: a watcher opened on a long run catches up over a few refreshes
        rows = new_results(sh.conn, self.run_id, c["results"])
        if rows:
            c["results"] = rows[-1][0]
        behind = len(rows) >= FOLD_BATCH
        if sh.cancelled:
            rows += resumed_results(sh.conn, list(sh.cancelled))
        self._fold_results(sh, rows)
        # judge calls after the results (a verdict moves its candidate's call on from unscored)
        for row in new_judgments(sh.conn, self.run_id, c["judgments"]):
            c["judgments"] = row[0]
            _rid, model, variant, case_id, trial, judge, *rest = row
            candidate, lane = lane_key(model, variant), JUDGE_LANE_PREFIX + judge
            mi = self._model_index.get(candidate)
            if mi is None or lane not in self._lanes:
                continue
            status, score, passed, ec, emsg, output, attempts, lat, total, itok, otok, cost, t0, t1, detail = rest
            jt = mi * self.plan.trials + trial  # the judge call's own cell (plan.judge_trial)
            r = CallResult(lane, case_id, jt, status, output, score, bool(passed), ec, emsg, attempts, lat, total,
                           None, itok, otok, cost, None, False, t0, t1, score_detail=detail)
            on(CallStarted(lane, case_id, jt, attempts, t0))
            if (candidate, case_id, trial) in sh.unscored:
                sh.unscored.discard((candidate, case_id, trial))
                on(JudgeFinished(r, candidate, case_id, trial, t1))
            else:  # its candidate's row was read with this verdict on it (or not yet read: it will be, so)
                on(CallFinished(r, t1))  # the judge lane's call only
        for row in new_concurrency_changes(sh.conn, self.run_id, c["concurrency_changes"]):
            c["concurrency_changes"] = row[0]
            _rid, at, old, new, model_key, source = row
            if model_key is None or model_key in self._lanes:
                on(ConcurrencyChanged(old, new, model_key, source, at, at))
        for row in new_tuning_decisions(sh.conn, self.run_id, c["tuning_decisions"]):
            c["tuning_decisions"] = row[0]
            _rid, at, model_key, old, new, reason = row
            on(TunerDecided(model_key, old, new, reason, at))
        for row in new_client_load(sh.conn, self.run_id, c["client_load"]):
            c["client_load"] = row[0]
            _rid, at, cpu, interval = row
            on(ClientLoadSampled(cpu, interval, at, at))
        return behind

    def _fold_retries(self, rows: list[tuple[Any, ...]]) -> None:
        """Retried attempts (new_retries' rows) as the events they were: started, then retrying."""
        on = self.live.on_event
        for row in rows:
            _rid, model, variant, case_id, trial, attempt, reason, delay, message, at, status = row
            key = lane_key(model, variant)
            if key not in self._lanes:  # a judge lane: not watched (its calls are in the results figures)
                continue
            on(CallStarted(key, case_id, trial, attempt, at))
            on(CallRetrying(key, case_id, trial, attempt, reason, delay or 0.0, message or "", at, None, status))

    def _fold_results(self, sh: Shard, rows: list[tuple[Any, ...]]) -> None:
        """Stored calls (new_results' rows) as the events they were: started, then finished."""
        live = self.live
        on = live.on_event
        for row in rows:
            key = lane_key(row[1], row[2])
            if key not in self._lanes:
                continue
            r = CallResult(key, *row[3:])
            was = sh.cancelled.pop(row[0], None)
            if was is not None:
                _take_back_spend(live.rows[self._model_index[key]], was)
            if r.error_class == "cancelled":
                sh.cancelled[row[0]] = r
            elif r.status == "unscored":
                sh.unscored.add((key, r.case_id, r.trial))
            # started, then finished: a call backing off (its retry folded above) starts from there, as in the engine
            on(CallStarted(key, r.case_id, r.trial, r.attempts, r.started_at))
            on(CallFinished(r, r.finished_at))

    def _apply_live(self) -> None:
        """What only the running processes know, onto the folded figures: calls in flight and backing off per lane
        (summed over shards), the caps and the target (the first live shard's), paused, ended."""
        live = self.live
        states = [s.state for s in self.shards if s.state is not None]
        lanes: dict[str, LaneLive] = {}
        for st in states:
            for k, v in st.lanes.items():
                was = lanes.get(k, LaneLive())
                lanes[k] = LaneLive(was.in_flight + v.in_flight, was.backing_off + v.backing_off,
                                    v.cap if was.cap is None else was.cap)
        running = [st for st in states if st.alive()]
        for agg in live.rows:
            lane = lanes.get(agg.key) if running else None
            agg.in_flight = lane.in_flight if lane is not None else 0
            agg.backing_off = lane.backing_off if lane is not None else 0
        if running:
            live.target = sum(st.target or 0 for st in running) if len(self.shards) > 1 else running[0].target or 0
            for k, lane in lanes.items():
                if k in self._lanes:
                    live.caps[k] = lane.cap
        paused = bool(running) and all(st.paused for st in running)
        now = time.time()
        if self.ended is None and live.end_t is not None:  # resumed while watched: rates are a window again
            live.end_t = None
            live.state = "running"
        if self.ended is not None:
            if live.end_t is None:
                at = max((s.record.finished_at or 0.0 for s in self.shards), default=0.0) or now
                live.on_event(RunFinished(self.ended_status(), at))  # type: ignore[arg-type]
        elif paused and live.state == "running":
            live.on_event(RunPaused(now))
        elif not paused and live.state == "paused":
            live.on_event(RunResumed(now))

    @property
    def ended(self) -> str | None:
        """How the run ended, once every shard's process has recorded its end (None while any still runs)."""
        if any(s.ended is None for s in self.shards):
            return None
        return self.ended_status()

    def ended_status(self) -> str:
        ends = {s.ended for s in self.shards}
        return "failed" if "failed" in ends else "cancelled" if "cancelled" in ends else "finished"

    def running(self, now: float | None = None) -> bool:
        """Whether any shard's process is heard from (its live state younger than STALE_S)."""
        return any(s.state is not None and s.state.alive(now) for s in self.shards)

    def last_seen(self, now: float | None = None) -> float | None:
        """Seconds since the newest live state of any shard; None when none was ever published."""
        ages = [s.state.age(now) for s in self.shards if s.state is not None]
        return min(ages) if ages else None

    def status_words(self, now: float | None = None) -> str:
        """The run's state as the watcher's header says it."""
        if self.ended is not None:
            return self.ended
        if self.running(now):
            return "paused" if self.live.state == "paused" else "running"
        seen = self.last_seen(now)
        if seen is None:
            return "not running (no live state published: an older arenatui, or not started yet)"
        return f"not running (last seen {_ago(seen)} ago)"

    # ---- steering ------------------------------------------------------------------------------

    def send(self, action: str, values: Sequence[int | None] | int | None = None,
             model_key: str | None = None) -> list[str]:
        """Write one request to every shard (`values`: one per shard, or one for all); what could not be sent."""
        problems = []
        per = list(values) if isinstance(values, Sequence) else [values] * len(self.shards)
        for i, sh in enumerate(self.shards):
            try:
                conn = open_for_requests(sh.path)
                try:
                    asked = request(conn, ask(conn, self.run_id, action, per[i], model_key))
                finally:
                    conn.close()
                sh.writable = True
                self.asked[(i, asked.id)] = asked
            except (StoreError, ArenaError) as e:
                sh.writable = False
                self.read_only_reason = str(e)
                problems.append(str(e))
        return problems

    def _answers(self, i: int, sh: Shard) -> None:
        mine = [rid for (j, rid) in self.asked if j == i]
        if not mine:
            return
        for rid, (status, reply) in answers(sh.conn, mine).items():
            if status != "pending":
                req = self.asked.pop((i, rid))
                self.answered.append((req, status, reply))
        if sh.ended is not None or (sh.state is not None and not sh.state.alive()):
            for rid in mine:  # nobody will answer: say so rather than wait forever
                if (i, rid) in self.asked:
                    self.answered.append((self.asked.pop((i, rid)), "refused", "the run is not running"))

    def take_answers(self) -> list[tuple[ControlRequest, str, str | None]]:
        out, self.answered = self.answered, []
        return out

    def shard_lines(self, now: float | None = None) -> list[str]:
        """One line per shard: which, where, heard from when, how far."""
        out = []
        for sh in self.shards:
            st = sh.state
            where = "never published" if st is None else f"{st.host} pid {st.pid}, last seen {_ago(st.age(now))} ago"
            what = sh.ended or (("running" if st.alive(now) else "not running") if st is not None else "?")
            label = st.shard if st is not None and st.shard else sh.path.name
            out.append(f"shard {label}: {what} · {where} · {sh.path}")
        return out

    def results_db(self) -> Path:
        """The database the results view reads: the one shard's, or the shards merged as `arena merge` merges them
        (refused, with why, while a shard still runs), into a file of this watcher's own, made again each time."""
        if len(self.shards) == 1:
            return self.db_path
        from arenatui.store.merge import merge

        if self._merged_dir is None:
            self._merged_dir = tempfile.TemporaryDirectory(prefix="arena-watch-")
        out = Path(self._merged_dir.name) / f"merged-{self._merges}.db"
        self._merges += 1
        merge(out, [sh.path for sh in self.shards], self.run_id)
        return out

    def close(self) -> None:
        for sh in self.shards:
            sh.conn.close()
        if self._merged_dir is not None:
            self._merged_dir.cleanup()


def _take_back_spend(agg: _ModelAgg, r: CallResult) -> None:
    """Undo what LiveMetrics folded of a cancelled call's spend (its `_finished`), once the row holding it is read
    again with the resumed attempts' spend added to it."""
    agg.input_tokens -= r.input_tokens
    agg.output_tokens -= r.output_tokens
    agg.cost -= r.cost
    agg.reasoning_tokens -= r.reasoning_tokens or 0
    agg.estimated -= 1 if r.tokens_estimated else 0
    agg.truncated -= 1 if r.finish_reason in TRUNCATED_FINISH else 0


def _ago(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h"


class RemoteControl:
    """SweepControl over the database: reads the published live state, writes requests (answered asynchronously)."""

    def __init__(self, run: WatchedRun) -> None:
        self._run = run

    def _state(self) -> LiveState | None:
        return next((s.state for s in self._run.shards if s.state is not None and s.state.alive()), None)

    @property
    def target(self) -> int:
        return self._run.live.target

    @property
    def paused(self) -> bool:
        return self._run.live.state == "paused"

    @property
    def cancelled(self) -> bool:
        return not self._run.running()

    def set_concurrency(self, n: int, source: str = "user") -> None:
        run = self._run
        if len(run.shards) > 1:  # each shard its share of the asked total, the way the shards' targets add up
            n_live = max(1, len(run.shards))
            per: list[int | None] = [max(1, n // n_live + (1 if i < n % n_live else 0)) for i in range(n_live)]
            run.send("concurrency", per)
        else:
            run.send("concurrency", n)

    def set_model_cap(self, model_key: str, cap: int | None, source: str = "user") -> None:
        self._run.send("cap", cap or 0, model_key)

    def model_cap(self, model_key: str) -> int | None:
        if model_key not in self._run.live.row_keys:
            raise KeyError(model_key)
        st = self._state()
        lane = st.lanes.get(model_key) if st is not None else None
        return lane.cap if lane is not None else None

    def pause(self) -> None:
        self._run.send("pause")

    def resume(self) -> None:
        self._run.send("resume")

    def cancel(self) -> None:
        """A watcher never stops the run it watches (q leaves the watcher; the run goes on)."""


class RemoteTuner:
    """The running process's tuner as its live state shows it: readouts, levels, on or off."""

    def __init__(self, run: WatchedRun) -> None:
        self._run = run

    def _state(self) -> LiveState | None:
        return next((s.state for s in self._run.shards if s.state is not None), None)

    @property
    def enabled(self) -> bool:
        st = self._state()
        return bool(st is not None and st.tuner)

    @property
    def suspended(self) -> set[str]:
        st = self._state()
        return set(st.extra.get("suspended", ())) if st is not None else set()

    def level(self, key: str) -> int | None:
        st = self._state()
        levels = st.extra.get("tuner_levels", {}) if st is not None else {}
        value = levels.get(key)
        return None if value is None else int(value)

    def readouts(self) -> list[ModelReadout]:
        from arenatui.tuning.levels import readouts_from_rows

        st = self._state()
        return list(readouts_from_rows(st.tuning_rows)) if st is not None and st.tuning_rows else []

    def toggle(self) -> None:
        self._run.send("tune", 0 if self.enabled else 1)


class WatchedLoad:
    """A load run another process is running, as the load screen reads a LoadRun: its figures are the ones the
    running process publishes each second (its own window over its own samples), + and - ask it for a new rate.
    Several databases are the shards of one load run: their figures over the window are computed again from the
    shards' stored requests together (percentiles exact, never averaged), rates and counts added, and a new rate is
    split between them."""

    def __init__(self, paths: Sequence[Path], record: RunRecord) -> None:
        from arenatui.store.db import connect_read_only

        self.paths = list(paths)
        self.path = self.paths[0]
        self.run_id = record.run_id
        self.conns = [connect_read_only(p) for p in self.paths]
        self.conn = self.conns[0]
        self._leave = False
        self._last: LoadSnapshot | None = None
        self._cursors = [0] * len(self.paths)
        self._window: list[deque[tuple[Any, ...]]] = [deque() for _ in self.paths]
        """Per shard, its stored requests that finished within the last window (as new_load_requests' rows)."""

    @property
    def status(self) -> str | None:
        """How the run ended, once every shard's process has recorded its end (None while any still runs)."""
        ends = [run_end(c, self.run_id) for c in self.conns]
        if any(e is None for e in ends):
            return None
        return "failed" if "failed" in ends else "cancelled" if "cancelled" in ends else str(ends[0])

    def state(self) -> LiveState | None:
        return read_live_state(self.conn, self.run_id)

    def snapshot(self) -> LoadSnapshot:
        states = [read_live_state(c, self.run_id) for c in self.conns]
        published = [st.extra.get("load") if st is not None else None for st in states]
        if len(self.conns) == 1:
            figures = published[0]
            if figures:
                self._last = LoadSnapshot(**{**figures, "histogram": tuple(figures.get("histogram", ()))})
        elif all(published):
            self._last = self._merged(states, published)  # type: ignore[arg-type]
        if self._last is None:
            nan = math.nan  # nothing published yet: no figure, rather than zeros that read as measured
            return LoadSnapshot(elapsed_s=0.0, total_s=0.0, segment=0, target_rate=0.0, sent_rate=0.0,
                                achieved_rate=0.0, in_flight=0, done=0, lag_p50_ms=nan, lag_p99_ms=nan,
                                ttft_p50_ms=nan, ttft_p99_ms=nan, latency_p50_ms=nan, latency_p99_ms=nan,
                                latency_sched_p99_ms=nan, error_share=0.0, rate_limited_share=0.0,
                                timeout_share=0.0, histogram=())
        return self._last

    def _merged(self, states: list[LiveState | None], published: list[dict[str, Any]]) -> LoadSnapshot:
        """The shards' window figures from their requests together: each shard's times moved onto the newest
        shard's clock (a shard counts from its own start), then the one window function the load screen uses."""
        from arenatui.load.live import WINDOW_S, snapshot
        from arenatui.load.metrics import OUTCOMES, LoadRequest, Samples

        code = {name: i for i, name in enumerate(OUTCOMES)}
        now = time.time()
        # a shard's elapsed now: what it published, plus the time since it published it (while it runs)
        elapsed = [float(f["elapsed_s"]) + (st.age(now) if st is not None and st.alive(now) else 0.0)
                   for f, st in zip(published, states, strict=True)]
        now_s = max(elapsed)
        rows: list[tuple[float, float, tuple[Any, ...]]] = []
        for i, conn in enumerate(self.conns):
            window = self._window[i]
            for row in new_load_requests(conn, self.run_id, self._cursors[i]):
                self._cursors[i] = row[0]
                window.append(row)
            while window and window[0][5] < elapsed[i] - WINDOW_S:
                window.popleft()
            shift = now_s - elapsed[i]
            rows += [(r[5] + shift, shift, r) for r in window]
        rows.sort(key=lambda x: x[0])  # the window function reads samples in finish order
        samples = Samples()
        for _fin, sh, (_rid, segment, warmup, sched, sent, fin, outcome, ttft, lat, otok) in rows:
            samples.add(LoadRequest(0, segment, 0, "", bool(warmup), sched + sh, sent + sh, fin + sh,
                                    code.get(outcome, 0), ttft, lat, 0, otok or 0, None))
        first = published[0]
        snap = snapshot(samples, now_s=now_s, total_s=float(first["total_s"]), segment=int(first["segment"]),
                        target_rate=sum(float(f["target_rate"]) for f in published),
                        in_flight=sum(int(f["in_flight"]) for f in published),
                        sent_rate=sum(float(f["sent_rate"]) for f in published),
                        rate_held_s=min((float(f["rate_held_s"]) for f in published
                                         if f.get("rate_held_s") is not None), default=None))
        return dataclasses.replace(snap, done=sum(int(f["done"]) for f in published))

    def change_rate(self, rate: float) -> None:
        """The whole run's new offered rate, each shard its share (the shards' rates add up to it)."""
        for conn in self.conns:
            st = read_live_state(conn, self.run_id)
            if st is None or not st.alive():
                raise ValueError("the load run is not running: nothing would apply a new rate")
        for path in self.paths:
            out = open_for_requests(path)
            try:
                ask(out, self.run_id, "rate", rate / len(self.paths))
            finally:
                out.close()

    def cancel(self) -> None:
        """q stops watching (the run goes on where it runs); a second q quits."""
        self._leave = True

    async def run(self) -> str | None:
        """Until the run ends or the watcher leaves: the load screen's worker, whose end the screen shows."""
        import anyio

        for _ in iter(int, 1):  # another process's end is a row to poll for: nothing in this process to wait on
            if self._leave or self.status is not None:
                break
            await anyio.sleep(0.5)
        return self.status

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


def open_run(dbs: Sequence[Path], run: str = "last", *, read_now: bool = True) -> WatchedRun | WatchedLoad:
    """The watcher's model of a run: a sweep's (any number of shards; read_now=False leaves its stored rows for the
    view to read, WatchedRun.read_stored) or a load run's (any number of shards)."""
    from arenatui.store.load_queries import run_kinds

    if not dbs:
        raise PlanError("arena watch needs a results database: --db PATH (several for the shards of one run)")
    with Store(dbs[0], read_only=True) as store:
        record = resolve_run(store, run)
        kind = run_kinds(store, [record.run_id])[record.run_id][0]
    if kind != "load":
        return WatchedRun(dbs, record.run_id, read_now=read_now)
    return WatchedLoad(dbs, record)

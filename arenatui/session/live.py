"""Live metrics: engine events folded into rolling aggregates that views sample a few times a second.

Pure and synchronous: `on_event` is O(1) and allocates little; percentiles, rates and sparkline
series are computed only when a view asks for a `snapshot()`. Memory is bounded by the number of
models, cases and seconds, never by the number of calls.
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from arenatui.engine.client_load import OVERLOAD_CPU, OVERLOAD_S, OverloadTracker
from arenatui.kernel.advice import single_slot_advice
from arenatui.kernel.events import (
    VARIANT_SEP,
    CallFinished,
    CallRetrying,
    CallStarted,
    ClientLoadSampled,
    ConcurrencyChanged,
    DeclaredLimits,
    Event,
    JudgeFinished,
    LimitsDeclared,
    RunFinished,
    RunPaused,
    RunResumed,
    StepFinished,
    TunerDecided,
)
from arenatui.kernel.limits import MAX_CONCURRENCY
from arenatui.kernel.units import plural
from arenatui.scoring.failure_modes import TRUNCATED_FINISH
from arenatui.stats.percentiles import percentile

if TYPE_CHECKING:
    from arenatui.plan import Plan

QUEUED, IN_FLIGHT, BACKOFF, PASSED, FAILED, ERRORED, UNSCORED, UNREACHABLE = range(8)
STATE_NAMES = ("queued", "in flight", "backing off", "passed", "failed", "errored", "unscored", "unreachable")
"""UNSCORED: answered, and an llm_judge scorer has not scored it (awaiting its judge, or outside its sample).
UNREACHABLE: a chained case not run because a parent did not pass in that trial (counted among errors by class)."""
_N_STATES = 8
NO_TEXT = 8
"""After the eight states in a cell's counts: of its FAILED trials, those whose answer had no text at all (failure mode
`empty` or `cut_while_reasoning`): the matrix tells them from wrong answers (issue 37 item 15b)."""
NO_TEXT_MODES = frozenset(("empty", "cut_while_reasoning"))
RING = 120
"""Seconds of per-model history kept for sparklines."""
LATENCY_SAMPLES = 1024
"""Most recent latencies per model kept for percentiles."""


def busy_seconds(spans: Iterable[tuple[float, float]]) -> float:
    """Seconds covered by at least one (start, end) span: the time earlier sessions of a run took, without
    the gaps between them (a run resumed the next day did not take a day)."""
    total = 0.0
    cur_start = cur_end = None
    for start, end in sorted(spans):
        if cur_end is None or start > cur_end:
            if cur_end is not None and cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None and cur_start is not None:
        total += cur_end - cur_start
    return total


class StoredResult(NamedTuple):
    """One result a resumed or reopened run already has, as `preload` folds it back in."""

    model_key: str
    case_id: str
    trial: int
    status: str
    score: float | None
    error_class: str | None = None
    attempts: int = 1
    latency_ms: float | None = None
    ttft_ms: float | None = None
    cost: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    failure_mode: str | None = None
    tokens_estimated: int = 0
    """1 when the server reported no usage and arenatui estimated the tokens (and so the cost)."""


STORED_COLUMNS = StoredResult._fields
"""The results-table columns `preload` reads, in StoredResult's order (they share names)."""

JudgeLane = tuple[str, Collection[str], int]
"""A judge lane as LiveMetrics takes it: (lane key ``judge:<model key>``, the cases it judges, judge calls per
judged case = candidate models × trials)."""


def judge_lanes(plan: Plan) -> list[JudgeLane]:
    """The plan's judge lanes, as LiveMetrics takes them."""
    per_case = len(plan.models) * plan.trials
    return [(j.key, j.case_ids, per_case) for j in plan.judges]


def resumed_rows(rows: Iterable[Sequence[Any]], *, retry_errored: bool) -> list[tuple[Any, ...]]:
    """Stored results (StoredResult order, maybe with more columns after) as a resumed run's preload sees them.

    A cancelled call runs again, so it is left out; with retry_errored so is every errored call, except a
    judge_error one: its answer stays and only its judge runs again, so it is back to unscored, awaiting_judge."""
    out = []
    for r in rows:
        status, ec = r[3], r[5]
        if ec == "cancelled":
            continue
        if retry_errored and status == "errored":
            if ec != "judge_error":
                continue
            r = (*r[:3], "unscored", None, None, *r[6:12], "awaiting_judge", *r[13:])
        out.append(tuple(r))
    return out


@dataclass(slots=True)
class LogEntry:
    t: float
    """Seconds since the run started."""
    kind: str
    """'retry', 'error', 'concurrency', 'state'."""
    model_key: str | None
    text: str
    """Untrusted parts included: show it literally."""


class _Ring:
    """Per-second buckets of several counters over the last RING seconds, addressed by absolute second."""

    __slots__ = ("stamp", "values")
    COUNTERS = ("done", "tokens", "retries", "limited", "lat_sum")
    DONE, TOKENS, RETRIES, LIMITED, LAT_SUM = range(5)

    def __init__(self) -> None:
        self.stamp = array("q", [-1] * RING)
        self.values = [array("d", [0.0] * RING) for _ in self.COUNTERS]

    def slot(self, sec: int) -> int:
        """The bucket index for `sec`, cleared if it last held an older second."""
        i = sec % RING
        if self.stamp[i] != sec:
            self.stamp[i] = sec
            for v in self.values:
                v[i] = 0.0
        return i

    def series(self, counter: int, now_sec: int, n: int) -> list[float]:
        vals = self.values[counter]
        out = []
        for sec in range(now_sec - n + 1, now_sec + 1):
            i = sec % RING
            out.append(vals[i] if sec >= 0 and self.stamp[i] == sec else 0.0)
        return out

    def total(self, counter: int, now_sec: int, n: int) -> float:
        return sum(self.series(counter, now_sec, n))


MESSAGES_KEPT = 32
"""Distinct error messages counted per model: enough to find the commonest, bounded whatever a provider says."""


def _count_message(counts: dict[str, int], message: str | None) -> None:
    text = message or "(no message)"
    if text in counts or len(counts) < MESSAGES_KEPT:
        counts[text] = counts.get(text, 0) + 1


@dataclass(slots=True)
class _ModelAgg:
    key: str
    planned: int = 0
    done: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    unscored: int = 0
    """Answered calls not scored (yet): done, but in no pass rate or score."""
    in_flight: int = 0
    backing_off: int = 0
    attempts: int = 0
    """Attempts started."""
    preloaded: int = 0
    """Results that were stored before this session: counted in totals, never in a rate."""
    preloaded_output_tokens: int = 0
    session_attempts: int = 0
    """Attempts that ended in this session (finished calls plus retries): the run-total 429 share's base."""
    retries: int = 0
    rate_limited: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    estimated: int = 0
    """Calls whose tokens (and so cost) arenatui estimated: the server reported no usage."""
    truncated: int = 0
    """Answers stopped at the token limit (finish reason in TRUNCATED_FINISH): max_tokens is cutting them."""
    cut_failed: int = 0
    """Answers that stopped at max_tokens and failed (with `longest_passing`, which way the limit should move)."""
    longest_passing: int = 0
    """Output tokens of the longest passing answer."""
    cut_while_busy: int = 0
    """Attempts that ended incomplete_stream while another of this lane's calls was in flight (single_slot_advice)."""
    reasoning_tokens: int = 0
    """Of output_tokens: those a reasoning model spent thinking (reported, or estimated from its reasoning)."""
    declared: DeclaredLimits | None = None
    """The rate limits the provider declared last (LimitsDeclared), when it declares any."""
    score_sum: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    error_messages: dict[str, int] = field(default_factory=dict)
    """Errored calls by message (the first MESSAGES_KEPT distinct ones): the commonest says why calls fail."""
    failures: dict[str, int] = field(default_factory=dict)
    """Failed (answered, not passed) calls by failure mode: wrong_answer, refusal, invalid_format, ..."""
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    ttfts: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    answer_ttfts: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_SAMPLES))
    """A reasoning model's first answer tokens (ttfts hold its first tokens of any kind: the reasoning's)."""
    ring: _Ring = field(default_factory=_Ring)
    judge: bool = False
    """A judge lane: its passed/failed/errored are its verdicts, which its candidates' rows count too."""


@dataclass(frozen=True, slots=True)
class ModelSnapshot:
    key: str
    planned: int
    done: int
    passed: int
    failed: int
    errored: int
    in_flight: int
    backing_off: int
    cap: int | None
    calls_per_s: float
    tokens_per_s: float
    retries: int
    retry_rate: float
    """Retries per attempt over the rolling window."""
    rate_limited: int
    rate_limited_rate: float
    """429s per attempt over the rolling window."""
    errors: Mapping[str, int]
    p50_ms: float | None
    p95_ms: float | None
    ttft_p50_ms: float | None
    score: float | None
    """Mean score of the calls finished and scored so far (errors count as 0; unscored calls not at all)."""
    cost: float
    latency_series: tuple[float, ...]
    """Mean latency (ms) per second over the last seconds, oldest first; 0 where nothing finished."""
    throughput_series: tuple[float, ...] = ()
    """Calls finished per second over the same seconds as latency_series, oldest first."""
    failures: Mapping[str, int] = field(default_factory=dict)
    """Failed (answered, not passed) calls by failure mode."""
    unscored: int = 0
    """Answered calls an llm_judge scorer has not scored: awaiting their judge, or outside its sample."""
    judge: bool = False
    """A judge lane (key ``judge:<model key>``): its calls are judge calls, one per judged candidate call."""
    common_error: tuple[str, int] | None = None
    """The most common error message of this session's errored calls and how many calls said it."""
    truncated: int = 0
    """This session's answers stopped at the token limit (finish reason length / max_tokens)."""
    cut_failed: int = 0
    """Of them, those that failed; with `longest_passing`, which way max_tokens should move (budgets.cut_direction)."""
    longest_passing: int = 0
    single_slot: str | None = None
    """What to change when its server stops a stream whenever another request arrives (kernel.advice)."""
    reasoning_tokens: int = 0
    """Of its output tokens, those spent reasoning (a reasoning model's)."""
    output_tokens: int = 0
    answer_ttft_p50_ms: float | None = None
    """A reasoning model's median first answer token (ttft_p50_ms is its first token of any kind)."""
    declared: DeclaredLimits | None = None
    """The rate limits its provider declared last in its response headers, when it declared any."""


    def reasoning(self, price_out_per_mtok: float = 0.0) -> tuple[float, float] | None:
        """A reasoning model's reasoning tokens per finished call and their share of its spend (of its output tokens
        when it has no price); None when it showed no reasoning."""
        if not self.reasoning_tokens or not self.done:
            return None
        spent = self.reasoning_tokens * price_out_per_mtok / 1e6
        share = spent / self.cost if self.cost > 0 and spent else self.reasoning_tokens / max(1, self.output_tokens)
        return self.reasoning_tokens / self.done, min(1.0, share)


@dataclass(frozen=True, slots=True)
class LiveSnapshot:
    elapsed_s: float
    state: str
    """'running', 'paused', 'finished', 'cancelled', 'failed'."""
    planned: int
    done: int
    passed: int
    failed: int
    errored: int
    in_flight: int
    backing_off: int
    retries: int
    rate_limited: int
    target: int
    calls_per_s: float
    retry_rate: float
    eta_s: float | None
    cost: float
    models: tuple[ModelSnapshot, ...]
    throughput_series: tuple[float, ...]
    """Calls finished per second, whole run, oldest first (bucketed when the run is long)."""
    retry_series: tuple[float, ...]
    """Retries per second, aligned with throughput_series."""
    series_step_s: float
    """Seconds per point of the two series above."""
    markers: tuple[tuple[float, int, int, str | None, str], ...]
    """Concurrency changes: (seconds since start, old, new, model key or None, source)."""
    client_cpu: float | None = None
    """This process's CPU load over the last second, as a fraction of one core; None before the first sample."""
    client_overloaded: bool = False
    """The client has been above OVERLOAD_CPU of a core for OVERLOAD_S seconds or more, and still is: its own
    work is now inside the latencies and caps the throughput shown."""
    client_overload_s: float = 0.0
    """Seconds of the run spent in such sustained overload so far."""
    rates_window_s: float | None = None
    """Seconds the rolling rates (calls/s, tok/s, 429 %, retry share) are over; None once the run has
    ended, when they are the session's totals instead of a window that would decay to zero."""
    unscored: int = 0
    """Candidates' answered calls not scored (yet). passed/failed/errored count candidates' calls only (a judge
    lane's verdicts are its candidates' results, not more of them); planned, done, the rates and cost count the
    judge calls too: they are work and spend of the sweep."""
    judge_planned: int = 0
    judge_done: int = 0
    judge_cost: float = 0.0
    """Spend of the judge lanes, included in `cost`."""
    estimated_calls: int = 0
    """Calls whose tokens and cost are arenatui's estimate (the server reported no usage): `cost` is partly
    estimated when this is above 0."""


class LiveMetrics:
    """Fold events into live aggregates. Construct with the plan's models, cases and trials, and its judge lanes
    (`judge_lanes(plan)`), which become rows after the models: rows are addressed by index in `row_keys`."""

    def __init__(self, model_keys: Sequence[str], case_ids: Sequence[str], trials: int, *,
                 judges: Sequence[JudgeLane] = (), window_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic, log_size: int = 2000,
                 cells: Sequence[int] | None = None) -> None:
        self.model_keys = tuple(model_keys)
        """The candidates (the models asked the cases)."""
        self.judge_keys = tuple(k for k, _cases, _n in judges)
        """The judge lanes, ``judge:<model key>``."""
        self.row_keys = self.model_keys + self.judge_keys
        self._judge_set = frozenset(self.judge_keys)
        self.case_ids = tuple(case_ids)
        self.trials = trials
        self.window_s = window_s
        self._clock = clock
        self.t0 = clock()
        self.end_t: float | None = None
        self._m_index = {k: i for i, k in enumerate(self.row_keys)}
        self._c_index = {c: i for i, c in enumerate(self.case_ids)}
        self._n_cases = len(self.case_ids)
        queued, planned_rows = _planned_cells(len(self.model_keys), self.case_ids, trials, judges, cells)
        n_cells = len(queued)
        # 16-bit counts (the matrix is the console's largest structure) unless a judge lane's cell needs more
        code = "H" if max(queued, default=0) <= 0xFFFF else "I"
        self.cells: list[array[int]] = [array(code, [0]) * n_cells for _ in range(_N_STATES + 1)]
        self.cells[QUEUED] = array(code, queued)
        self.dirty: set[int] = set()
        self._dirty_on = False
        """Changed cells are tracked only once a view asks for them (take_dirty): a headless run, which never
        does, would otherwise grow a set as large as the matrix."""
        self.rows = [_ModelAgg(k, planned=n, judge=i >= len(self.model_keys))
                     for i, (k, n) in enumerate(zip(self.row_keys, planned_rows, strict=True))]
        """Every row's aggregates, in `row_keys` order: the candidates', then the judge lanes'."""
        self.models = self.rows[: len(self.model_keys)]
        """The candidates' aggregates (the models the tuner and the caps know)."""
        self.state = "running"
        self.target = 0
        self.caps: dict[str, int | None] = {}
        self.rate_limits: dict[str, float] = {}
        """Per row key, the most calls/s its client-side limits (rpm, tpm) allow: no model's ETA assumes more,
        however fast its first calls went (a burst before the limiter bites showed 0:36 for a 6-minute run)."""
        self.planned = sum(planned_rows)
        self._backoff: set[tuple[str, str, int]] = set()
        """Calls sleeping before a retry: few at a time, so kept by key (calls in flight are not)."""
        self._handlers = self._event_handlers()
        self.client_cpu: float | None = None
        self.client_load = OverloadTracker()
        self.log: deque[LogEntry] = deque(maxlen=log_size)
        self.log_seq = 0
        """Count of entries ever logged: lets a view tell what is new since it last looked."""
        self._done_sec: list[int] = []
        self._retry_sec: list[int] = []
        self.markers: list[tuple[float, int, int, str | None, str]] = []
        self.preloaded = 0
        self.prior_elapsed = 0.0
        """Seconds the run had already taken in earlier sessions (a resumed run): added to elapsed."""

    # ---- folding -------------------------------------------------------------------------------

    def _event_handlers(self) -> dict[type, Callable[[Any], None]]:
        """What folds each event type (on_event looks it up; events no metric reads fold to nothing)."""
        return {
            CallStarted: self._started, CallFinished: self._finished, CallRetrying: self._retrying,
            JudgeFinished: self._judged, StepFinished: self._step,
            ConcurrencyChanged: self._concurrency, RunPaused: self._paused, RunResumed: self._resumed,
            RunFinished: self._run_finished, ClientLoadSampled: self._client_load, TunerDecided: self._tuner,
            LimitsDeclared: self._limits_declared,
        }

    def _move(self, m: int, case_id: str, src: int, dst: int) -> None:
        c = self._c_index.get(case_id)
        if c is None:
            return
        idx = m * self._n_cases + c
        cells = self.cells
        if cells[src][idx]:
            cells[src][idx] -= 1
        cells[dst][idx] += 1
        if self._dirty_on:
            self.dirty.add(idx)

    def _no_text(self, m: int, case_id: str) -> None:
        """One more failed trial of the cell whose answer had no text (its `_move` to FAILED marks the cell dirty)."""
        self.cells[NO_TEXT][m * self._n_cases + self._c_index[case_id]] += 1

    def _sec(self, t: float) -> int:
        return int(t - self.t0)

    def _bump(self, series: list[int], sec: int) -> None:
        if sec < 0:
            sec = 0
        if sec >= len(series):
            series.extend([0] * (sec + 1 - len(series)))
        series[sec] += 1

    def _log(self, t: float, kind: str, model_key: str | None, text: str) -> None:
        self.log.append(LogEntry(t - self.t0, kind, model_key, text))
        self.log_seq += 1

    def on_event(self, ev: Event) -> None:
        """Fold one event in: O(1), a few attribute updates."""
        handler = self._handlers.get(type(ev))
        if handler is not None:
            handler(ev)

    def _limits_declared(self, ev: LimitsDeclared) -> None:
        """A provider's stated rate limits: kept on every lane of that model (its variants share the provider)."""
        for key, mi in self._m_index.items():
            if key == ev.model_key or key.startswith(ev.model_key + VARIANT_SEP):
                self.rows[mi].declared = ev.limits

    def _started(self, ev: CallStarted) -> None:
        mi = self._m_index[ev.model_key]
        agg = self.rows[mi]
        src = QUEUED
        if self._backoff:
            key = (ev.model_key, ev.case_id, ev.trial)
            if key in self._backoff:
                self._backoff.discard(key)
                agg.backing_off -= 1
                src = BACKOFF
        self._move(mi, ev.case_id, src, IN_FLIGHT)
        agg.in_flight += 1
        agg.attempts += 1

    def _call(self, key: str, case_id: str, trial: int) -> str:
        """A call in words for the log; a judge call names the answer it judges (its lane's trial is
        plan.judge_trial(candidate model index, candidate trial, trials), read back here)."""
        if key in self._judge_set:
            mi, t = divmod(trial, self.trials)
            if mi < len(self.model_keys):
                return f"{key} on {self.model_keys[mi]} {case_id}#{t}"
        return f"{key} {case_id}#{trial}"

    def is_judge(self, row: int) -> bool:
        """Whether a row (an index in `row_keys`) is a judge lane."""
        return row >= len(self.model_keys)

    def _finished(self, ev: CallFinished | JudgeFinished) -> None:
        # The hottest function outside the engine: one tuple unpack, then locals.
        (mk, cid, trial, status, _output, score, _passed, ec, emsg, attempts, lat, _total, ttft, itok, otok, cost,
         finish, est, _started_at, _finished_at, _connect, mode, _detail, _http, _repairs, _esc, _first, rtok,
         answer_ttft, _reasoning) = ev.result
        mi = self._m_index[mk]
        agg = self.rows[mi]
        if self._backoff and (mk, cid, trial) in self._backoff:
            self._backoff.discard((mk, cid, trial))
            agg.backing_off -= 1
            src = BACKOFF
        elif attempts > 0:
            agg.in_flight -= 1
            src = IN_FLIGHT
        else:
            src = QUEUED  # cancelled before its first attempt started
        agg.input_tokens += itok
        agg.output_tokens += otok
        agg.cost += cost
        if rtok:
            agg.reasoning_tokens += rtok
        agg.estimated += est  # a bool: 1 for a call whose tokens were estimated
        if finish in TRUNCATED_FINISH:
            agg.truncated += 1
        if ec == "cancelled":
            self._move(mi, cid, src, QUEUED)  # resume runs it again
            return
        agg.done += 1
        agg.session_attempts += 1
        if status == "passed":
            agg.passed += 1
            dst = PASSED
            if otok > agg.longest_passing:
                agg.longest_passing = otok
        elif status == "failed":
            agg.failed += 1
            dst = FAILED
            if finish in TRUNCATED_FINISH:
                agg.cut_failed += 1
            if mode is not None and not agg.judge:  # a judge's failed verdict is its candidate's failure, not its own
                agg.failures[mode] = agg.failures.get(mode, 0) + 1
                if mode in NO_TEXT_MODES:
                    self._no_text(mi, cid)
        elif status == "unscored":  # answered: done, but in no pass rate until (unless) its judge scores it
            agg.unscored += 1
            dst = UNSCORED
        else:
            agg.errored += 1
            dst = UNREACHABLE if status == "unreachable" else ERRORED
            cls = ec or "error"
            agg.errors[cls] = agg.errors.get(cls, 0) + 1
            if cls == "incomplete_stream" and agg.in_flight > 0:  # (this call is out of in_flight already)
                agg.cut_while_busy += 1
            _count_message(agg.error_messages, emsg)
            self._log(ev.t, "error", mk, f"{self._call(mk, cid, trial)}: {cls} after {plural(attempts, 'attempt')}: "
                                         f"{emsg or ''}")
        self._move(mi, cid, src, dst)
        if score is not None:
            agg.score_sum += score
        self._timed(agg, int(ev.t - self.t0), otok, lat if dst != ERRORED else None, ttft, answer_ttft)

    def _timed(self, agg: _ModelAgg, sec: int, otok: int, lat: float | None, ttft: float | None,
               answer_ttft: float | None) -> None:
        """A finished call in the second it ended: the row's rate ring, latency samples and the run's series."""
        ring = agg.ring
        i = sec % RING
        if ring.stamp[i] != sec:
            ring.slot(sec)
        done_v, tokens_v, _retries_v, _limited_v, lat_v = ring.values
        done_v[i] += 1
        tokens_v[i] += otok
        if lat is not None:
            agg.latencies.append(lat)
            lat_v[i] += lat
        if ttft is not None:
            agg.ttfts.append(ttft)
            if answer_ttft is not None and answer_ttft != ttft:  # a reasoning model: its answer starts later
                agg.answer_ttfts.append(answer_ttft)
        series = self._done_sec
        if 0 <= sec < len(series):
            series[sec] += 1
        else:
            self._bump(series, sec)

    def _judged(self, ev: JudgeFinished) -> None:
        """A judge call ended: its lane's row folds it like a finished call, and (unless it was cancelled) its
        verdict scores the candidate's call, which moves from unscored to passed, failed or errored."""
        self._finished(ev)
        r = ev.result
        if r.error_class == "cancelled":
            return  # the candidate stays awaiting its judge: resume judges it
        mi = self._m_index.get(ev.model_key)
        c = self._c_index.get(ev.case_id)
        if mi is None or c is None:
            return
        idx = mi * self._n_cases + c
        if not self.cells[UNSCORED][idx]:
            return  # nothing here awaits a verdict (already scored): never count a call twice
        agg = self.rows[mi]
        agg.unscored -= 1
        if r.status == "passed":
            agg.passed += 1
            dst = PASSED
        elif r.status == "failed":
            agg.failed += 1
            dst = FAILED
            if r.failure_mode is not None:
                agg.failures[r.failure_mode] = agg.failures.get(r.failure_mode, 0) + 1
                if r.failure_mode in NO_TEXT_MODES:
                    self._no_text(mi, ev.case_id)
        else:
            agg.errored += 1
            dst = ERRORED
            cls = r.error_class or "judge_error"
            agg.errors[cls] = agg.errors.get(cls, 0) + 1
        if r.score is not None:
            agg.score_sum += r.score
        self._move(mi, ev.case_id, UNSCORED, dst)

    def _step(self, ev: StepFinished) -> None:
        """An answer that goes on to a repair turn or an escalation: the call waits for its next step."""
        r = ev.result  # (a call's last step comes in its CallFinished, which ends the call)
        mi = self._m_index[r.model_key]
        self.rows[mi].in_flight -= 1
        self._move(mi, r.case_id, IN_FLIGHT, QUEUED)
        self._log(ev.t, "retry", r.model_key, f"{self._call(r.model_key, r.case_id, r.trial)}: {r.failure_mode} "
                  f"({ev.kind} by {ev.model}), followed up")

    def _retrying(self, ev: CallRetrying) -> None:
        mi = self._m_index[ev.model_key]
        agg = self.rows[mi]
        self._backoff.add((ev.model_key, ev.case_id, ev.trial))
        if ev.reason == "incomplete_stream" and agg.in_flight > 1:
            agg.cut_while_busy += 1
        agg.in_flight -= 1
        agg.backing_off += 1
        agg.retries += 1
        agg.session_attempts += 1
        sec = self._sec(ev.t)
        ring = agg.ring
        i = ring.slot(sec)
        ring.values[_Ring.RETRIES][i] += 1
        if ev.reason == "rate_limited":
            agg.rate_limited += 1
            ring.values[_Ring.LIMITED][i] += 1
        self._move(mi, ev.case_id, IN_FLIGHT, BACKOFF)
        self._bump(self._retry_sec, sec)
        self._log(ev.t, "retry", ev.model_key,
                  f"{self._call(ev.model_key, ev.case_id, ev.trial)}: {ev.reason} on attempt {ev.attempt}, "
                  f"retrying in {ev.delay:.2f}s: {ev.message}")

    def _concurrency(self, ev: ConcurrencyChanged) -> None:
        if ev.model_key is None:
            self.target = ev.new
            change = f"concurrency {ev.old} → {ev.new}"
        else:
            self.caps[ev.model_key] = ev.new or None
            # a cap of 0 is the engine's "no cap": say so rather than show a limit of zero
            change = (f"{ev.model_key} cap {ev.old or 'no cap'} → {ev.new or 'no cap'}"
                      .replace("cap no cap", "no cap"))
        self.markers.append((ev.t - self.t0, ev.old, ev.new, ev.model_key, ev.source))
        if ev.requested is not None:  # out of bounds: say what was asked and why it is not what was set
            self._log(ev.t, "concurrency", ev.model_key,
                      f"{change} ({ev.source}): {ev.requested} asked, bounded to 1..{MAX_CONCURRENCY}")
        elif ev.source not in ("config", "tuner"):  # the tuner logs its decisions with their reasons
            self._log(ev.t, "concurrency", ev.model_key, f"{change} ({ev.source})")

    def _tuner(self, ev: TunerDecided) -> None:
        self._log(ev.t, "tuner", ev.model_key, ev.reason)

    def _client_load(self, ev: ClientLoadSampled) -> None:
        self.client_cpu = ev.cpu
        if self.client_load.add(ev.cpu, ev.interval_s):
            self._log(ev.t, "state", None,
                      f"client CPU above {OVERLOAD_CPU:.0%} of a core for {OVERLOAD_S:g}s: arenatui itself is now "
                      "a bottleneck, and its queueing is inside the latencies shown (lower concurrency)")

    def _paused(self, ev: RunPaused) -> None:
        self.state = "paused"
        self._log(ev.t, "state", None, "paused: no new calls start; calls in flight finish")

    def _resumed(self, ev: RunResumed) -> None:
        self.state = "running"
        self._log(ev.t, "state", None, "resumed")

    def _run_finished(self, ev: RunFinished) -> None:
        self.state = ev.status
        self.end_t = ev.t
        self._log(ev.t, "state", None, f"run {ev.status}" + (f": {ev.message}" if ev.message else ""))

    def preload(self, stored: Iterable[Sequence[Any]], *, elapsed_s: float = 0.0) -> None:
        """Fold in the results a resumed or reopened run already has, so its figures are the run's, not zeros.

        Rows are `StoredResult`s, or any sequence in that order (the first five fields are enough): the
        matrix, totals, retries, errors, spend and latency percentiles come back; rates stay this session's.
        A judge lane's stored calls come in the same way, keyed by the lane (store.queries.judged_rows), and an
        answer left 'unscored' comes back unscored. `elapsed_s` is the time the earlier sessions took.
        """
        self.prior_elapsed += max(0.0, elapsed_s)
        for raw in stored:
            r = StoredResult(*raw)
            mi = self._m_index.get(r.model_key)
            if mi is None or r.case_id not in self._c_index or r.error_class == "cancelled":
                continue
            agg = self.rows[mi]
            agg.done += 1
            agg.preloaded += 1
            dst = {"passed": PASSED, "failed": FAILED, "unscored": UNSCORED, "unreachable": UNREACHABLE}.get(r.status,
                                                                                                        ERRORED)
            if dst == PASSED:
                agg.passed += 1
            elif dst == FAILED:
                agg.failed += 1
                if r.failure_mode:
                    agg.failures[r.failure_mode] = agg.failures.get(r.failure_mode, 0) + 1
                    if r.failure_mode in NO_TEXT_MODES:
                        self._no_text(mi, r.case_id)
            elif dst == UNSCORED:
                agg.unscored += 1
            else:
                agg.errored += 1
                cls = r.error_class or "error"
                agg.errors[cls] = agg.errors.get(cls, 0) + 1
            if r.score is not None:
                agg.score_sum += r.score
            extra = max(0, (r.attempts or 1) - 1)
            agg.retries += extra
            agg.cost += r.cost or 0.0
            agg.estimated += 1 if r.tokens_estimated else 0
            agg.input_tokens += r.input_tokens or 0
            agg.output_tokens += r.output_tokens or 0
            agg.preloaded_output_tokens += r.output_tokens or 0
            if r.latency_ms is not None and dst != ERRORED:
                agg.latencies.append(r.latency_ms)
            if r.ttft_ms is not None:
                agg.ttfts.append(r.ttft_ms)
            self._move(mi, r.case_id, QUEUED, dst)
            self.preloaded += 1

    # ---- reading -------------------------------------------------------------------------------

    def cell(self, model_index: int, case_index: int) -> tuple[int, ...]:
        """Calls of one (row, case) in each state: (queued, in flight, backing off, passed, failed, errored,
        unscored); a candidate's are its trials, a judge lane's its judge calls (candidates × trials)."""
        idx = model_index * self._n_cases + case_index
        return tuple(self.cells[s][idx] for s in range(_N_STATES + 1))

    def cell_range(self, model_index: int, case_start: int, case_stop: int) -> tuple[int, ...]:
        """Calls of one row over cases [case_start, case_stop) in each state, summed: a condensed matrix column."""
        base = model_index * self._n_cases
        a, b = base + case_start, base + min(case_stop, self._n_cases)
        return tuple(sum(self.cells[s][a:b]) for s in range(_N_STATES + 1))

    def take_dirty(self) -> set[int]:
        """Cell indexes (model_index * n_cases + case_index) changed since the last call."""
        if not self._dirty_on:
            # the first call: nothing was tracked before it, so every cell counts as changed
            self._dirty_on = True
            return set(range(len(self.cells[QUEUED])))
        d, self.dirty = self.dirty, set()
        return d

    def elapsed(self) -> float:
        """Seconds of this session (the time base of the rate series); the run's is `snapshot().elapsed_s`."""
        end = self.end_t if self.end_t is not None else self._clock()
        return max(0.0, end - self.t0)

    def snapshot(self) -> LiveSnapshot:
        ended = self.end_t is not None
        now = self._clock() if self.end_t is None else self.end_t
        elapsed = max(0.0, now - self.t0)
        # this session's seconds: the base of every rate (preloaded results are never in a rate)
        now_sec = int(elapsed)
        w = max(1, min(int(self.window_s), now_sec + 1))
        models = []
        tot_cps = 0.0
        tot_attempts_w = tot_retries_w = 0.0
        eta: float | None = 0.0
        for agg in self.rows:
            row, attempts_w, retries_w = self._row_snapshot(agg, ended, elapsed, now_sec, w)
            models.append(row)
            tot_cps += row.calls_per_s
            tot_attempts_w += attempts_w
            tot_retries_w += retries_w
            session_done = agg.done - agg.preloaded
            eta = _slowest(eta, agg.planned - agg.done, row.calls_per_s,
                           session_done / elapsed if elapsed > 0 else 0.0, self.rate_limits.get(agg.key))
        done = sum(m.done for m in models)
        # a judge lane's verdicts are its candidates' results: count them once, on the candidates
        cands = [m for m in models if not m.judge]
        judges = [m for m in models if m.judge]
        remaining = self.planned - done
        if remaining <= 0:
            eta = 0.0
        elif eta is None:
            # a model with nothing finished yet has no rate of its own: fall back to the run's
            overall_cps = (done - self.preloaded) / elapsed if elapsed > 0 else 0.0
            rate = tot_cps if tot_cps > 0 else overall_cps
            eta = remaining / rate if rate > 0 else None
        thr, step = _bucket(self._done_sec, now_sec + 1)
        ret, _ = _bucket(self._retry_sec, now_sec + 1)
        return LiveSnapshot(
            elapsed_s=elapsed + self.prior_elapsed, state=self.state, planned=self.planned, done=done,
            passed=sum(m.passed for m in cands), failed=sum(m.failed for m in cands),
            errored=sum(m.errored for m in cands), in_flight=sum(m.in_flight for m in models),
            backing_off=sum(m.backing_off for m in models), retries=sum(m.retries for m in models),
            rate_limited=sum(m.rate_limited for m in models), target=self.target, calls_per_s=tot_cps,
            retry_rate=(tot_retries_w / tot_attempts_w) if tot_attempts_w else 0.0, eta_s=eta,
            cost=sum(m.cost for m in models), models=tuple(models), throughput_series=thr, retry_series=ret,
            series_step_s=step, markers=tuple(self.markers), client_cpu=self.client_cpu,
            client_overloaded=self.client_load.overloaded, client_overload_s=self.client_load.overload_s,
            rates_window_s=None if ended else float(w), unscored=sum(m.unscored for m in cands),
            judge_planned=sum(m.planned for m in judges), judge_done=sum(m.done for m in judges),
            judge_cost=sum(m.cost for m in judges), estimated_calls=sum(r.estimated for r in self.rows),
        )

    def _row_snapshot(self, agg: _ModelAgg, ended: bool, elapsed: float, now_sec: int,
                      w: int) -> tuple[ModelSnapshot, float, float]:
        """One row as of now, with the attempts and retries that ended in its rate window (the run's retry rate
        sums them)."""
        ring = agg.ring
        session_done = agg.done - agg.preloaded
        if ended:
            # The run is over: a rolling window would decay to zero; show what the session did instead.
            span = max(elapsed, 1e-9)
            done_w = float(session_done)
            attempts_w = float(agg.session_attempts)
            retries_w = float(max(0, agg.session_attempts - session_done))
            limited_w = float(agg.rate_limited)
            tokens = float(agg.output_tokens - agg.preloaded_output_tokens)
        else:
            span = min(w, elapsed) if elapsed > 0 else 1.0
            done_w = ring.total(_Ring.DONE, now_sec, w)
            retries_w = ring.total(_Ring.RETRIES, now_sec, w)
            # every attempt ends as a finished call or a retry, so these are the attempts that ended
            attempts_w = done_w + retries_w
            limited_w = ring.total(_Ring.LIMITED, now_sec, w)
            tokens = ring.total(_Ring.TOKENS, now_sec, w)
        cps = done_w / max(span, 1e-9)
        lat = sorted(agg.latencies)
        tt = sorted(agg.ttfts)
        n_series = 60
        counts = ring.series(_Ring.DONE, now_sec, n_series)
        sums = ring.series(_Ring.LAT_SUM, now_sec, n_series)
        series = tuple((s / c) if c else 0.0 for s, c in zip(sums, counts, strict=True))
        row = ModelSnapshot(
            key=agg.key, planned=agg.planned, done=agg.done, passed=agg.passed, failed=agg.failed,
            errored=agg.errored, in_flight=agg.in_flight, backing_off=agg.backing_off,
            cap=self.caps.get(agg.key), calls_per_s=cps,
            tokens_per_s=tokens / max(span, 1e-9),
            retries=agg.retries, retry_rate=(retries_w / attempts_w) if attempts_w else 0.0,
            rate_limited=agg.rate_limited, rate_limited_rate=(limited_w / attempts_w) if attempts_w else 0.0,
            errors=dict(agg.errors), p50_ms=percentile(lat, 50), p95_ms=percentile(lat, 95),
            ttft_p50_ms=percentile(tt, 50),
            score=(agg.score_sum / scored) if (scored := agg.done - agg.unscored) > 0 else None,
            cost=agg.cost, latency_series=series, throughput_series=tuple(counts), failures=dict(agg.failures),
            unscored=agg.unscored, judge=agg.judge,
            common_error=max(agg.error_messages.items(), key=lambda kv: kv[1], default=None),
            truncated=agg.truncated, cut_failed=agg.cut_failed, longest_passing=agg.longest_passing,
            reasoning_tokens=agg.reasoning_tokens, output_tokens=agg.output_tokens,
            answer_ttft_p50_ms=percentile(sorted(agg.answer_ttfts), 50) if agg.answer_ttfts else None,
            declared=agg.declared,
            single_slot=single_slot_advice(agg.key, agg.cut_while_busy, agg.session_attempts)
            if agg.cut_while_busy else None,
        )
        return row, attempts_w, retries_w


def _planned_cells(n_models: int, case_ids: Sequence[str], trials: int, judges: Sequence[JudgeLane],
                   cells: Sequence[int] | None) -> tuple[array[int], list[int]]:
    """The calls planned in each (row, case) cell, rows after one another, and each row's total."""
    n_cases = len(case_ids)
    # Per row, the calls planned in each case: a candidate's trials, a judge lane's candidates × trials on the
    # cases it judges and none elsewhere (an unjudged case of a judge row is empty, never queued).
    # `cells`: a shard's (`--shard K/N`, Plan.shard_cells): each cell holds only the trials that fall to it
    queued = array("I", cells) if cells is not None else array("I", [trials]) * (n_models * n_cases)
    planned_rows = [sum(queued[i * n_cases:(i + 1) * n_cases]) for i in range(n_models)]
    for _key, judged, per_case in judges:
        if cells is not None:  # a shard's judge calls follow its candidates' calls
            row = array("I", [sum(queued[i * n_cases + j] for i in range(n_models)) if c in judged
                              else 0 for j, c in enumerate(case_ids)])
        else:
            row = array("I", [per_case if c in judged else 0 for c in case_ids])
        queued.extend(row)
        planned_rows.append(sum(row))
    return queued, planned_rows


def _slowest(eta: float | None, remaining: int, window_cps: float, session_cps: float,
             limit: float | None = None) -> float | None:
    """The later of `eta` and one model's finish (its remaining calls at its own rate, never above `limit`, what
    its rpm/tpm allow): the slowest model decides when the run ends. None once any unfinished model has no rate
    yet."""
    if remaining <= 0 or eta is None:
        return eta
    rate = window_cps if window_cps > 0 else session_cps
    if rate <= 0:
        return None
    if limit is not None and limit > 0:
        rate = min(rate, limit)
    return max(eta, remaining / rate)


def _bucket(per_sec: list[int], length: int, max_points: int = 240) -> tuple[tuple[float, ...], float]:
    """Per-second counts as at most max_points rates (per second), oldest first."""
    vals = per_sec[:length] + [0] * max(0, length - len(per_sec))
    if len(vals) <= max_points:
        return tuple(float(v) for v in vals), 1.0
    step = -(-len(vals) // max_points)
    out = tuple(sum(vals[i : i + step]) / step for i in range(0, len(vals), step))
    return out, float(step)

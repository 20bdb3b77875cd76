"""The auto-tuner: per model, find the lowest level with (nearly) the highest goodput and few errors, and hold it.

`ModelController` is a pure object: windows (`levels.Window`) and single calls (an answer's latency, a 429) in,
decisions out. It never reads a clock or touches the engine, so tests drive it with synthetic observations.
`Tuner` wires controllers to a running sweep: it receives windows from a `LevelTracker` and the calls started at
each model's current level, and acts through the runner's control surface (`set_model_cap`, `set_concurrency`,
source "tuner"), the same one a user has.

How it moves:
- ramp (slow start, as TCP does): while nothing says a limit is near, double the level every time half a level's
  worth of calls started at it come back answered, with their latency no higher than the first ones'. No
  evidence windows: a window costs a latency of settling plus several of measuring, and on a run of seconds the
  climb is most of what separates a tuner from the best fixed level. The ramp ends at the first 429 (back to the
  last clean level, then a recovery ramp: one level per clean latency, never up to the level that erred; a level
  refused twice on the way up is the limit, one refused once and then clean is its edge, held one below) or when
  latency rises with the level (the server queues: it serves goodput × unqueued latency at once, the level to go
  to). From WIDE_LEVEL a doubling waits for two rounds of attempts (`batch_span`).
- never up to a level the model's calls left cannot fill ROUNDS_LEFT times (`affordable`): on a budget that ends
  during the climb, crossing a limit costs retries the calls left cannot earn back.
- climb: ×1.5 while goodput grows in proportion to the level (the provider is far from any limit), else one step at a
  time; stop when a step gains less than FLAT and settle on the lowest level within FLAT of the best.
- back off on errors: when 429s (or transients above the quietest level's) pass ERROR_SHARE, the provider is
  past its limit. A 429 is a rate or a ceiling, not a level, so the new level comes from Little's law:
  answered calls/s × mean latency is the level the provider actually sustained; halving and creeping back
  would cost a storm of retries on every creep. From there a recovery ramp, as after the first 429 (a storm's
  figure is rough: refusals that count against the limit make it read low). Levels that erred are not tried
  again for a while.
- settled: hold; every `probe_every` windows try one level up, keep it only if it gains more than FLAT.
  A limit that drops mid-run shows as 429s at a level measured clean: a few of them within one hold act at once
  (a window there is mostly from before the drop, so its Little's law figure would be the old limit's); the
  level halves to stop the storm, then climbs back one level per clean latency (a ramp adding one), never to the
  level that erred; a level refused twice on the way up is the new limit, and the one below it is settled on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, Literal

from arenatui.kernel.events import (
    VARIANT_SEP,
    CallFinished,
    CallRetrying,
    CallStarted,
    ConcurrencyChanged,
    DeclaredLimits,
    Event,
    LimitsDeclared,
    TunerDecided,
)
from arenatui.kernel.limits import MAX_CONCURRENCY
from arenatui.tuning.evidence import FLAT, MIN_ANSWERED, MIN_REFUSAL_ATTEMPTS, QUEUE_GROWTH
from arenatui.tuning.levels import (
    ERROR_SHARE,
    Evidence,
    LevelTracker,
    ModelReadout,
    Window,
    declared_level,
    provider_answered,
)

Phase = Literal["ramp", "climb", "settled", "probe", "descend"]
LEAK_SHARE = 0.01
"""429s per attempt sent at a held level (at least `onset_429s`) past which the tuner steps one down without waiting
for a window: under ERROR_SHARE, but each is a retry."""
LEAK_MIN_LEVEL = 4
"""The lowest level the tuner steps down to on 429s trickling in (below, one level is a quarter of goodput or more)."""
DROP_SHARE = 0.2
"""429s per attempt sent since the first of them, at a level measured without one, that say the limit dropped (a
drop refuses a large share at once; a level at the edge of a limit refuses now and then)."""
DECLARED_MARGIN = 1.15
"""How far past its declared limits a provider must serve, in a full window without a 429, for the headers to be taken
as wrong: enough that a token bucket's burst spread over a window does not pass for it."""
NOT_COUNTED = -2
"""The batch epoch of an attempt `ModelController.started` never counted (sent before the tuner's level held)."""
BASELINE_N = 10
"""Latencies behind the ramp's baseline (their median) before latency can say that the server queues."""
FIRST_SPREAD = 2.0
"""A small budget's first ramp batch, started together with nothing measured below it: calls that a server serves c
at a time come back in turns, a latency apart, so the first k of L answers average (k/c + 1)/2 of the fastest
(serial, 4 of 8: 2.5×); at this spread or more the server is taken to queue, if the next batch confirms it (every
one of its calls waited: its lower quartile above `queue_ratio` × that fastest latency)."""
FIRST_SPREAD_S = 0.01
"""...and by at least this many seconds, the spread and the wait alike: a quick server's latencies (a zero-latency
simulation, a local model answering in a millisecond) move by milliseconds with the client's own event loop."""
WIDE_LEVEL = 16
"""From this level the doubling ramp waits for two rounds of attempts before it doubles again (`batch_span`). Not
lower: two rounds at 8 make it a measured level on a hold of a latency or two, whose 20-odd answers are too few for
its goodput to be compared with the levels measured properly (on a rate limit of 10 it was named the optimum)."""
SMALL_BUDGET = 5 * MIN_ANSWERED
"""Calls left at or under which a queue is measured where it showed before the tuner goes down to the level the
server serves at once: the budget pays for two levels measured, not for a hold and probes."""
ROUNDS_LEFT = 4
"""The tuner never moves up to a level the model's calls left cannot fill this many times: a level held for fewer
rounds saves less wall clock than the climb to it costs, and a limit crossed on the way costs retries that the few
calls left cannot earn back (a tiny budget ends before any level is measured)."""


@dataclass(frozen=True, slots=True)
class TunerSettings:
    max_level: int = 64
    """Highest level the tuner gives one model (a user's cap, when lower, wins)."""
    error_share: float = ERROR_SHARE
    flat: float = FLAT
    probe_every: int = 20
    """Settled windows between upward probes."""
    avoid_windows: int = 24
    """Windows for which a level that erred is not tried again."""
    linear: float = 0.8
    """Climb by `fast_step` while a step gains at least this share of what it added (goodput still grows
    in proportion to the level: the provider is nowhere near a limit), else one level at a time."""
    fast_step: float = 1.5
    """×1.5 rather than ×2: the step that finally crosses a limit sets off a smaller storm of 429s."""
    ramp: bool = True
    """Start with the ramp (slow start) when switched on by `Tuner.enable`."""
    ramp_step: float = 2.0
    queue_ratio: float = 1.5
    """A ramp batch whose mean latency is this many times the lowest batch mean so far: the server queues."""
    onset_429s: int = 3
    """At least this many 429s sent at a held level before it moves: level/2 of them in a burst for a storm (a drop,
    when the level was clean), level/4 spread over the hold for one step down."""


@dataclass(frozen=True, slots=True)
class Decision:
    model_key: str
    old: int
    new: int
    reason: str


@dataclass(slots=True)
class Ramp:
    """Slow start (the first climb, doubling) or a recovery ramp (one level a batch, below `top`): state meaningful
    only while ramping, started afresh by every ramp."""

    name: ClassVar[Phase] = "ramp"
    top: int | None = None
    """On a recovery ramp (after a 429 on the first ramp, a back-off on 429s, a limit that dropped): the level that
    erred, never reached again by the ramp."""
    prev: int | None = None
    """The ramp's previous level: clean, so a 429 at this one puts the limit between the two."""
    rising: bool = True
    """The ramp reached this level from below (a 429 here counts against the level, not a storm's aftermath)."""
    strikes: dict[int, int] = field(default_factory=dict)
    """Recovery ramp: 429s met at each level (two at one level: that is the limit)."""
    queued: bool = False
    """The last ramp batch was slow (latency up with the level): a second one in a row means a queue."""
    prev_low: float | None = None
    """The previous level's last batch's lower quartile latency (latency grown in proportion to the level is a
    queue, read without waiting for BASELINE_N latencies: a small budget cannot wait)."""
    prev_mean: float | None = None
    """The previous level's last batch's mean latency: a queue slows every call, so the mean grows with the lower
    quartile (on a few calls whose lengths differ, the lower quartile alone moves by chance)."""
    first_fast: float | None = None
    """A small budget's first batch spread like a queue's (`FIRST_SPREAD`): its fastest latency, the unqueued
    latency the next batch is held against."""
    answers: int = 0
    """Answered calls started at the current level (the batch)."""
    answered_since: int = 0
    """Answered calls since the last change, whenever they started (goodput: these over the time since)."""
    lat_sum: float = 0.0
    batch: list[float] = field(default_factory=list)
    """Latencies of the current ramp batch."""
    seen: list[int] = field(default_factory=list)
    """Levels this ramp stood at, in order."""
    refused_at: set[int] = field(default_factory=set)
    """Levels (on this ramp) an attempt started at and was refused: never 'the last clean level', even when the
    refusal came back after the ramp had left the level (a gateway can take longer to refuse than to answer)."""

    def new_batch(self) -> None:
        self.batch = []
        self.answers = 0
        self.answered_since = 0
        self.lat_sum = 0.0


@dataclass(slots=True)
class Climb:
    """Measured windows, one step (or ×1.5) up while goodput grows."""

    name: ClassVar[Phase] = "climb"


@dataclass(slots=True)
class Settled:
    """Holding the level settled on."""

    name: ClassVar[Phase] = "settled"
    windows: int = 0
    """Settled windows since the hold began (a probe up every `probe_every`)."""


@dataclass(slots=True)
class Probe:
    """One level up from a hold, kept only if it pays."""

    name: ClassVar[Phase] = "probe"
    from_level: int
    """The level held before the probe (the one to recommend, and to go back to)."""


@dataclass(slots=True)
class Descend:
    """Measuring a level below the best seen before settling."""

    name: ClassVar[Phase] = "descend"
    then: int | None = None
    """Once this level is measured, go there (a queue measured at the level where it showed, then the level the
    server serves at once) rather than settle."""


Stage = Ramp | Climb | Settled | Probe | Descend


@dataclass(slots=True)
class ModelController:
    """Decides one model's level from its windows. `level` is where it stands now."""

    model_key: str
    level: int
    ceiling: int = 64
    settings: TunerSettings = field(default_factory=TunerSettings)
    stage: Stage = field(default_factory=Climb)
    """The phase and the state that means something only in it: a phase never reads another's leftovers."""
    goodput: dict[int, float] = field(default_factory=dict)
    """Latest goodput seen at each level (averaged with the previous sighting)."""
    verified: set[int] = field(default_factory=set)
    """Levels measured with a full window (not only a climb's rough look)."""
    avoid: dict[int, int] = field(default_factory=dict)
    """Level → windows left during which it (and anything above) is not tried."""
    base_transient: float | None = None
    prev_level: int | None = None
    """The level the climb came from (its goodput is the step's baseline)."""
    last_clean: int | None = None
    """The level of the last window without errors: where a step up came from."""
    windows_here: int = 0
    """Windows seen at the current level since the controller moved to it."""
    linear_to: int | None = None
    """The first ramp's last clean level: latency stayed flat while the level doubled up to it, so goodput grew in
    proportion and no level below it does as well (no need to try lower when goodput is flat above it)."""
    clean_full: set[int] = field(default_factory=set)
    """Levels whose last full window was clean: a storm of 429s there (a few in a row) means the limit dropped."""
    spotless: set[int] = field(default_factory=set)
    """Levels with a full window without a single 429: past the bound there later, the limit dropped."""
    base_pool: list[float] = field(default_factory=list)
    """The ramp's first latencies (lowest levels first): the baseline's sample."""
    ramp_lat_min: float | None = None
    """Lowest single latency seen on the ramp: the nearest to a call's unqueued service time."""
    onset: int = 0
    """429s at the current level since it was last measured clean (or moved to)."""
    answered_full: dict[int, int] = field(default_factory=dict)
    """Answered calls in full windows at each level: a level is measured (for the verdict) from MIN_ANSWERED."""
    proven: set[int] = field(default_factory=set)
    """Levels refused in a full window of at least MIN_REFUSAL_ATTEMPTS attempts: a limit the verdict can name."""
    limit_dropped: bool = False
    """Set when 429s at a level measured clean said the provider's limit dropped: the Tuner clears the model's
    readout (its levels were measured against the old limit) and this flag."""
    careful: bool = False
    """After a back-off: climb one level at a time (Little's law under a 429 storm underestimates the limit,
    since refused requests eat into it), never doubling into the storm again."""
    epoch: int = 0
    """Bumped at every move: an attempt's batch belongs to the epoch it started in."""
    batch_started: int = 0
    """Attempts started at the current level since the move that count in its batch (the first `batch_size`)."""
    batch_out: int = 0
    """Of those, still in flight: the ramp steps up only once its whole batch came back clean."""
    limit_seen: bool = False
    """A 429, a queue or errors past the bound were met: a level reached is then checked from below."""
    sent_here: int = 0
    """Attempts started at the current level since the move."""
    sent_total: int = 0
    """Attempts started since the tuner took over (across moves)."""
    recent_429s: list[int] = field(default_factory=list)
    """`sent_total` at each of the last few 429s of attempts sent at the level held (settled, climbing, descending):
    a storm is a few of them among the last attempts sent, whatever level stepped down in between."""
    quiet_sent: int = 0
    """Attempts sent at held levels since the last storm, back-off or ramp: with few 429s among them, a storm means
    the limit dropped."""
    quiet_429s: int = 0
    leaks: int = 0
    """429s of attempts sent at the current level since the move (a clean window does not forget them)."""
    aftermath: int = 0
    """429s since the last window (or move) of attempts sent at a level above the current one: the storm already
    acted on, not held against this level when its window is judged."""
    left: int | None = None
    """Calls the model still has to make (None: not known): no move up to a level they cannot fill ROUNDS_LEFT
    times (`affordable`)."""
    declared: DeclaredLimits | None = None
    """The rate limits the provider declared last (headers): a prior for the level a rate limit allows, confirmed by
    evidence (`prior`)."""
    tokens_per_call: float | None = None
    """Mean tokens (input + output) of the answers so far: a declared tokens/min limit over it is calls/min."""
    prior_wrong: bool = False
    """Evidence passed the declared limit (a level well above it answered clean, goodput growing): it is ignored."""
    alone: bool = False
    """Every other tuned model has made all its calls: this one's remaining calls are the run's wall clock, so no
    look one level down (it would lengthen the run, and the verdict does without it)."""

    @property
    def phase(self) -> Phase:
        return self.stage.name

    @property
    def held_level(self) -> int:
        """Where it stands, a probe one level up not counted (the level to recommend)."""
        return self.stage.from_level if isinstance(self.stage, Probe) else self.level

    @property
    def climbing_fast(self) -> bool:
        """Still on the first climb, far from any limit seen (declared or met): rough windows will do."""
        if self.phase not in ("ramp", "climb") or self.careful:
            return False
        p = self.prior()
        return p is None or self.level <= p

    def prior(self, latency_s: float | None = None) -> int | None:
        """The level the provider's declared limits allow (`declared_level`: declared requests per second × the
        unqueued latency measured, the token bound likewise), None without a declared limit, a latency, or once
        evidence proved the headers wrong. A prior: the ramp stops doubling there and what lies above is measured
        with full windows."""
        if self.declared is None or self.prior_wrong:
            return None
        lat = sorted(self.base_pool)[len(self.base_pool) // 2] if self.base_pool else latency_s
        n = declared_level(self.declared, lat, self.tokens_per_call)
        return None if n is None else max(1, math.floor(n))

    def start_ramp(self, top: int | None = None) -> None:
        """Ramp from here: doubling (the first climb) or, below `top` (the level that erred), one level a batch."""
        self.stage = Ramp(top=top, seen=[self.level])

    def _start_recovery(self, erred: int) -> None:
        """A recovery ramp from here (reached from above): one level a batch, never back up to `erred`."""
        self.start_ramp(top=erred)
        assert isinstance(self.stage, Ramp)
        self.stage.rising = False

    @property
    def batch_size(self) -> int:
        """Fresh answers a ramp step waits for: half the level's worth when doubling (about one latency at the new
        level), the whole level when adding one."""
        additive = isinstance(self.stage, Ramp) and self.stage.top is not None
        return max(2, self.level if additive else math.ceil(self.level / 2))

    @property
    def batch_span(self) -> int:
        """Attempts started at a level that must all come back before the ramp leaves it: a level's worth, so the
        calls that replace the previous level's as they finish are in it (a token bucket's burst lets the first
        ones through; the refusals come in the second round, and a slow gateway sends them after the answers).
        Two level's worth when doubling from WIDE_LEVEL up: a doubling there adds more calls at once than a bucket's
        burst absorbs in one round, and the storm an overshoot sets off (a slow gateway's refusals arrive after the
        ramp moved on, at twice the level) costs more retries than the extra latency costs wall clock."""
        if not self._recovering and self.level >= WIDE_LEVEL:
            return 2 * self.level
        return max(2, self.level)

    @property
    def _recovering(self) -> bool:
        """On a recovery ramp (one level a batch below the level that erred)."""
        return isinstance(self.stage, Ramp) and self.stage.top is not None

    def started(self) -> int:
        """An attempt started at the current level. Returns the epoch of the batch it belongs to (-1: none), for
        `ended`."""
        self.sent_here += 1
        self.sent_total += 1
        if self.phase != "ramp":
            self.quiet_sent += 1
        if self.batch_started >= self.batch_span:
            return -1
        self.batch_started += 1
        self.batch_out += 1
        return self.epoch

    def ended(self, level: int, epoch: int, refused: bool) -> None:
        """An attempt started at `level` (in the batch of `epoch`, -1 for none; NOT_COUNTED when `started` never
        saw it) came back, `refused` by a 429."""
        if epoch == self.epoch and epoch >= 0:
            self.batch_out = max(0, self.batch_out - 1)
        if refused and isinstance(self.stage, Ramp):
            self.stage.refused_at.add(level)

    def affordable(self, up: int) -> int:
        """The highest level from the current one up to `up` that the calls left can fill ROUNDS_LEFT times."""
        if self.left is None or up <= self.level:
            return up
        return max(self.level, min(up, self.left // ROUNDS_LEFT))

    def _last_clean_below(self, level: int) -> int | None:
        """The highest level this ramp stood at below `level` with no attempt refused (the ramp left each only once
        a level's worth of attempts sent there came back answered)."""
        r = self.stage
        if not isinstance(r, Ramp):
            return None
        ok = [lv for lv in r.seen if lv < level and lv not in r.refused_at]
        return max(ok) if ok else None

    @property
    def baseline(self) -> float | None:
        """Unqueued latency: the median of the ramp's first latencies (the lowest levels), once there are
        BASELINE_N of them; None before (no decision rests on a couple of calls)."""
        if len(self.base_pool) < BASELINE_N:
            return None
        pool = sorted(self.base_pool)
        return pool[len(pool) // 2]

    def answered(self, latency_s: float, since_s: float, fresh: bool) -> Decision | None:
        """A call came back answered `since_s` after the last level change (`fresh`: it started at this level). On
        the ramp, the next step once a batch of fresh calls is in: half the level's worth when doubling (about one
        latency at the new level), the whole level when adding one."""
        r = self.stage
        if not isinstance(r, Ramp):
            return None
        r.answered_since += 1
        if not fresh:
            return None
        r.answers += 1
        r.lat_sum += latency_s
        r.batch.append(latency_s)
        if self.ramp_lat_min is None or latency_s < self.ramp_lat_min:
            self.ramp_lat_min = latency_s
        if r.answers < self.batch_size:
            return None
        batch = sorted(r.batch)
        base = self.baseline
        # a queue makes every call of the batch slow, noise only some: the batch's lower quartile against the
        # median of at least BASELINE_N latencies from the levels below (never a baseline of two calls)
        low = batch[(len(batch) - 1) // 4]
        queued = base is not None and low > self.settings.queue_ratio * base
        mean = r.lat_sum / r.answers
        small = self.left is not None and self.left <= SMALL_BUDGET
        if base is None and small and r.prev is None and r.top is None:
            # the first batch of a small budget's first climb, nothing below it: its spread (a serial server's 60
            # calls would go before a level below is measured; llama-cpp-python's server read 13 only, no verdict)
            if r.first_fast is None:
                queued = mean >= FIRST_SPREAD * batch[0] and mean - batch[0] >= FIRST_SPREAD_S
                if queued:
                    r.first_fast = batch[0]
            else:
                queued = low > self.settings.queue_ratio * r.first_fast and low - r.first_fast >= FIRST_SPREAD_S
                base = r.first_fast if queued else None  # (then measured here first: a small budget, `_server_queues`)
                r.first_fast = None
        if not queued and r.prev and r.prev_low and small:
            # a small budget cannot wait for BASELINE_N latencies: latency grown in proportion to the level (every
            # call of the batch: its lower quartile) is a queue at the server (Little's law: goodput stayed flat; a
            # batch's goodput is too noisy to ask it). Two such batches in a row, as for the baseline's test; on a
            # larger budget the baseline decides (a busy client's stall makes two small batches look like this too)
            k = self.level / r.prev - 1
            queued = k > 0 and low / r.prev_low - 1 >= QUEUE_GROWTH * k and \
                (r.prev_mean is None or mean / r.prev_mean - 1 >= QUEUE_GROWTH * k)
        if self.batch_out > 0 and not queued:
            # up only once the whole batch came back: a refusal slower than an answer is still on its way (a queue
            # is read at once: waiting would only hold the level long enough to measure it queued)
            return None
        r.batch = []
        if not queued and len(self.base_pool) < 4 * BASELINE_N:
            self.base_pool.extend(batch)  # a slow batch is not unqueued latency
        if queued and not r.queued:
            # one slow batch of a few calls can be chance (prompts differ in length): hold the level for another
            r.queued = True
            r.answers = 0
            r.lat_sum = 0.0
            return None
        r.queued = queued
        base = base or mean
        if queued:
            return self._server_queues(r, mean, base, since_s)
        return self._ramp_step(r, mean, low, since_s)

    def _server_queues(self, r: Ramp, mean: float, base: float, since_s: float) -> Decision | None:
        """A ramp batch said the server queues: down to what it serves at once (goodput × unqueued latency), measured
        first where the queue showed on a small budget."""
        self.limit_seen = True
        # the server queues: of what it answers per second, it serves unqueued latency's worth at once
        goodput = r.answered_since / since_s if since_s > 0 else self.level / mean
        lat_min = self.ramp_lat_min
        assert lat_min is not None  # set by the batch's answers (`answered`)
        served = goodput * lat_min
        self.goodput[self.level] = goodput  # a rough look: the level settled on is measured properly
        self.careful = True
        new = max(1, min(self.level - 1, round(served)))
        why = (f"latency {mean * 1000:.0f} ms at {self.level}, {mean / base:.1f}× the {base * 1000:.0f} ms "
               f"below: the server queues; {goodput:.1f}/s × {lat_min * 1000:.0f} ms = {served:.1f} served at once")
        if self.left is not None and self.left <= SMALL_BUDGET and \
                self.answered_full.get(self.level, 0) < MIN_ANSWERED:
            # a small budget: measured here first (a queue costs latency, not goodput), then there: two levels
            # measured well, the verdict's 'the server queues above N', rather than many glanced at (on a
            # larger one the settled level's probes measure the level above)
            self.stage = Descend(then=new)
            return self._move(self.level, why)  # (no move: the reason is in the next one)
        self.stage = Descend()
        return self._move(new, why)

    def _ramp_step(self, r: Ramp, mean: float, low: float, since_s: float) -> Decision | None:
        """A clean ramp batch: doubling (the first climb, up to a declared limit's level) or one level up (a recovery,
        never back to the level that erred), within the ceiling and the calls left."""
        additive = r.top is not None
        if additive:
            up = self.level + 1
            top = r.top
            assert top is not None
            if up >= top or r.strikes.get(up, 0) >= 2 or up > self.ceiling:
                return self._ramp_done(f"{self.level} clean again; {up} erred")
            struck = min((lv for lv in r.strikes if lv <= self.level), default=None)
            if struck is not None:
                # a level refused once on the way up and clean on its second look is the edge of the limit (a token
                # bucket's refill let one batch through): nothing above it is tried, and the level below is held
                self._ramp_done(f"{struck} refused once and clean once: the edge")
                return self._move(struck - 1, f"{struck} refused once on the way up, then clean for a batch: the edge "
                                              f"of the limit; settling one below")
        else:
            up = min(self.ceiling, max(self.level + 1, math.floor(self.level * self.settings.ramp_step)))
            p = self.prior(mean)
            if p is not None and up > p:
                if self.level >= p:
                    # at the level the declared limit allows, clean: what lies above is measured with full windows
                    # (a token bucket's burst lets a batch through past any limit), not guessed from a batch
                    self.stage = Climb()
                    return None
                up = p  # the doubling stops at the declared limit: no storm of 429s to find a limit already stated
        while up > self.level and self._avoided(up):
            up -= 1
        if up <= self.level:
            return self._ramp_done(f"at the ceiling ({self.ceiling}) or below a level that erred")
        if self.affordable(up) <= self.level:
            return self._ramp_done(f"{self.left} calls left: a level above {self.level} would not be held "
                                   f"{ROUNDS_LEFT} rounds")
        up = self.affordable(up)
        r.prev = self.level
        r.rising = True
        rate = f"goodput {r.answered_since / since_s:.1f}/s, " if since_s > 0 else ""
        d = self._move(up, f"{'one up' if additive else 'ramp'}: {rate}{r.answers} answered in "
                           f"{mean * 1000:.0f} ms on average, 0 429s")
        r.new_batch()
        r.prev_low, r.prev_mean = low, mean
        return d

    def _ramp_done(self, why: str) -> Decision | None:
        self.stage = Settled() if self._recovering else Climb()
        self.careful = True
        return self._move(self.level, why)

    def limited(self, retry_after_s: float | None = None, started_at: int | None = None) -> Decision | None:
        """A call was refused with a 429; `started_at` is the level its attempt started at (the current one when not
        given). A refusal counts as soon as it arrives, against that level: a gateway slow to refuse answers after
        the ramp has moved on, and the refusal still says the limit is below the level it was sent at. One sent
        above the current level is the aftermath of a storm already acted on. Ends the first ramp, steps a recovery
        one back; a few at a level measured clean mean the provider's limit dropped."""
        self.limit_seen = True
        at = self.level if started_at is None else started_at
        if at > self.level:
            self.aftermath += 1
            return None
        wait = f"; provider asked to wait {retry_after_s:.2f}s" if retry_after_s is not None else ""
        sent = f" (sent at {at})" if at != self.level else ""
        r = self.stage
        if isinstance(r, Ramp):
            return self._limited_on_ramp(r, at, sent, wait)
        p = self.prior()
        if p is not None and at == self.level and at > p:
            # a 429 past the level the declared limit allows: the headers and the evidence agree, so no storm is
            # needed to prove the limit (the verdict names it 'as declared'); the highest level below it is held
            self.avoid[at] = self.settings.avoid_windows
            self.proven.add(at)
            self.goodput.pop(at, None)
            self.careful = True
            self.stage = Settled()
            return self._move(at - 1, f"429 at {at}{wait}, past the {p} its declared limit allows: as declared, "
                                      f"holding {at - 1}")
        if at != self.level or self.phase not in ("settled", "climb", "descend"):
            return None  # a probe is judged by its window: the verdict needs it measured or refused
        return self._limited_held(wait)

    def _limited_on_ramp(self, r: Ramp, at: int, sent: str, wait: str) -> Decision | None:
        """A 429 on a ramp: a recovery steps one back (twice at one level: that is the limit); the first ramp ends,
        back to its last clean level."""
        if r.top is not None:
            # recovering after a drop: a storm's aftermath (a limit that counts refused requests is in debt) can
            # refuse a level that is fine, so one down until a level is clean; a level reached from below and
            # refused twice is the limit
            new = max(1, at - 1)
            if not r.rising:
                if at != self.level:
                    return None
                r.new_batch()
                return self._move(new, f"429 at {self.level} on the way down{wait}: the storm's aftermath, one down")
            k = r.strikes[at] = r.strikes.get(at, 0) + 1
            r.rising = False
            if k >= 2 or new == 1:
                self.stage = Settled()
                self.careful = True
                self.avoid[at] = self.settings.avoid_windows
                return self._move(new, f"429 at {at} again{sent}{wait}: settling one below")
            r.new_batch()
            return self._move(new, f"429 at {at}{sent}{wait}: one down, then up again once clean")
        # the first ramp: the limit is below the level the refused attempt was sent at: back to the highest level of
        # this ramp whose attempts all came back unrefused (no storm to measure in: a storm's goodput says little,
        # inflated by a token bucket's burst or deflated by refusals that count against the limit), then one level
        # per clean batch up to just below the one that erred
        erred = at
        self.careful = True
        self.avoid[erred] = self.settings.avoid_windows
        prev = self.linear_to = self._last_clean_below(erred)
        new = prev if prev is not None else max(1, erred // 2)
        how = f"back to {prev}, the last level without one" if prev is not None else "halving"
        self._start_recovery(erred)
        return self._move(new, f"ramp ends at the first 429{sent}{wait}: {how}, then one up per clean latency, "
                               f"below {erred}")

    def _limited_held(self, wait: str) -> Decision | None:
        """A 429 at a held level: a storm (the limit dropped, or was crossed) halves the level; a few among many
        attempts are the edge of a limit (`_leaked`)."""
        self.onset += 1
        self.leaks += 1
        self.quiet_429s += 1
        recent = self.recent_429s
        recent.append(self.sent_total)
        need = max(self.settings.onset_429s, math.ceil(self.level / 4))
        burst = max(self.settings.onset_429s, math.ceil(self.level / 2))
        del recent[:-burst]
        # a storm: half a level's worth of 429s in a row, or nearly (over DROP_SHARE of the attempts sent since the
        # first of them); fewer, and the bursts a token bucket gives at the edge of its rate pass for one
        span = self.sent_total - recent[0]
        storm = len(recent) >= burst and span <= burst / DROP_SHARE
        # before it the levels held were clean: a full window said so, or plenty sent within the clean bound
        was_clean = (self.level in self.clean_full and self.windows_here > 0) or \
            (self.quiet_sent >= MIN_ANSWERED and self.quiet_429s - burst <= self.settings.error_share * self.quiet_sent)
        if not storm or not (was_clean or self.sent_total):
            # a few 429s among many attempts: the edge of a limit (one down once they pass LEAK_SHARE); with no
            # count of attempts sent, the level's windows judge them
            return self._leaked(wait) if self._leaking(need) else None
        s = self.settings
        erred = self.level
        self.careful = True
        self.avoid[erred] = s.avoid_windows
        self.goodput.pop(erred, None)
        self.spotless.discard(erred)
        self.clean_full.discard(erred)
        self.last_clean = None
        if was_clean:
            # what was measured before the drop describes a limit that is gone: measure afresh (the readout too)
            self.answered_full.clear()
            self.proven.clear()
            self.limit_dropped = True
            what = f"{burst} 429s in {span + 1} attempts at a level that was clean{wait}: the provider's limit dropped"
        else:
            what = f"{burst} 429s in {span + 1} attempts at {erred}{wait}: a storm"
        self._quiet()
        self._start_recovery(erred)
        return self._move(max(1, (erred + 1) // 2),
                          f"{what}; halving to stop it, then one level up per clean latency, below {erred}")

    def _quiet(self) -> None:
        """A storm, a back-off or a ramp: what is sent from here on is the next quiet stretch."""
        self.quiet_sent = self.quiet_429s = 0
        self.recent_429s = []

    def _leaking(self, need: int) -> bool:
        """At least `need` 429s, over LEAK_SHARE of the attempts sent at this level since the move (known only when
        the caller reports starts), above the first ramp's last clean level and above LEAK_MIN_LEVEL, where a level
        down costs more goodput than its retries (a third at 3), and the level below not measured worse."""
        if not (self.leaks >= need and 0 < self.sent_here < self.leaks / LEAK_SHARE
                and self.level > max(LEAK_MIN_LEVEL, self.linear_to or 1)):
            return False
        here, below = self.goodput.get(self.level), self.goodput.get(self.level - 1)
        return here is None or below is None or below >= here * (1 - self.settings.flat)

    def _leaked(self, wait: str) -> Decision | None:
        """429s keep coming back from the level held, under the window's bound: a level or so past a limit (a
        gateway slow to refuse keeps the share low, since its refusals hold the slots they would be retried
        from), where every refusal costs a retry and, under a rate limit, the level below answers as many."""
        erred = self.level
        why = f"{self.leaks} 429s in {self.sent_here} attempts at {erred}{wait}: just past the limit, one down"
        self.avoid[erred] = self.settings.avoid_windows
        self.goodput.pop(erred, None)
        self.spotless.discard(erred)
        self.clean_full.discard(erred)
        self.careful = True
        self.stage = Settled()
        self.last_clean = None
        return self._move(erred - 1, why)

    def _avoided(self, level: int) -> bool:
        return any(level >= lv for lv, left in self.avoid.items() if left > 0)

    def _record(self, w: Window) -> float:
        g = w.goodput
        old = self.goodput.get(w.level)
        if not w.quick:
            self.answered_full[w.level] = self.answered_full.get(w.level, 0) + w.answered
        if not w.quick and w.level not in self.verified:
            self.verified.add(w.level)
            old = None  # a full window replaces a rough look
        elif w.quick and w.level in self.verified:
            return g  # a rough look does not move a measured figure
        self.goodput[w.level] = g if old is None else 0.5 * (old + g)
        background = w.transient_share - w.interrupted_share  # cut streams are the level's doing (Window)
        if self.base_transient is None or background < self.base_transient:
            self.base_transient = background
        for lv in list(self.avoid):
            self.avoid[lv] -= 1
            if self.avoid[lv] <= 0:
                del self.avoid[lv]
        return g

    def _move(self, new: int, reason: str) -> Decision | None:
        new = self.affordable(max(1, min(self.ceiling, new)))
        if new == self.level:
            return None
        self.windows_here = 0
        self.onset = 0
        self.epoch += 1
        self.batch_started = self.batch_out = self.aftermath = self.sent_here = self.leaks = 0
        d = Decision(self.model_key, self.level, new, f"{self.model_key} {self.level} → {new}: {reason}")
        self.prev_level, self.level = self.level, new
        if isinstance(self.stage, Ramp):
            self.stage.seen.append(new)
        return d

    def observe(self, w: Window) -> Decision | None:
        """One closed window at the current level; a decision when the level should change."""
        if w.level != self.level:
            return None  # measured before the last change took hold (or under someone else's level)
        s = self.settings
        if self.aftermath:
            # refusals of attempts sent above this level arrived in the window: that storm was acted on already
            w = replace(w, rate_limited=max(0, w.rate_limited - self.aftermath))
            self.aftermath = 0
        if isinstance(self.stage, Ramp):
            self.stage = Climb()  # a window closed before a batch came back (calls failing, not answered): measure
        g = self._record(w)
        self.windows_here += 1
        base_t = self.base_transient or 0.0
        cut = w.interrupted_share
        excess_t = max(0.0, w.transient_share - cut - base_t) + cut
        errors = w.limited_share + excess_t
        if errors > s.error_share:
            return self._back_off(w, g, excess_t)
        self.last_clean = self.level
        self.onset = 0
        self.recent_429s = []
        if not w.quick:
            self.clean_full.add(self.level)
            if w.rate_limited == 0:
                self.spotless.add(self.level)
        stage = self.stage
        p = self.prior()
        if p is not None and self.level > p and self.served_past_declared(w):
            # the provider served more than its headers allow, in a full window without a 429: they lie low (or are
            # another key's, or stale); whatever goodput's trend says, the ramp goes on as without them
            return self._headers_wrong(p, f"{w.attempts / w.seconds:.1f} requests/s served, 0 429s")
        if isinstance(stage, Probe) and self.answered_full.get(self.level, 0) < MIN_ANSWERED:
            return None  # a probe is measured as the verdict measures a level, else it proves nothing
        if isinstance(stage, Probe):
            base = stage.from_level
            gb = self.goodput.get(base, 0.0)
            gain = g / gb - 1 if gb > 0 else 1.0
            if gain > s.flat:
                self.stage = Climb()
                return self._step_up(False, f"probe paid: goodput +{gain:.0%}, {w.rate_limited} 429s")
            self.stage = Settled()
            return self._move(base, f"probe gained {gain:+.0%} (≤ {s.flat:.0%}): back to {base}")
        if isinstance(stage, Descend) and self.answered_full.get(self.level, 0) < MIN_ANSWERED:
            return None  # measured as the verdict measures a level before it is compared
        if isinstance(stage, Descend) and stage.then is not None:
            self.stage = Descend()
            return self._move(stage.then, f"goodput {g:.1f}/s at {self.level}, latency {w.mean_latency_s or 0:.2f}s "
                                          f"measured queued: to {stage.then}, what the server serves at once")
        if isinstance(stage, Descend):
            return self._settle(f"goodput {g:.1f}/s at {self.level}")
        if isinstance(stage, Climb):
            return self._climbed(w, g)
        assert isinstance(stage, Settled)
        return self._held(stage, g)

    def _climbed(self, w: Window, g: float) -> Decision | None:
        """A clean window while climbing: up while goodput grows (×1.5 while it grows in proportion, else one), else
        settle; past a declared limit's level with goodput growing in proportion, the headers were wrong."""
        s = self.settings
        prev = self.prev_level
        gp = self.goodput.get(prev) if prev is not None and prev < self.level else None
        if gp is None and self.careful:
            return self._step_up(False, f"goodput {g:.1f}/s, {w.rate_limited} 429s: one level up")
        if gp is None:
            return self._step_up(True, f"first look: goodput {g:.1f}/s, {w.rate_limited} 429s")
        gain = g / gp - 1 if gp > 0 else 1.0
        if gain > s.flat:
            assert prev is not None
            fast = gain >= s.linear * (self.level / prev - 1)
            why = f"goodput +{gain:.0%}, {w.rate_limited} 429s"
            p = self.prior()
            if p is not None and fast and self.level > p and not w.quick and w.rate_limited == 0:
                # past the level the declared limit allows, a full window without a 429, goodput still growing
                # in proportion: the headers were wrong (or are shared, or stale), and evidence wins
                return self._headers_wrong(p, why)
            return self._step_up(fast, why)
        return self._settle(f"goodput {gain:+.0%} from {prev} to {self.level}")

    def _held(self, stage: Settled, g: float) -> Decision | None:
        """A clean window at the level settled on: a lower level as good wins (never up: that is what probes are
        for); the level above is probed once for the verdict, the level below measured once, and then every
        `probe_every` windows one level up."""
        s = self.settings
        # settled: as figures firm up, a lower level may turn out as good (never up: that is what probes are for)
        ok = {lv: gv for lv, gv in self.goodput.items() if not self._avoided(lv) and lv in self.verified}
        if ok and self.level in ok:
            top = max(ok.values())
            lowest = min(lv for lv, gv in ok.items() if gv >= top * (1 - s.flat))
            if lowest < self.level:
                return self._settle(f"goodput at {self.level} now {g:.1f}/s, no better than at {lowest}")
        stage.windows += 1
        up = self.level + 1
        measured = self.answered_full.get(self.level, 0) >= MIN_ANSWERED
        if stage.windows >= 2 and measured and up <= self.ceiling and up not in self.proven \
                and self.answered_full.get(up, 0) < MIN_ANSWERED:
            # the verdict needs the level above measured (flat, lower) or refused: one measured look, even at a level
            # that erred on a quick look (a ramp's single 429 proves nothing to a reader of the table)
            self.stage = Probe(self.level)
            return self._move(up, f"probe one level up: {up} not measured yet (the verdict needs it)")
        down = self.level - 1
        above_known = up > self.ceiling or up in self.proven or self.answered_full.get(up, 0) >= MIN_ANSWERED
        if stage.windows >= 2 and measured and above_known and down >= 1 \
                and (self.limit_seen or up <= self.ceiling) \
                and self.answered_full.get(down, 0) < MIN_ANSWERED and not self._avoided(down) and not self.alone:
            # the lowest level within FLAT of the best is the optimum: a limit reached on a ramp (slow 429s let a
            # level or two past it look clean) is checked from below, one measured level at a time (not a cap reached
            # with no 429 nor queue on the way: goodput grew with the level all the way up, and a look below would
            # only cost wall clock)
            self.stage = Descend()
            return self._move(down, f"measuring one level down: {down} not measured yet")
        if stage.windows >= s.probe_every:
            stage.windows = 0
            up = self.level + 1
            if up <= self.ceiling and not self._avoided(up):
                self.stage = Probe(self.level)
                return self._move(up, f"probe one level up (settled for {s.probe_every} windows)")
        return None

    def served_past_declared(self, w: Window) -> bool:
        """A full window without a 429 in which the provider served more than its declared limits allow (by
        DECLARED_MARGIN, so that a bucket's burst is not taken for it): requests per second over the declared
        requests/min, or the tokens of those requests over the declared tokens/min."""
        d = self.declared
        if d is None or w.quick or w.rate_limited or w.seconds <= 0:
            return False
        rate = w.attempts / w.seconds
        if d.requests_limit and rate > d.requests_limit / 60.0 * DECLARED_MARGIN:
            return True
        return bool(d.tokens_limit and self.tokens_per_call and
                    rate * self.tokens_per_call > d.tokens_limit / 60.0 * DECLARED_MARGIN)

    def _headers_wrong(self, p: int, why: str) -> Decision | None:
        """Evidence beat the declared limits (which allowed `p`): they are ignored from here, and the ramp goes on
        as it would have without them, doubling per clean batch."""
        self.prior_wrong = True
        why += f" at {self.level}, past the {p} the declared limit allows: evidence wins over the headers"
        self.start_ramp()
        assert isinstance(self.stage, Ramp)
        self.stage.prev = self.level
        return self._move(self.affordable(min(self.ceiling, 2 * self.level)), f"{why}; ramp on")

    def _step_up(self, fast: bool, why: str) -> Decision | None:
        s = self.settings
        up = self.level + 1
        if fast and not self.careful:
            up = max(up, math.ceil(self.level * s.fast_step))
        p = self.prior()
        if p is not None and up > p:
            up = min(up, p) if self.level < p else self.level + 1  # past the declared limit: a level a full window
        while up > self.level and self._avoided(up):
            up -= 1
        up = min(up, self.ceiling)
        if up <= self.level:
            return self._settle(f"{why}; at the ceiling ({self.ceiling}) or below a level that erred")
        return self._move(up, why)

    def _settle(self, why: str) -> Decision | None:
        """Stop climbing: the lowest clean level within FLAT of the best goodput seen."""
        self.stage = Settled()
        ok = {lv: g for lv, g in self.goodput.items() if not self._avoided(lv)}
        if not ok:
            return None
        measured = [g for lv, g in ok.items() if lv in self.verified]
        top = max(measured or ok.values())
        best = min(lv for lv, g in ok.items() if g >= top * (1 - self.settings.flat))
        near = top * (1 - 4 * self.settings.flat)  # a rough look can be this far off; further is truly lower
        rough = [lv for lv, g in ok.items() if lv <= best and lv not in self.verified and g >= near]
        if rough:
            # the best, or a level below it, was only glanced at on the way up: measure it before deciding
            self.stage = Descend()
            target = max(rough)
            if target == self.level:
                return None  # the next window here is a full one
            return self._move(target, f"{why}; measuring {target} properly before settling")
        lower = max(1, best // 2, self.linear_to or 0)
        if best == min(ok) and lower < best and len(ok) > 1:
            # goodput is flat from the lowest level seen upwards: a level below it may do as well with less
            # queueing (a serial local server gives the same goodput at 1 as at 8, with 1/8 the latency)
            self.stage = Descend()
            return self._move(lower, f"{why}; flat from {best} up: trying {lower}")
        if best == self.level:
            return None
        return self._move(best, f"{why}; settling on {best}, the lowest within {self.settings.flat:.0%} of "
                                f"the best goodput ({top:.1f}/s)")

    def _back_off(self, w: Window, g: float, excess_t: float) -> Decision | None:
        s = self.settings
        self.limit_seen = True
        self._quiet()
        self.stage = Climb()  # one level at a time from the sustained level, up to just below the one that erred
        self.careful = True
        self.avoid[self.level] = s.avoid_windows
        self.goodput.pop(self.level, None)  # its goodput was bought with retries: not a candidate
        if self.level in self.spotless and w.limited_share >= excess_t:
            # a level measured without a single 429 now past the bound: the provider's limit dropped, and what was
            # measured before describes a limit that is gone
            self.answered_full.clear()
            self.proven.clear()
            self.limit_dropped = True
        if w.attempts >= MIN_REFUSAL_ATTEMPTS and not self.limit_dropped:
            self.proven.add(self.level)  # (after a drop the readout restarts: the level is measured again)
        self.spotless.discard(self.level)
        self.clean_full.discard(self.level)
        what = (f"{w.limited_share:.0%} 429s" if w.limited_share >= excess_t
                else f"{w.interrupted_share:.0%} interrupted streams" if w.interrupted_share >= excess_t / 2
                else f"{excess_t:.0%} more transients")
        if w.mean_latency_s and g > 0:
            # Little's law: the level the provider sustained. The small margin keeps a rate limit's
            # token bucket from being drained to zero (which would answer 429 to every burst).
            sustained = g * w.mean_latency_s
            new = min(self.level - 1, max(1, math.floor(sustained * 0.95 + 0.5)))
            how = f"sustained {g:.1f}/s × {w.mean_latency_s * 1000:.0f} ms = {sustained:.1f} in flight"
            if self.windows_here == 1 and self.last_clean is not None and new < self.last_clean < self.level:
                # the first look at a level we just stepped up to: the storm it set off (refused requests
                # count against the limit) collapsed what got through, so Little's law reads low; the level
                # we came from was clean moments ago
                new = self.last_clean
                how += f"; back to {new}, clean one window ago"
        else:
            new = max(1, self.level // 2)
            how = "nothing answered: halving"
        self.last_clean = None
        if w.retry_after_s is not None:
            how += f"; provider asked to wait {w.retry_after_s:.1f}s (a rate, not a level)"
        if w.limited_share >= excess_t and self.settings.ramp:
            # from there one level per clean latency, never back to this one: an estimate made in a storm is rough
            # either way, and calls tell sooner than windows whether the next level up is clean
            self._start_recovery(self.level)
            how += f"; then one up per clean latency, below {self.level}"
        return self._move(new, f"{what}; {how}")


class _Mean:
    """Running means per model."""

    def __init__(self) -> None:
        self._sum: dict[str, tuple[float, int]] = {}

    def add(self, key: str, x: float) -> float:
        total, n = self._sum.get(key, (0.0, 0))
        self._sum[key] = (total + x, n + 1)
        return (total + x) / (n + 1)


class Tuner:
    """The auto-tuner on a running sweep: one `ModelController` per model, on or off, per-model suspension.

    `set_level(model_key, n)` and `set_total(n)` are the runner's controls (source "tuner"); `emit` reports a
    `TunerDecided` event. A user's change of a model's cap suspends the tuner for that model; a user's change
    of the global level suspends it for all (the tuner keeps the global at the sum of the models' levels, so
    each model gets the level it was given). `enable()` re-enables every model.
    """

    def __init__(self, model_keys: Sequence[str], *, set_level: Callable[[str, int], None],
                 set_total: Callable[[int], None], emit: Callable[[Event], None],
                 caps: Callable[[str], int | None], user_caps: dict[str, int | None] | None = None,
                 settings: TunerSettings | None = None, evidence: Evidence | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        import time

        self.settings = settings or TunerSettings()
        lanes_of: dict[str, list[str]] = {}
        for lane in model_keys:
            lanes_of.setdefault(lane.partition(VARIANT_SEP)[0], []).append(lane)
        self._lanes_of = lanes_of
        """Each model's lanes: the model, or each of its prompt variants. They share its provider, so the tuner
        gives them one level (each lane capped at it: the engine counts a model's lanes together at its provider)
        from one controller fed by all of them."""
        self._model_of = {lane: model for model, lanes in lanes_of.items() for lane in lanes}
        self.model_keys = tuple(lanes_of)
        """The models tuned (a model's variants are one)."""
        self._set_lane_level = set_level
        self._set_total = set_total
        self._emit = emit
        self._lane_cap = caps
        self._clock = clock or time.monotonic
        given = dict(user_caps or {})
        self.user_caps: dict[str, int | None] = {
            m: min((c for lane in lanes if (c := given.get(lane)) is not None), default=None)
            for m, lanes in lanes_of.items()}
        """Caps from the project file, per model (the least of its lanes'): the tuner stays at or below them."""
        self.enabled = False
        self.suspended: set[str] = set()
        self.controllers: dict[str, ModelController] = {}
        self.decisions: list[Decision] = []
        self.tracker = LevelTracker(model_keys, evidence=evidence, on_window=self._window)
        self._started: dict[tuple[str, str, int], tuple[float, int, int]] = {}
        """Attempts in flight (model, case, trial) → when they started, the model's level then (0: not tuned) and
        the epoch of the ramp batch they count in (-1: none): answers are read from calls started at the current
        level only; a 429 counts against the level its attempt was sent at, whenever it arrives."""
        self._changed_at: dict[str, float] = {}
        self._tokens = _Mean()

    @property
    def sink(self) -> Callable[[Event], None]:
        """The engine's sink: the tracker's fold (always: the readout is wanted with or without the tuner), which
        hands each event on to `_watch` while the tuner is on. One call per event when it is off."""
        return self.tracker.on_event

    def on_event(self, ev: Event) -> None:
        """Fold one event (`sink`, for callers holding the tuner)."""
        self.tracker.on_event(ev)

    def _model(self, key: str) -> str:
        """The model a lane key belongs to (a model's key is its own)."""
        return self._model_of.get(key, key)

    def _set_level(self, model: str, n: int) -> None:
        for lane in self._lanes_of.get(model, (model,)):
            self._set_lane_level(lane, n)

    def _caps(self, model: str) -> int | None:
        return self._lane_cap(self._lanes_of.get(model, (model,))[0])

    def _watch(self, ev: Event) -> None:
        """While on: manual changes suspend it; calls' ends move each model's controller."""
        if type(ev) is ConcurrencyChanged and ev.source == "user":
            if ev.model_key is None:
                for k in self.model_keys:
                    self._suspend(k, "the global concurrency was changed by hand")
            else:
                self._suspend(self._model(ev.model_key), "its cap was changed by hand")
            return
        if isinstance(ev, CallStarted):
            if ev.model_key in self.tracker.models:  # not a judge lane's call: those end in JudgeFinished
                model = self._model(ev.model_key)
                c = self._live(model)
                if c is not None and ev.t >= self._changed_at.get(model, 0.0):
                    self._started[(ev.model_key, ev.case_id, ev.trial)] = (ev.t, c.level, c.started())
                else:  # sent before the current level took hold (at the previous one, if the tuner set it)
                    prev = c.prev_level if c is not None and c.prev_level is not None else 0
                    self._started[(ev.model_key, ev.case_id, ev.trial)] = (ev.t, prev, NOT_COUNTED)
        elif isinstance(ev, CallFinished):
            r = ev.result
            sent = self._started.pop((r.model_key, r.case_id, r.trial), None)
            model = self._model(r.model_key)
            c = self._live(model)
            if c is None:
                return
            if c.declared is not None and provider_answered(r):
                # a declared tokens/min limit is calls/min only over the tokens a call spends
                c.tokens_per_call = self._tokens.add(model, r.input_tokens + r.output_tokens)
            if c.left is not None:
                c.left -= 1
                if c.left == 0:
                    self._others_done()
            limited = r.error_class == "rate_limited"
            if sent is not None and sent[1]:
                c.ended(sent[1], sent[2], limited)
            since = self._changed_at.get(model, 0.0)
            fresh = sent is not None and sent[0] >= since
            if provider_answered(r) and r.latency_ms is not None:
                self._apply(c, c.answered(r.latency_ms / 1000.0, ev.t - since, fresh))
            elif limited and sent is not None and sent[1]:
                self._apply(c, c.limited(None, sent[1]))
        elif type(ev) is LimitsDeclared:
            for k in self.model_keys:  # a model's prompt variants share its provider, and so its limits
                ctl = self.controllers.get(k)
                if ctl is not None and (k == ev.model_key or k.startswith(ev.model_key + VARIANT_SEP)):
                    ctl.declared = ev.limits
        elif isinstance(ev, CallRetrying):
            sent = self._started.pop((ev.model_key, ev.case_id, ev.trial), None)
            c = self._live(self._model(ev.model_key))
            if c is None or sent is None or not sent[1]:
                return
            limited = ev.reason == "rate_limited"
            c.ended(sent[1], sent[2], limited)
            if limited:
                self._apply(c, c.limited(ev.retry_after, sent[1]))

    def _others_done(self) -> None:
        """A model made its last call: a model whose every other tuned model has done so runs alone."""
        ctls = list(self.controllers.values())
        if len(ctls) < 2 or any(c.left is None for c in ctls):
            return
        for c in ctls:
            c.alone = all(o.left == 0 for o in ctls if o is not c)

    def _live(self, key: str) -> ModelController | None:
        """The model's controller when the tuner acts for it (on, not suspended)."""
        return None if key in self.suspended else self.controllers.get(key)

    def _suspend(self, key: str, why: str) -> None:
        if key in self.suspended or key not in self.controllers:
            return
        self.suspended.add(key)
        self._emit(TunerDecided(key, 0, 0, f"tuner suspended for {key}: {why} (press a twice to re-enable)",
                                self._clock()))

    def ceiling(self, key: str) -> int:
        user = self.user_caps.get(key)
        top = min(self.settings.max_level, MAX_CONCURRENCY)
        return min(top, user) if user else top

    def enable(self, start_levels: dict[str, int] | None = None, calls_left: Mapping[str, int] | None = None) -> None:
        """Switch on (or back on after a suspension): each model starts from its current level. `calls_left`: the
        calls each model still has to make, when known (no level above what they can fill is tried)."""
        self.enabled = True
        self.tracker.watch = self._watch
        self.suspended.clear()
        start_levels, calls_left = self._per_model(start_levels or {}, max), self._per_model(calls_left or {}, sum)
        for k in self.model_keys:
            start = start_levels.get(k) or self._caps(k) or 1
            start = max(1, min(self.ceiling(k), start))
            self.controllers[k] = ctl = ModelController(k, start, self.ceiling(k), self.settings)
            ctl.left = (calls_left or {}).get(k)
            ctl.declared = self.tracker.declared(k)
            if self.settings.ramp:
                ctl.start_ramp()
            self._changed_at[k] = self._clock()
            self.tracker.set_quick(k, True)
        self._apply_all("tuner on")

    def _per_model(self, per_lane: Mapping[str, int], join: Callable[[list[int]], int]) -> dict[str, int]:
        """Figures given per lane (a start level, the calls left), per model: a model's lanes joined by `join`."""
        out: dict[str, list[int]] = {}
        for key, v in per_lane.items():
            out.setdefault(self._model(key), []).append(v)
        return {m: join(vs) for m, vs in out.items()}

    def disable(self) -> None:
        self.enabled = False
        self.tracker.watch = None
        self._started.clear()
        for k in self.model_keys:
            self.tracker.set_quick(k, False)
        self._emit(TunerDecided(None, 0, 0, "tuner off: levels stay where they are", self._clock()))

    def toggle(self, start_levels: dict[str, int] | None = None, calls_left: Mapping[str, int] | None = None) -> bool:
        if self.enabled:
            self.disable()
        else:
            self.enable(start_levels, calls_left)
        return self.enabled

    def _apply_all(self, why: str) -> None:
        for k, c in self.controllers.items():
            self._set_level(k, c.level)
        self._set_total(sum(c.level for c in self.controllers.values()))
        levels = ", ".join(f"{k} {c.level}" for k, c in self.controllers.items())
        self._emit(TunerDecided(None, 0, 0, f"{why}: starting at {levels}", self._clock()))

    def _window(self, w: Window) -> None:
        if not self.enabled or w.model_key in self.suspended:
            return
        c = self.controllers.get(w.model_key)
        if c is None:
            return
        self._apply(c, c.observe(w))

    def _apply(self, c: ModelController, d: Decision | None) -> None:
        self.tracker.set_quick(c.model_key, c.climbing_fast)
        if c.limit_dropped:
            c.limit_dropped = False
            if d is not None:
                self._act(d)  # first: the hold at the old level closes under it, and is forgotten with the rest
            self.tracker.forget(c.model_key)
        elif d is not None:
            self._act(d)

    def _act(self, d: Decision) -> None:
        self._changed_at[d.model_key] = self._clock()
        self.decisions.append(d)
        self._emit(TunerDecided(d.model_key, d.old, d.new, d.reason, self._clock()))
        self._set_level(d.model_key, d.new)
        self._set_total(sum(ctl.level if k not in self.suspended else (self._caps(k) or ctl.level)
                            for k, ctl in self.controllers.items()))

    def level(self, key: str) -> int | None:
        """The level the tuner gives a model (or the model of a lane)."""
        c = self.controllers.get(self._model(key))
        return c.level if c is not None else None

    def caps(self) -> dict[str, int | None]:
        """What stops each model's climb: the tuner's ceiling when it is on, else the project's cap."""
        return {k: self.ceiling(k) if self.controllers.get(k) is not None else self.user_caps.get(k)
                for k in self.model_keys}

    def readouts(self) -> list[ModelReadout]:
        """Each model's levels and its one verdict (a cap that stopped the climb said so)."""
        return self.tracker.readouts(self.caps())

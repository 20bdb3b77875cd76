"""The evidence for a concurrency verdict, and the one verdict every view prints.

A model's evidence is one `LevelEvidence` per level it was held at: answered calls, attempts, 429s, transient
failures, the time held (only while calls of that level were in flight or backing off, and only after the
level's first latency: see `levels.LevelTracker`), and latency percentiles with their n. From those come
goodput with a Poisson interval and the 429 share with a Wilson interval; a figure over an empty (or shorter than
one latency) interval is None, which views print as "–".

The stated minimums (README, "Finding the concurrency optimum"):
- a level is *measured* with at least `MIN_ANSWERED` answered calls and `MIN_LATENCIES_HELD` median latencies
  held: fewer answers, and goodput's 95% interval is wider than ±45%; a shorter hold, and the calls started
  under the previous level are most of what finished;
- it is *clean* when measured and its 429 share (plus transient failures above the quietest measured level's) is
  at most `CLEAN_SHARE`;
- it is *refused* (past a limit) when at least `MIN_REFUSAL_ATTEMPTS` attempts ended there and the lower end of
  the Wilson interval of that error share is above `CLEAN_SHARE`: a storm proves a limit with few answers.

The optimum is the lowest clean level as good as the best clean one below any level that erred (refused, or
measured past the bound): within FLAT of its goodput, or the level just below that one when its goodput interval
reaches the best's (further down, an interval alone would be a guess).
`verdict()` reads those and nothing else, and returns the verdict and the recommendation together, so no view can
print one without the other or disagree with it.

Pure: no clock, no I/O, no UI imports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from arenatui.kernel.events import DeclaredLimits
from arenatui.kernel.units import plural
from arenatui.stats.proportions import wilson_interval

MIN_ANSWERED = 20
"""Answered calls before a level's goodput counts (its 95% Poisson interval is then within about ±45%)."""
MIN_LATENCIES_HELD = 2.0
"""Median latencies a level must be held (in-flight time) before its goodput counts."""
MIN_HELD_S = 0.05
"""Below this many seconds held, no rate is computed at all (a division by a near-empty interval)."""
CLEAN_SHARE = 0.05
"""429 share (and transient share above the quietest level's) at or under which a measured level is clean."""
MIN_REFUSAL_ATTEMPTS = 8
"""Attempts before a level's error share can prove a limit (2 errors of 8 already put the Wilson interval's
lower end above CLEAN_SHARE)."""
FLAT = 0.05
"""Goodput within this share of the best counts as the same: the lowest such clean level is the optimum."""
Z = 1.96
"""Two-sided 95% intervals."""

VerdictKind = Literal["optimum", "rising", "capped", "rate", "bounded", "insufficient"]


def poisson_interval(k: int, z: float = Z) -> tuple[float, float]:
    """95% interval of a Poisson mean given k events (Byar's approximation, within 1% of the exact one for k >= 1)."""
    lo = 0.0 if k == 0 else k * (1 - 1 / (9 * k) - z / (3 * math.sqrt(k))) ** 3
    k1 = k + 1
    hi = k1 * (1 - 1 / (9 * k1) + z / (3 * math.sqrt(k1))) ** 3
    return max(0.0, lo), hi


@dataclass(frozen=True, slots=True)
class LevelEvidence:
    """What one level of one model measured."""

    level: int
    held_s: float
    """Seconds held while the level's calls were in flight or backing off, after its first latency."""
    answered: int
    attempts: int
    """Attempts that ended: answered, refused, failed."""
    rate_limited: int
    transient: int
    """Transient failures and timeouts."""
    retries: int
    given_up: int
    """Calls that ended errored."""
    latencies: int
    """Answered latencies behind the percentiles."""
    p50_ms: float | None
    p95_ms: float | None

    @property
    def latency_s(self) -> float | None:
        return self.p50_ms / 1000.0 if self.p50_ms is not None and self.p50_ms > 0 else None

    @property
    def held_latencies(self) -> float | None:
        lat = self.latency_s
        return self.held_s / lat if lat else None

    def _rate_ok(self) -> bool:
        """A rate over the hold means something: held at least MIN_HELD_S and one latency."""
        lat = self.latency_s or 0.0
        return self.held_s >= MIN_HELD_S and self.held_s >= lat

    @property
    def goodput(self) -> float | None:
        """Answered calls per second held; None over an empty interval."""
        return self.answered / self.held_s if self._rate_ok() else None

    @property
    def goodput_interval(self) -> tuple[float, float] | None:
        if not self._rate_ok():
            return None
        lo, hi = poisson_interval(self.answered)
        return lo / self.held_s, hi / self.held_s

    @property
    def retries_per_s(self) -> float | None:
        return self.retries / self.held_s if self._rate_ok() else None

    @property
    def limited_share(self) -> float | None:
        return self.rate_limited / self.attempts if self.attempts else None

    @property
    def limited_interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.rate_limited, self.attempts)

    @property
    def transient_share(self) -> float | None:
        return self.transient / self.attempts if self.attempts else None

    @property
    def measured(self) -> bool:
        held = self.held_latencies
        return self.answered >= MIN_ANSWERED and held is not None and held >= MIN_LATENCIES_HELD \
            and self.goodput is not None

    def missing(self) -> str:
        """What the level lacks before it is measured ('' when it is)."""
        if self.measured:
            return ""
        parts = []
        if self.answered < MIN_ANSWERED:
            parts.append(f"{self.answered} of {MIN_ANSWERED} answered")
        lat = self.latency_s
        if lat is None:
            parts.append("no latency yet")
        elif self.held_s < MIN_LATENCIES_HELD * lat or self.goodput is None:
            parts.append(f"held {self.held_s:.1f} of {max(MIN_HELD_S, MIN_LATENCIES_HELD * lat):.1f} s")
        return f"level {self.level}: " + ", ".join(parts or ["too short a hold"])


@dataclass(frozen=True, slots=True)
class Verdict:
    """A model's concurrency verdict and its recommendation, computed together."""

    kind: VerdictKind
    text: str
    """The whole verdict, as every view prints it: 'optimum ≈ 5: 429s from 6'."""
    level: int | None
    """The recommended level: the optimum; the level reached (rising, capped); the level that sustains a rate."""

    @property
    def optimum(self) -> int | None:
        """The measured optimum, the only level `arena tune --write` writes."""
        return self.level if self.kind == "optimum" else None

    @property
    def conclusive(self) -> bool:
        """More calls would not change what to do (an optimum, a cap, a rate limit)."""
        return self.kind in ("optimum", "capped", "rate")

    def setting(self, model_key: str | None = None) -> str:
        """The setting this verdict belongs in, as the user would change it ('' when there is none yet): a model's
        level goes into its `max_concurrency`; a level of the whole run (`model_key` None) into `[run] concurrency`."""
        if self.kind == "optimum" and self.level is not None:
            return f"set max_concurrency = {self.level} for {model_key}" if model_key is not None \
                else f"set [run] concurrency = {self.level}"
        if self.kind == "rate" and model_key is not None:
            return f"set max_concurrency = 1 for {model_key}"
        if self.kind == "bounded":
            return "raise [run] concurrency, or tune it"
        if self.kind == "capped" and model_key is not None:
            return f"raise max_concurrency for {model_key} to look higher"
        return ""

    def line(self, model_key: str | None = None) -> str:
        """The verdict and, when it has one, the setting it belongs in: 'optimum ≈ 2: 429s from 3 → set
        max_concurrency = 2 for sim-limited'."""
        to = self.setting(model_key)
        return f"{self.text} → {to}" if to else self.text

    def __str__(self) -> str:
        return self.text


def declared_level(limits: DeclaredLimits | None, latency_s: float | None, tokens_per_call: float | None = None
                   ) -> float | None:
    """The concurrency a provider's declared limits allow (Little's law): declared requests per second × the
    measured latency, and likewise for tokens (tokens per second ÷ tokens per call × latency), the smaller; None
    when it declared no limit or no latency is measured. A prior for the tuner, to confirm with evidence: headers
    can be stale, shared with other clients, or wrong."""
    if limits is None or not latency_s or latency_s <= 0:
        return None
    bounds = []
    if limits.requests_limit:
        bounds.append(limits.requests_limit / 60.0 * latency_s)
    if limits.tokens_limit and tokens_per_call:
        bounds.append(limits.tokens_limit / 60.0 / tokens_per_call * latency_s)
    return min(bounds) if bounds else None


def _excess(r: LevelEvidence, base_transient: float) -> int:
    """Attempts lost to the level's own load: 429s, and transients above the quietest measured level's share."""
    return r.rate_limited + max(0, r.transient - round(base_transient * r.attempts))


def _reaches(r: LevelEvidence, goodput: float) -> bool:
    """r's goodput interval reaches `goodput`: r is not measurably below it."""
    iv = r.goodput_interval
    return iv is not None and iv[1] >= goodput


def _below(r: LevelEvidence, best: LevelEvidence) -> bool:
    """r's goodput interval lies wholly below best's."""
    a, b = r.goodput_interval, best.goodput_interval
    return a is not None and b is not None and a[1] < b[0]


QUEUE_GLANCE = 8
"""Answered latencies of a level glanced at (not measured) before its latency may say the server queues: a queue
slows every call, so a batch of them shows it."""
QUEUE_GROWTH = 0.7
"""A level's median latency grown from the optimum's by at least this share of the level's own growth (twice the
level, at least 1.7 times the latency): the calls above the optimum wait in a queue at the server."""


def _queued_at(r: LevelEvidence, lat: float, n: int) -> bool:
    """Whether level r's median latency grew from `lat` (level n's) in proportion to the level (QUEUE_GROWTH)."""
    return r.latency_s is not None and r.latency_s / lat - 1 >= QUEUE_GROWTH * (r.level / n - 1)


def verdict(levels: Sequence[LevelEvidence], cap: int | None = None, *, shared: bool = False,
            declared: DeclaredLimits | None = None) -> Verdict:
    """The one verdict for a model's levels (see the module docstring for the rules).

    - `optimum ≈ N` only when N is measured and clean, its goodput is within FLAT of the best clean level below any
      level that erred, refused or measured past the bound (or N is the level just below the lowest such and its 95%
      interval reaches the best's goodput, or N is lower still, its interval reaches the best's goodput and every
      clean level above N took longer in proportion to the level: a queue), and some level above N was measured, or
      refused;
    - `429s from M` (or `errors from M`) only when M was refused or measured with errors;
    - `still rising at N: try higher` when nothing above N was measured and a level below N was, with less goodput
      (one level measured alone says nothing of a rise); `capped at N by max_concurrency` when N is the model's cap;
    - `the server queues above N` in place of `goodput flat above N` when the median latency of every clean level
      measured above N grew in proportion to the level (QUEUE_GROWTH): goodput flat and latency ∝ level is a queue;
      with N > 1 only when a level below N was measured (else N may be queued too: not enough evidence);
      also when N = 1 is the only level measured and every level glanced at above it (QUEUE_GLANCE latencies, every
      attempt answered) shows that growth: with the level's calls in flight, goodput = level / latency (Little's
      law), so latency ∝ level is goodput flat;
    - `429s from M, as declared` when the provider declared a rate limit (`declared`, headers), M is the first level
      above the level it allows (`declared_level`, at the lowest clean level's latency) that met a 429, within one of
      it, even fewer 429s than prove a limit on their own: the headers and the evidence agree, and levels from M up
      are no candidates (a limit stated alone is never an optimum; headers that disagree with evidence are ignored);
    - `limited by requests per minute` when every level that proved anything was refused, level 1 among them;
    - `bounded by its share of the global concurrency` when the model had no cap of its own (`shared`: its levels
      were the slots round-robin gave it) and no level erred: a flat goodput then says the pool held it back, not
      the provider;
    - otherwise `not enough evidence: <what is missing>`.

    Transient failures count against a level only when they grow with it: the lower end of the level's transient
    share interval above the share of the levels below it (a steady rate of failures, unrelated to load, is no limit).
    """
    rows = sorted(levels, key=lambda r: r.level)
    if not rows:
        return Verdict("insufficient", "not enough evidence: no level held yet", None)
    measured = [r for r in rows if r.measured]
    quietest = min(((r.transient_share or 0.0) for r in measured), default=0.0)

    def base_of(r: LevelEvidence) -> float:
        """The transient share not held against r: all of r's, unless it grew past the levels' below it."""
        lower = [x for x in rows if x.level < r.level]
        below = wilson_interval(sum(x.transient for x in lower), sum(x.attempts for x in lower))
        iv = wilson_interval(r.transient, r.attempts)
        # grew: r's interval wholly above the levels' below it (pooled), not a noisy draw of the same rate
        grew = iv is not None and iv[0] > (below[1] if below is not None else quietest)
        return quietest if grew else max(quietest, r.transient_share or 0.0)

    def excess(r: LevelEvidence) -> int:
        return _excess(r, base_of(r))

    def bad_share(r: LevelEvidence) -> float:
        return excess(r) / r.attempts if r.attempts else 0.0

    def refused(r: LevelEvidence) -> bool:
        if r.attempts < MIN_REFUSAL_ATTEMPTS:
            return False
        iv = wilson_interval(excess(r), r.attempts)
        return iv is not None and iv[0] > CLEAN_SHARE

    def erred(r: LevelEvidence) -> bool:
        return refused(r) or (r.measured and bad_share(r) > CLEAN_SHARE)

    def what(r: LevelEvidence) -> str:
        return "429s" if r.rate_limited * 2 >= excess(r) else "errors"

    first_bad = next((r for r in rows if refused(r)), None)
    clean = [r for r in measured if bad_share(r) <= CLEAN_SHARE]
    # below any level that erred: refused, or measured past the bound (a gateway slow to refuse keeps the share of a
    # level past its limit near the bound, one level over it and the next under: the one under is no optimum)
    first_err = next((r for r in rows if erred(r)), None)
    candidates = [r for r in clean if first_err is None or r.level < first_err.level]
    if not candidates:
        if first_bad is not None and first_bad.level == 1 and what(first_bad) == "429s":
            held = sum(r.held_s for r in rows if refused(r))
            answered = sum(r.answered for r in rows if refused(r))
            rate = f"~{answered / held * 60:.0f}/min measured" if held >= MIN_HELD_S else "rate not measured"
            return Verdict("rate", f"limited by requests per minute ({rate}): concurrency will not help; "
                                   "lower the rate or raise the quota", 1)
        if first_bad is not None:
            return Verdict("insufficient", f"not enough evidence: {what(first_bad)} from {first_bad.level}, no level "
                                           "below it measured clean", None)
        if measured:
            worst = max(measured, key=bad_share)
            return Verdict("insufficient", f"not enough evidence: level {worst.level} had "
                                           f"{bad_share(worst):.0%} {what(worst)}, neither clean (at most "
                                           f"{CLEAN_SHARE:.0%}) nor clearly past a limit", None)
        nearest = max(rows, key=lambda r: (r.answered, r.held_s))
        # 'not enough evidence: level 3: 3 of 20 answered, held 1.2 of 1.6 s'
        if nearest.answered == 0:
            tried = sum(r.attempts for r in rows)
            return Verdict("insufficient", f"not enough evidence: nothing answered yet ({plural(tried, 'attempt')} "
                                           "ended)", None)
        return Verdict("insufficient", f"not enough evidence: {nearest.missing()}", None)
    as_declared = None
    stated = declared_level(declared, candidates[0].latency_s)  # at the lowest clean level's (unqueued) latency
    if stated is not None:
        # a 429 one level past the level the declared limit allows (a few, under the bound: a token bucket's burst
        # lets most through for a while) and the headers agree: the limit is there, named with both
        d = math.floor(stated)
        hit = next((r for r in rows if r.level > d and r.rate_limited > 0), None)
        if hit is not None and abs(hit.level - 1 - d) <= 1 and any(r.level < hit.level for r in candidates):
            as_declared = hit
            candidates = [r for r in candidates if r.level < hit.level]
    top = max(r.goodput or 0.0 for r in candidates)
    # the lowest clean level as good as the best: within FLAT of it, or the level just below that one when its
    # goodput interval reaches the best's goodput (20 answers cannot tell 17/s from 19/s: a serial server is not
    # 'still rising' on that). Never further down on an interval alone: a level held briefly three below a rate
    # limit has an interval that reaches the limit's goodput too, and naming it would be a guess
    best = min((r for r in candidates if (r.goodput or 0.0) >= top * (1 - FLAT)), key=lambda r: r.level)
    below = next((r for r in candidates if r.level == best.level - 1), None)
    if below is not None and _reaches(below, top):
        best = below
    # ...or further down when, besides its interval, latency says so: every clean level above it took longer in
    # proportion to the level (Little's law: goodput flat; a queue at the server). A queued server never idles
    # between calls, so a higher level gains a few percent (the client's gap between one answer and the next call):
    # 19.1/s at 1 and 20.4/s at 8, p50 52 and 382 ms, read 'still rising at 8: try higher'
    floor = next((r for r in candidates if r.level < best.level and _reaches(r, top) and r.latency_s is not None
                  and all(_queued_at(q, r.latency_s, r.level) for q in candidates if q.level > r.level)), None)
    if floor is not None:
        best = floor
    n = best.level
    bad_above = [r for r in rows if r.level > n and erred(r) and (as_declared is None or r.level < as_declared.level)]
    clean_above = [r for r in candidates if r.level > n]
    parts = []
    if clean_above:
        # 'lower' only when the interval says so: a level whose goodput interval reaches the best's is as good
        flat = all((r.goodput or 0.0) >= (best.goodput or 0.0) * (1 - FLAT) or not _below(r, best)
                   for r in clean_above)
        lat = best.latency_s
        queued = flat and lat is not None and all(_queued_at(r, lat, n) for r in clean_above)
        if queued and n > 1 and not any(r.level < n for r in measured):
            # latency ∝ level above n, and nothing below n measured: n may be queued as well (a server serving one at
            # a time queues at 16 and at 32 alike); only a level below it can say where the queue starts
            far = max(clean_above, key=lambda r: r.level)
            return Verdict("insufficient", f"not enough evidence: the server queues above {n} (p50 "
                                           f"{far.p50_ms or 0.0:,.0f} ms at {far.level} against "
                                           f"{best.p50_ms or 0.0:,.0f} ms at {n}, goodput flat), and no level below "
                                           f"{n} was measured to say whether it queues at {n} too", None)
        parts.append(f"the server queues above {n}" if queued else f"goodput {'flat' if flat else 'lower'} above {n}")
    if bad_above:
        m = bad_above[0]
        parts.append(f"{what(m)} from {m.level}")
    elif as_declared is not None and declared is not None and declared.requests_limit is not None:
        parts.append(f"429s from {as_declared.level}, as declared ({declared.requests_limit:,} requests/min, "
                     f"≈ {stated:.1f} at once)")
    if shared and not bad_above:
        # an uncapped model's level is the share of the global slots it was given: goodput flat (or still rising)
        # above it with no 429 nor error says the pool held it back, not the provider
        top_level = max(r.level for r in candidates)
        return Verdict("bounded", f"bounded by its share of the global concurrency (up to {top_level} at once), not "
                                  "by the provider", None)
    if parts:
        return Verdict("optimum", f"optimum ≈ {n}: " + ", ".join(parts), n)
    if cap is not None and n == cap:
        return Verdict("capped", f"capped at {n} by max_concurrency", n)
    if not any(r.level < n for r in candidates):
        # one level measured and nothing above it: no comparison of goodputs says whether it grows with the level
        lat = best.latency_s
        glanced = [r for r in rows if r.level > n and r.latencies >= QUEUE_GLANCE and not r.attempts - r.answered]
        # at 1 only: one call in flight waits behind none of ours, so its latency is the server's own; a higher level
        # measured alone may be queued itself (16 measured at 6.4 s, 32 glanced at 12.5 s, on a server serving one
        # answer in 0.45 s: 'optimum ≈ 16' would have been wrong by fifteen levels)
        if n == 1 and lat is not None and glanced and all(_queued_at(r, lat, n) for r in glanced):
            # ...but latency does: calls above it, every one answered, each took longer in proportion to the level.
            # With the level's calls in flight, goodput = level / latency (Little's law): flat, a queue at the server
            far = max(glanced, key=lambda r: r.level)
            return Verdict("optimum", f"optimum ≈ {n}: the server queues above {n} (p50 {far.p50_ms or 0.0:,.0f} ms "
                                      f"at {far.level} against {best.p50_ms or 0.0:,.0f} ms at {n})", n)
        refused_above = [r for r in rows if r.level > n and r.rate_limited]
        met = [f"{r.level} met {plural(r.rate_limited, '429')} in {r.attempts}" for r in refused_above]
        seen = f"; {', '.join(met)}, too few to prove a limit" if met else ""
        return Verdict("insufficient", f"not enough evidence: only level {n} measured ({best.goodput or 0.0:.3g}/s, "
                                       f"p50 {best.p50_ms or 0.0:,.0f} ms){seen}; another level measured would say "
                                       "whether goodput still grows with the level", None)
    return Verdict("rising", f"still rising at {n}: try higher", n)

"""The evidence model and the one verdict, on hand-made level tables (issue 19)."""

from __future__ import annotations

import pytest

from arenatui.present.level_figures import goodput_text, limited_text
from arenatui.tuning.evidence import (
    MIN_ANSWERED,
    LevelEvidence,
    poisson_interval,
    verdict,
    wilson_interval,
)
from arenatui.tuning.levels import readouts_from_rows, stored_evidence


def lv(level: int, answered: int, held_s: float = 10.0, *, limited: int = 0, transient: int = 0,
       p50_ms: float | None = 500.0, attempts: int | None = None) -> LevelEvidence:
    n = attempts if attempts is not None else answered + limited + transient
    return LevelEvidence(level, held_s, answered, n, limited, transient, limited + transient, 0, answered,
                         p50_ms if answered else None, (p50_ms or 0) * 1.5 if answered else None)


def test_intervals_match_their_textbook_values() -> None:
    lo, hi = poisson_interval(20)
    assert lo == pytest.approx(12.22, abs=0.05) and hi == pytest.approx(30.89, abs=0.1)  # exact: 12.22, 30.89
    assert poisson_interval(0) == (0.0, pytest.approx(3.69, abs=0.05))
    w = wilson_interval(18, 21)
    assert w is not None and w[0] == pytest.approx(0.654, abs=0.01) and w[1] == pytest.approx(0.950, abs=0.01)
    assert wilson_interval(0, 0) is None


def test_zero_answered_is_no_verdict_and_no_figure() -> None:
    # the mock server stopped: every call refused at the socket (transient), nothing answered
    rows = [lv(2, 0, 3.0, transient=40), lv(3, 0, 3.0, transient=40)]
    v = verdict(rows)
    assert v.kind == "insufficient" and v.optimum is None and v.level is None
    assert v.text.startswith("not enough evidence:")
    assert verdict([]).text == "not enough evidence: no level held yet"


def test_one_call_in_no_time_is_a_dash_never_a_rate() -> None:
    r = lv(64, 1, 0.0, p50_ms=0.4)
    assert r.goodput is None and r.goodput_interval is None and r.retries_per_s is None
    assert goodput_text(r) == "–"
    v = verdict([r, lv(8, 1, 0.001)])
    assert v.kind == "insufficient" and v.optimum is None
    assert "1 of 20 answered" in v.text


def test_86_percent_429s_at_the_best_level_is_never_an_optimum() -> None:
    # sim-tight from the issue: 3 answered, 18 of 21 attempts refused, 1.2 s held at 7; the truth is ~1.5
    rows = [lv(7, 3, 1.2, limited=18)]
    v = verdict(rows)
    assert v.optimum is None
    assert v.text == "not enough evidence: 429s from 7, no level below it measured clean"
    assert limited_text(rows[0]).startswith("86% (")
    # with level 1 measured clean below it, the optimum is 1 and the 429s are named
    v = verdict([lv(1, 40, 20.0), lv(7, 3, 1.2, limited=18)])
    assert (v.kind, v.optimum, v.text) == ("optimum", 1, "optimum ≈ 1: 429s from 7")


def test_a_ceiling_with_all_429s_one_above_is_the_optimum_not_still_rising() -> None:
    rows = [lv(2, 40, 2.0), lv(4, 80, 2.0), lv(8, 160, 2.0), lv(9, 0, 1.0, limited=30, p50_ms=None)]
    v = verdict(rows)
    assert (v.kind, v.optimum, v.text) == ("optimum", 8, "optimum ≈ 8: 429s from 9")


def test_still_rising_only_when_nothing_above_was_measured_and_capped_when_a_cap_stopped_it() -> None:
    rows = [lv(2, 40, 2.0), lv(4, 80, 2.0), lv(8, 5, 0.1)]  # 8 glanced at, not measured
    assert verdict(rows).text == "still rising at 4: try higher"
    assert verdict(rows).optimum is None and verdict(rows).level == 4
    v = verdict(rows[:2], cap=4)
    assert (v.kind, v.text, v.optimum) == ("capped", "capped at 4 by max_concurrency", None)


def test_a_serial_server_is_flat_from_one() -> None:
    # the same goodput at every level, latency growing with the queue
    rows = [lv(1, 100, 10.0, p50_ms=100.0), lv(2, 101, 10.0, p50_ms=200.0), lv(4, 99, 10.0, p50_ms=400.0),
            lv(8, 100, 10.0, p50_ms=800.0)]
    v = verdict(rows)
    assert (v.optimum, v.text) == (1, "optimum ≈ 1: the server queues above 1")
    # goodput flat but latency not growing with the level: no queue is named (a rate limit, say)
    flat = [lv(1, 100, 10.0, p50_ms=100.0), lv(2, 101, 10.0, p50_ms=110.0), lv(4, 99, 10.0, p50_ms=400.0)]
    assert verdict(flat).text == "optimum ≈ 1: goodput flat above 1"

    # a stall at 4 (a busy machine) measured there: 'lower' once its interval no longer reaches the best's, and a
    # small dip whose interval still reaches it stays flat (there: latency ∝ level, so a queue)
    # the CI run that taught this test
    stalled = [lv(1, 20, 0.71, p50_ms=37.0), lv(2, 20, 0.70, p50_ms=72.0), lv(4, 20, 1.89, p50_ms=137.0)]
    assert verdict(stalled).text == "optimum ≈ 1: goodput lower above 1"
    dip = [lv(1, 20, 0.71, p50_ms=37.0), lv(2, 20, 0.70, p50_ms=72.0), lv(4, 20, 0.85, p50_ms=137.0)]
    assert verdict(dip).text == "optimum ≈ 1: the server queues above 1"


def test_429s_at_every_level_including_one_is_a_rate_limit() -> None:
    # a gateway at 4 requests a minute: level 1 and 2 mostly refused
    rows = [lv(1, 2, 30.0, limited=60), lv(2, 2, 30.0, limited=90)]
    v = verdict(rows)
    assert v.kind == "rate" and v.optimum is None and v.level == 1
    assert v.text == ("limited by requests per minute (~4/min measured): concurrency will not help; lower the rate "
                      "or raise the quota")


def test_the_optimum_is_below_the_first_refused_level_whatever_is_clean_above_it() -> None:
    # 'optimum ≈ 6: 429s from 5' contradicted itself: the optimum must be below the first level with 429s
    rows = [lv(3, 60, 3.0), lv(5, 50, 2.0, limited=30), lv(6, 130, 2.0)]
    v = verdict(rows)
    assert (v.optimum, v.text) == (3, "optimum ≈ 3: 429s from 5")


def test_transient_errors_from_a_level_are_named() -> None:
    # llama.cpp cutting a stream when a second request arrives: 83% transient errors at 3
    rows = [lv(1, 40, 20.0), lv(2, 30, 10.0, transient=20), lv(3, 5, 5.0, transient=25)]
    assert verdict(rows).text == "optimum ≈ 1: errors from 2"


def test_measured_needs_the_stated_minimums() -> None:
    assert not lv(4, MIN_ANSWERED - 1, 10.0).measured
    assert lv(4, MIN_ANSWERED, 10.0).measured
    assert not lv(4, 50, 0.9, p50_ms=500.0).measured  # 0.9 s held is under 2 latencies of 0.5 s
    assert "held 0.9 of 1.0 s" in lv(4, 50, 0.9).missing()


def test_stored_rows_are_re_derived_and_old_ones_estimated() -> None:
    # a row stored before schema 14: no counts, its old verdict claimed an optimum from 0 answered
    old = ("m", 2, 3.0, 0, 0.0, 0.0, 1.0, 0.0, 30, None, None, 1, 1, "optimum ≈ 2: goodput flat above 2")
    key, ev, cap = stored_evidence(old)
    assert (key, ev.answered, ev.attempts, cap) == ("m", 0, 0, None)
    (ro,) = readouts_from_rows([old])
    assert ro.verdict.optimum is None
    # an old row with answers: attempts from the shares (answered / (1 - 20% 429s) = 50)
    key, ev, _ = stored_evidence(("m", 4, 10.0, 40, 4.0, 0.2, 0.0, 1.0, 0, 500.0, 700.0, 1, 1, "x"))
    assert (ev.attempts, ev.rate_limited) == (50, 10)
    # a row with its counts: read as stored
    new = ("m", 4, 10.0, 40, 4.0, 0.2, 0.0, 1.0, 0, 500.0, 700.0, 1, 1, "x", 52, 12, 0, 12, 40, 6)
    key, ev, cap = stored_evidence(new)
    assert (ev.attempts, ev.rate_limited, ev.latencies, cap) == (52, 12, 40, 6)


def test_a_level_neither_clean_nor_refused_is_said_so() -> None:
    # 6% 429s over 100 attempts: over the 5% bound, but the interval reaches under it
    v = verdict([lv(4, 94, 10.0, limited=6)])
    assert v.kind == "insufficient"
    assert v.text == "not enough evidence: level 4 had 6% 429s, neither clean (at most 5%) nor clearly past a limit"


def test_an_interval_alone_never_names_a_level_more_than_one_below_the_best() -> None:
    """A level held briefly three below a rate limit (21 answers: its interval is ±45% wide) reaches the limit's
    goodput on its interval alone; naming it would be a guess. The level just below the best is named on that."""
    rows = [lv(8, 21, 0.058, p50_ms=22.0), lv(11, 274, 0.548, p50_ms=22.0), lv(12, 115, 0.23, p50_ms=22.0),
            lv(13, 133, 0.266, limited=12, p50_ms=22.0)]  # 8: 362/s; 11, 12, 13: 500/s (a limit of 500/s)
    v = verdict(rows)
    assert v.kind == "optimum" and v.level == 11, v.text
    rows.append(lv(10, 40, 0.088, p50_ms=22.0))  # 455/s, 9% below: its interval reaches 500/s, and it is one below
    assert verdict(rows).level == 10


def test_the_optimum_is_below_a_level_measured_past_the_bound_even_when_one_above_it_is_under_it() -> None:
    # a gateway slow to refuse (slow429, 500/s at ~21 ms: 11 in flight): 12 measured with 5.2% 429s, not refused by
    # its interval; 13 just under the bound with a goodput 6% above 11's by chance. 13 is no optimum: 12 erred
    rows = [lv(11, 500, 1.0, limited=3, p50_ms=21.0), lv(12, 110, 0.22, limited=6, p50_ms=21.0),
            lv(13, 200, 0.377, limited=9, p50_ms=21.0), lv(14, 20, 0.05, limited=12, p50_ms=21.0)]
    iv = rows[1].limited_interval
    assert rows[1].measured and (rows[1].limited_share or 0) > 0.05 and iv is not None and iv[0] <= 0.05
    assert rows[2].measured and (rows[2].limited_share or 1) < 0.05
    assert (rows[2].goodput or 0) > 1.05 * (rows[0].goodput or 0)
    v = verdict(rows)
    assert v.kind == "optimum" and v.level == 11 and v.text == "optimum ≈ 11: 429s from 12"


def test_a_steady_transient_rate_that_does_not_grow_with_the_level_is_not_errors_from_a_level() -> None:
    # sim-flaky: 8% transient failures at every level, unrelated to load; level 1 happened to see 3%, level 2 13%
    # (noise around the same rate)
    rows = [lv(1, 97, transient=3), lv(2, 87, transient=13), lv(3, 184, transient=16)]
    v = verdict(rows)
    assert "errors from" not in v.text, v.text
    # failures that do grow with the level still count against it
    grows = [lv(1, 48, transient=2), lv(2, 96, transient=4), lv(3, 60, transient=40)]
    assert verdict(grows).text == "optimum ≈ 2: errors from 3"


def test_an_uncapped_model_beside_others_is_bounded_by_its_share_of_the_slots_not_the_provider() -> None:
    # sim-large, no limit: flat between 3 and 4 slots of a shared global level (6.41/s, 6.39/s), no 429 anywhere
    rows = [lv(3, 72, 11.2), lv(4, 70, 10.9)]
    assert verdict(rows).kind == "optimum"  # alone (or capped), flat goodput above 3 is the provider's doing
    v = verdict(rows, shared=True)
    assert v.kind == "bounded" and v.optimum is None
    assert v.text.startswith("bounded by its share of the global concurrency (up to 4 at once), not by the provider")
    assert v.line("sim-large").endswith("not by the provider → raise [run] concurrency, or tune it")
    # 429s above a clean level still name the optimum, shared or not
    limited = [lv(2, 40, 5.0), lv(3, 60, 5.0), lv(4, 10, 2.0, limited=20)]
    assert verdict(limited, shared=True).text == "optimum ≈ 3: 429s from 4"


def test_every_verdict_ends_with_the_setting_it_belongs_in() -> None:
    v = verdict([lv(2, 40, 5.0), lv(3, 60, 5.0), lv(4, 10, 2.0, limited=20)])
    assert v.line("sim-limited") == "optimum ≈ 3: 429s from 4 → set max_concurrency = 3 for sim-limited"
    assert v.line() == "optimum ≈ 3: 429s from 4 → set [run] concurrency = 3"  # a level of the whole run
    assert verdict([lv(1, 5)]).line("m") == verdict([lv(1, 5)]).text  # no setting before there is evidence


def test_one_level_measured_alone_is_not_still_rising() -> None:
    """llama-cpp-python's server, serving one answer at a time, on a 60-call budget: the tuner glanced at 8, measured
    13 (2.4/s, p50 5.3 s: a queue) and the budget ended at 1. Nothing compares 13 with another level, so no rise is
    shown: not enough evidence, never 'still rising at 13: try higher'."""
    rows = [lv(8, 6, 2.4, p50_ms=2441.0), lv(13, 39, 16.0, p50_ms=5312.0)]
    v = verdict(rows)
    assert (v.kind, v.level) == ("insufficient", None)
    assert v.text == ("not enough evidence: only level 13 measured (2.44/s, p50 5,312 ms); another level measured "
                      "would say whether goodput still grows with the level")
    # a glance above it that met 429s, too few to prove a limit, is said (never 'try higher')
    v = verdict([lv(5, 240, 1.0, p50_ms=21.0), lv(6, 10, 0.05, limited=2, p50_ms=21.0)])
    assert (v.kind, v.text) == ("insufficient", "not enough evidence: only level 5 measured (240/s, p50 21 ms); 6 met "
                                "2 429s in 12, too few to prove a limit; another level measured would say whether "
                                "goodput still grows with the level")
    # a serial server (5 ms a call): 1 measured, 8 and 16 glanced at, every call answered, latency ∝ level: by
    # Little's law goodput did not grow (a queue), and that is a verdict
    serial = [lv(1, 177, 1.0, p50_ms=5.0), lv(4, 3, 0.02, p50_ms=18.0), lv(8, 8, 0.05, p50_ms=40.0),
              lv(16, 16, 0.1, p50_ms=80.0)]
    v = verdict(serial)
    assert (v.optimum, v.text) == (1, "optimum ≈ 1: the server queues above 1 (p50 80 ms at 16 against 5 ms at 1)")
    # a level above 1 measured alone may be queued itself: llama-cpp-python's server (0.45 s an answer, one at a time)
    # after a ramp 8 → 16 → 32: 16 measured at p50 6.4 s, 32 glanced at 12.5 s. Not 'optimum ≈ 16'
    v = verdict([lv(8, 6, 2.6, p50_ms=2479.0), lv(16, 34, 14.1, p50_ms=6394.0), lv(32, 57, 23.6, p50_ms=12532.0)])
    assert (v.kind, v.optimum) == ("insufficient", None) and v.text.startswith("not enough evidence: only level 16")
    # and measured at 32 too: still nothing says where the queue starts
    v = verdict([lv(16, 34, 14.1, p50_ms=6394.0), lv(32, 75, 30.0, p50_ms=12532.0)])
    assert (v.kind, v.optimum) == ("insufficient", None) and "no level below 16 was measured" in v.text
    # latency that did not grow with the level above is no queue
    assert verdict([*serial[:3], lv(16, 16, 0.1, p50_ms=6.0)]).kind == "insufficient"
    # a level below it measured with less goodput is a rise
    assert verdict([lv(4, 20, 16.0, p50_ms=2000.0), *rows]).text == "still rising at 13: try higher"
    # and one with as much is the optimum, the level above it a queue (latency ∝ level)
    v = verdict([lv(1, 40, 16.0, p50_ms=410.0), *rows])
    assert (v.optimum, v.text) == (1, "optimum ≈ 1: the server queues above 1")


def test_a_declared_limit_confirmed_by_a_429_past_it_names_the_optimum_and_a_lie_is_ignored() -> None:
    from arenatui.kernel.events import DeclaredLimits

    # 100 ms calls; 6,000/min = 100/s → 10 at once. 11 met two 429s in 132 attempts (a bucket's burst passed the
    # rest): too few to prove a limit alone, and its goodput looks higher
    rows = [lv(8, 80, 1.0, p50_ms=100.0), lv(10, 100, 1.0, p50_ms=100.0), lv(11, 130, 1.0, limited=2, p50_ms=100.0)]
    assert verdict(rows).text == "still rising at 11: try higher"
    v = verdict(rows, declared=DeclaredLimits(requests_limit=6000))
    assert (v.optimum, v.text) == (10, "optimum ≈ 10: 429s from 11, as declared (6,000 requests/min, ≈ 10.0 at once)")
    # headers stating 3,000/min (5 at once): the 429 at 11 is far from it, so they say nothing; evidence alone
    assert verdict(rows, declared=DeclaredLimits(requests_limit=3000)).text == "still rising at 11: try higher"
    # a declared limit with no 429 past it is no optimum
    assert verdict(rows[:2], declared=DeclaredLimits(requests_limit=6000)).optimum is None


def test_a_stored_runs_verdict_is_re_derived_with_the_limits_its_provider_declared() -> None:
    from arenatui.kernel.events import VARIANT_SEP, DeclaredLimits
    from arenatui.tuning.levels import readout_of, readout_rows, readouts_from_rows

    rows = [lv(8, 80, 1.0, p50_ms=100.0), lv(10, 100, 1.0, p50_ms=100.0), lv(11, 130, 1.0, limited=2, p50_ms=100.0)]
    lane = f"m{VARIANT_SEP}terse"  # a prompt variant's lane: its model's provider declared the limits
    stored = readout_rows({lane: readout_of(lane, rows)})
    (plain,) = readouts_from_rows(stored)
    (said,) = readouts_from_rows(stored, {"m": DeclaredLimits(requests_limit=6000)})
    assert plain.verdict.text == "still rising at 11: try higher"
    assert said.verdict.optimum == 10 and "as declared" in said.verdict.text and said.declared is not None


def test_a_queued_server_a_few_percent_faster_above_is_no_rise() -> None:
    """A server answering one call at a time never idles while calls queue, so 8 in flight answered 20.4/s against
    19.1/s at 1 (the client's gap between an answer and the next call), p50 382 against 52 ms: 'still rising at 8:
    try higher' was the verdict. Latency grown in proportion to the level over an interval that reaches the best's
    goodput is a queue."""
    rows = [lv(1, 20, 20 / 19.1, p50_ms=52.0), lv(8, 24, 24 / 20.4, p50_ms=382.0)]
    v = verdict(rows)
    assert (v.optimum, v.text) == (1, "optimum ≈ 1: the server queues above 1")
    # the same goodputs with latency flat above 1 (no queue) are a rise: the interval alone names nothing lower
    flat = [lv(1, 20, 20 / 19.1, p50_ms=52.0), lv(8, 24, 24 / 20.4, p50_ms=60.0)]
    assert verdict(flat).text == "still rising at 8: try higher"

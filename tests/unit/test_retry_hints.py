"""A 429's retry hint beyond Retry-After: LiteLLM's llm_provider-retry-after, OpenAI's x-ratelimit-reset-* durations,
Anthropic's anthropic-ratelimit-*-reset times; which header gave the delay; and the call detail's wording."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenatui.kernel.errors import RateLimited
from arenatui.providers.http import error_for_status, parse_duration, parse_retry_hint

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("text", "seconds"), [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5),
                                               ("1.5", 1.5), ("0s", 0.0), ("250us", 0.00025), (".5s", 0.5)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "1x", "1s2", "-1s", "1 s", "nan", "inf", "1e400s"])
def test_not_durations(text: str) -> None:
    assert parse_duration(text) is None


def test_the_gateways_own_header_is_honoured_without_retry_after() -> None:
    assert parse_retry_hint({"llm_provider-retry-after": "60"}) == (60.0, "llm_provider-retry-after")


def test_standard_headers_come_first() -> None:
    both = {"retry-after-ms": "250", "Retry-After": "3", "llm_provider-retry-after": "60"}
    assert parse_retry_hint(both) == (0.25, "retry-after-ms")
    assert parse_retry_hint({"Retry-After": "3", "llm_provider-retry-after": "60"}) == (3.0, "retry-after")
    # an unreadable Retry-After does not hide a readable hint after it
    assert parse_retry_hint({"Retry-After": "soon", "llm_provider-retry-after": "7"}) == (7.0,
                                                                                         "llm_provider-retry-after")


def test_openai_reset_of_the_limit_that_is_used_up() -> None:
    h = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s",
         "x-ratelimit-remaining-tokens": "4000", "x-ratelimit-reset-tokens": "6m0s"}
    assert parse_retry_hint(h) == (1.0, "x-ratelimit-reset-requests")
    h |= {"x-ratelimit-remaining-requests": "3", "x-ratelimit-remaining-tokens": "0"}
    assert parse_retry_hint(h) == (360.0, "x-ratelimit-reset-tokens")
    # without remaining counts: the longer reset, so a retry does not come back before either limit refills
    assert parse_retry_hint({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "2s"}) == (
        2.0, "x-ratelimit-reset-tokens")


def test_anthropic_reset_times_are_rfc_3339() -> None:
    h = {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "2026-05-01T12:00:30Z",
         "anthropic-ratelimit-tokens-remaining": "100", "anthropic-ratelimit-tokens-reset": "2026-05-01T12:05:00Z"}
    assert parse_retry_hint(h, now=NOW) == (pytest.approx(30.0), "anthropic-ratelimit-requests-reset")
    past = {"anthropic-ratelimit-input-tokens-reset": "2026-05-01T11:59:00+00:00"}
    assert parse_retry_hint(past, now=NOW) == (0.0, "anthropic-ratelimit-input-tokens-reset")
    assert parse_retry_hint({"anthropic-ratelimit-requests-reset": "tomorrow"}, now=NOW) is None


def test_a_429_carries_its_delay_and_source() -> None:
    err = error_for_status(429, {"llm_provider-retry-after": "60"}, b"{}", where="m")
    assert isinstance(err, RateLimited) and err.retry_after == 60.0
    assert err.retry_after_source == "llm_provider-retry-after"
    bare = error_for_status(429, {}, b"{}", where="m")
    assert isinstance(bare, RateLimited) and bare.retry_after is None and bare.retry_after_source is None


@given(st.dictionaries(st.sampled_from(["retry-after", "llm_provider-retry-after", "x-ratelimit-reset-tokens",
                                        "x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-reset",
                                        "retry-after-ms"]), st.text(max_size=30)))
def test_never_raises_and_never_negative(headers: dict[str, str]) -> None:
    hint = parse_retry_hint(headers, now=NOW)
    assert hint is None or (hint[0] >= 0.0 and hint[1] in {k.lower() for k in headers})


def test_the_call_detail_names_the_header_and_says_when_a_429_had_no_hint(tmp_path: Path, db_path: Path) -> None:
    from arenatui.session.sweep import Sweep, SweepOptions
    from arenatui.store.queries import FailedAttempt
    from arenatui.tui.screens import CallDetail
    from tests.tui.support import sim_project, stored_call

    sweep = Sweep(SweepOptions(project=sim_project(tmp_path, cases=1), db=db_path))
    row = stored_call(attempts=3, total_ms=900.0, failed_attempts=(
        FailedAttempt(1, "rate_limited", 429, 60.0, 60.0, "slow", "llm_provider-retry-after"),
        FailedAttempt(2, "rate_limited", 429, None, 0.4, "slow", None)))
    text = CallDetail(sweep, 0, 0).render_rows([row]).plain
    assert "asked to wait 60.00s (llm_provider-retry-after), slept 60.00s" in text
    assert "attempt 2 failed: rate_limited (HTTP 429), with no retry hint" in text

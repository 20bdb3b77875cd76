"""Issue 9, scoring items: a scorer's failure is a ScoringError (11), a regex verdict is bounded in time (18),
and sealed case text is scrubbed from error messages (21)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arenatui.config import Case, ScorerConfig
from arenatui.engine.sealed import MIN_RUN, REDACTED, SealedScrubber, scrub_sealed
from arenatui.scoring import Scorer, ScorerSet, ScoringError, ScoringSlow


def _regex(pattern: str, **kw: object) -> Scorer:
    return Scorer(ScorerConfig(name="rx", kind="regex", pattern=pattern, **kw))  # type: ignore[arg-type]


def test_pattern_invalid_once_expected_is_filled_in_raises_a_scoring_error_for_that_case_only() -> None:
    s = _regex("^[a-{expected}]$")
    assert s.score("c", Case(id="ok", input="q", expected="z")).passed
    with pytest.raises(ScoringError, match=r"scorer 'rx'.*not a valid regular expression"):
        s.score("c", Case(id="bad", input="q", expected="0"))
    assert s.score("c", Case(id="ok2", input="q", expected="y")).passed  # the scorer still works after


def test_expected_text_is_filled_in_literally() -> None:
    s = _regex(r"answer: {expected}\b")
    assert s.score("the answer: 3.5 (sure)", Case(id="c", input="q", expected="3.5")).passed
    assert not s.score("the answer: 3x5", Case(id="c", input="q", expected="3.5")).passed  # '.' is not a wildcard
    assert s.score("Answer: (a+b)", Case(id="c", input="q", expected="(a+b)")).passed is False  # \b after ')'
    assert _regex("{expected}").score("x (a+b) y", Case(id="c", input="q", expected="(a+b)")).passed


def test_catastrophic_backtracking_is_cut_off_with_scoring_slow() -> None:
    s = _regex("(L+)+X")
    with pytest.raises(ScoringSlow, match=r"no verdict within 0.05s on an output of 5,000 characters"):
        s.score("L" * 5000, Case(id="c", input="q", expected=None), timeout_s=0.05)
    assert issubclass(ScoringSlow, ScoringError)
    assert s.score("LLX", Case(id="c", input="q", expected=None), timeout_s=0.05).passed


def test_a_pattern_the_regex_library_rejects_is_a_per_call_error_not_a_crash() -> None:
    # the config check compiles with `re`; should the two ever disagree, no Runner may fail to start: a scorer
    # built from a pattern `regex` rejects (the config check bypassed) gives each call a scoring error instead
    s = _regex("(unclosed")
    with pytest.raises(ScoringError, match=r"scorer 'rx': its pattern is not a valid regular expression"):
        s.score("b", Case(id="c", input="q"))


def test_scorer_set_passes_the_time_bound_on() -> None:
    ss = ScorerSet((ScorerConfig(name="rx", kind="regex", pattern="(L+)+X"),))
    with pytest.raises(ScoringSlow):
        ss.score("L" * 5000, Case(id="c", input="q"), 0.02)


# ---- sealed text in error messages ---------------------------------------------------------------------

PROMPT = "Name the capital of the fictional republic of Vandoria.\nThink \"carefully\"."
EXPECTED = "Port Ellisande"
SEALED = Case(id="s", input=PROMPT, expected=EXPECTED, sealed=True)


def _no_run_of(texts: list[str], msg: str) -> None:
    for t in texts:
        for i in range(len(t) - MIN_RUN + 1):
            assert t[i:i + MIN_RUN] not in msg, (t[i:i + MIN_RUN], msg)


@pytest.mark.parametrize("echo", [
    PROMPT,
    json.dumps(PROMPT),  # quoted in a JSON error body
    json.dumps({"messages": [{"content": PROMPT}]}, ensure_ascii=True),
    PROMPT[5:40],  # cut
    PROMPT[20:] + " / " + PROMPT[:20],  # pieces
])
def test_echoes_of_a_sealed_prompt_are_removed(echo: str) -> None:
    msg = f"HTTP 400: invalid request {echo} (see docs)"
    out = SealedScrubber(SEALED).scrub(msg)
    assert out.startswith("HTTP 400: invalid request") and out.endswith("(see docs)")  # runs may take a space
    assert REDACTED in out
    _no_run_of([PROMPT, json.dumps(PROMPT)[1:-1]], out)


def test_expected_text_is_removed_wherever_it_occurs_short_answers_too() -> None:
    out = SealedScrubber(SEALED).scrub("rejected: output 'Port Ellisande' vs Port Ellisande!")
    assert EXPECTED not in out and out.count(REDACTED) == 2
    short = Case(id="s", input="q", expected="Oslo", sealed=True)
    assert "Oslo" not in SealedScrubber(short).scrub("wanted Oslo")
    tiny = Case(id="s", input="q", expected="B", sealed=True)
    assert SealedScrubber(tiny).scrub("HTTP 502 Bad Gateway") == "HTTP 502 Bad Gateway"  # 'B' cannot be hidden


def test_chat_message_inputs_are_covered_and_open_cases_untouched() -> None:
    chat = Case(id="s", input=({"role": "system", "content": "You grade essays strictly."},
                               {"role": "user", "content": "Essay: the moon is made of basalt."}), sealed=True)
    out = SealedScrubber(chat).scrub("echo: Essay: the moon is made of basalt. | You grade essays strictly.")
    assert "basalt" not in out and "strictly" not in out
    open_case = Case(id="o", input=PROMPT, expected=EXPECTED)
    assert scrub_sealed(open_case, f"x {PROMPT}") == f"x {PROMPT}"
    assert scrub_sealed(SEALED, None) is None
    assert scrub_sealed(SEALED, "HTTP 429: slow down") == "HTTP 429: slow down"


def _segments(out: str) -> list[str]:
    return out.split(REDACTED)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="abcde \n\"", min_size=0, max_size=300), cuts=st.lists(
    st.tuples(st.integers(0, 300), st.integers(0, 60)), max_size=6), junk=st.text(alphabet="xyz0", max_size=20))
def test_no_run_of_case_text_survives_anywhere(text: str, cuts: list[tuple[int, int]], junk: str) -> None:
    case = Case(id="s", input=text, expected=None, sealed=True)
    msg = junk + "".join(text[a:a + n] + junk for a, n in cuts) + json.dumps(text)
    out = SealedScrubber(case).scrub(msg)
    for seg in _segments(out):
        for form in (text, json.dumps(text)[1:-1]):
            for i in range(len(seg) - MIN_RUN + 1):
                assert seg[i:i + MIN_RUN] not in form


def test_a_long_sealed_document_is_indexed_sparsely_and_scrubbed() -> None:
    import random

    rnd = random.Random(5)
    doc = " ".join("".join(rnd.choice("abcdefghij") for _ in range(rnd.randint(2, 9))) for _ in range(40_000))
    case = Case(id="s", input=doc, expected="the answer", sealed=True)
    scrubber = SealedScrubber(case)
    assert len(scrubber._anchors) < len(doc) // 2  # not one entry per position per form
    msg = f"HTTP 413: body too large: {doc[123_456:125_000]!r} (limit 1 MB)"
    out = scrubber.scrub(msg)
    assert out.startswith("HTTP 413: body too large: ") and out.endswith(" (limit 1 MB)") and REDACTED in out
    for seg in _segments(out):
        for i in range(len(seg) - MIN_RUN + 1):
            assert seg[i:i + MIN_RUN] not in doc

"""Failure modes on real-looking outputs: refusals in several phrasings, truncation, format, language."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arenatui.scoring.failure_modes import FAILURE_MODES, classify, detect_language, looks_like_refusal

REFUSALS = [
    "I'm sorry, but I can't help with that.",
    "I cannot assist with this request.",
    "I’m sorry, I won’t be able to provide that information.",
    "As an AI language model, I cannot provide medical diagnoses.",
    "Sorry, but I must decline to answer.",
    "I must respectfully decline.",
    "Unfortunately, I am unable to comply with that request.",
    "I'm not able to help with creating that content.",
    "I apologize, but I cannot answer that. I can't provide instructions of this kind.",
]
ANSWERS = [
    "Paris.",
    "The answer is B because the other options contradict the premise.",
    "I can't be sure without more data, but the most likely answer is 42, since the series doubles each step "
    "and the last term shown is 21, so the next term follows directly from the rule stated in the question. " * 3,
    "Sorry for the delay! Here is the JSON: {\"a\": 1}",  # apology that is not a refusal... but says 'Sorry for'
    "Canada's capital is Ottawa; I cannot stress enough how often people answer Toronto.",
]


@pytest.mark.parametrize("text", REFUSALS)
def test_refusals_in_several_phrasings_are_refusals(text: str) -> None:
    assert looks_like_refusal(text)
    assert classify(passed=False, output=text) == "refusal"


@pytest.mark.parametrize("text", ANSWERS)
def test_answers_that_decline_nothing_are_not_refusals(text: str) -> None:
    assert not looks_like_refusal(text)


def test_order_of_rules_errors_first_then_pass_empty_truncated_refusal_format_language() -> None:
    assert classify(passed=False, output=None, error_class="timeout") == "timeout"
    assert classify(passed=True, output="I'm sorry, but no.") == "none"
    assert classify(passed=False, output="  \n") == "empty"
    # a fenced block cut at the token limit: truncated, not invalid JSON
    assert classify(passed=False, output='```json\n{"a": [1, 2,', finish_reason="length", invalid_format=True) \
        == "truncated"
    assert classify(passed=False, output="I can't help with that.", invalid_format=True) == "refusal"
    assert classify(passed=False, output='Here you go: {"a": 1', invalid_format=True) == "invalid_format"
    assert classify(passed=False, output="The capital of France is Paris, and it is on the Seine.",
                    language="fr") == "wrong_language"
    assert classify(passed=False, output="La capitale de la France est Paris, sur la Seine.", language="fr") \
        == "wrong_answer"
    assert classify(passed=False, output="Lyon") == "wrong_answer"


def test_language_detection_by_script_and_function_words() -> None:
    assert detect_language("Die Hauptstadt von Deutschland ist Berlin und sie ist sehr groß.") == "de"
    assert detect_language("La capital de España es Madrid y es una ciudad muy grande.") == "es"
    assert detect_language("Столица России — Москва, крупнейший город страны.") == "ru"
    assert detect_language("東京は日本の首都です。とても大きな都市です。") == "ja"
    assert detect_language("北京是中国的首都，也是一个历史悠久的城市。") == "zh"
    assert detect_language("Ok") is None  # too short to tell: never called wrong
    assert classify(passed=False, output="42", language="fr") == "wrong_answer"


def test_every_mode_is_listed_once() -> None:
    assert len(set(FAILURE_MODES)) == len(FAILURE_MODES)
    for mode in ("none", "wrong_answer", "refusal", "invalid_format", "truncated", "empty", "wrong_language",
                 "judge_error", "timeout", "rate_limited", "transient", "terminal"):
        assert mode in FAILURE_MODES


def _refusal_by_patterns_alone(output: str) -> bool:
    """looks_like_refusal without its word filter: the filter must never change a verdict."""
    from arenatui.scoring.failure_modes import _REFUSAL, _REFUSAL_ANYWHERE, SHORT_REFUSAL_CHARS

    head = output.lstrip()[:400]
    if _REFUSAL.search(head):
        return len(output) < SHORT_REFUSAL_CHARS or bool(_REFUSAL_ANYWHERE.search(head))
    return len(output) < SHORT_REFUSAL_CHARS and bool(_REFUSAL_ANYWHERE.search(output))


_OPENERS = ["", "Sorry,", "I'm sorry, but", "Unfortunately,", "As an AI language model,", "Apologies,",
            "I am really sorry.", "Well,", "ı", "İ", "ſorry,"]
_CANTS = ["I can't", "I cannot", "I can not", "I won't", "I will not", "I am unable to", "I'm not able to",
          "I must decline", "I have to decline", "I do not feel comfortable", "I’m not permitted to", "I think",
          "The answer is", "I am not sure", "I must respectfully decline", "as an AI"]
_VERBS = ["help", "answer", "do that", "share", "", "say", "42"]
_TAILS = ["", " with that.", " The answer is 42.", " " + "x" * 300, "\n" + "y " * 200]


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(_OPENERS), st.sampled_from(_CANTS), st.sampled_from(_VERBS), st.sampled_from(_TAILS),
       st.sampled_from([str, str.upper, str.lower, str.title]), st.sampled_from([" ", "  ", "\t", "\n"]))
def test_the_word_filter_never_changes_a_refusal_verdict(opener: str, cant: str, verb: str, tail: str,
                                                        case: object, sep: str) -> None:
    text = case(sep.join(w for w in (opener, cant, verb) if w) + tail)  # type: ignore[operator]
    assert looks_like_refusal(text) == _refusal_by_patterns_alone(text)

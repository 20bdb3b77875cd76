"""The built-in scorers on the outputs models really give."""

from __future__ import annotations

import pytest

from arenatui.config import Case, ScorerConfig
from arenatui.scoring import Scorer, ScorerSet, extract_choice


def score(kind: str, output: str, expected: str | None, **cfg: object) -> bool:
    s = Scorer(ScorerConfig(name=kind, kind=kind, **cfg))  # type: ignore[arg-type]
    sc = s.score(output, Case(id="c", input="q", expected=expected))
    assert sc.value == float(sc.passed)
    return sc.passed


@pytest.mark.parametrize(("out", "exp", "ok"), [
    ("Paris", "Paris", True), ("  paris \n", "Paris", True), ("Paris.", "Paris", False), ("Lyon", "Paris", False),
    ("New   York", "new york", True),
])
def test_exact(out: str, exp: str, ok: bool) -> None:
    assert score("exact", out, exp) is ok


def test_exact_case_sensitive_and_no_expectation() -> None:
    assert score("exact", "paris", "Paris", case_sensitive=True) is False
    assert score("exact", "anything", None) is False


@pytest.mark.parametrize(("out", "exp", "ok"), [
    ("The capital is Paris.", "paris", True), ("Lyon", "Paris", False), ("PARIS", "paris", True),
])
def test_contains(out: str, exp: str, ok: bool) -> None:
    assert score("contains", out, exp) is ok


def test_regex_with_expected_is_escaped() -> None:
    pat = r"^\s*answer:\s*{expected}\s*$"
    assert score("regex", "Answer: 3.5", "3.5", pattern=pat) is True
    assert score("regex", "Answer: 3x5", "3.5", pattern=pat) is False  # '.' in expected is literal
    assert score("regex", "ANSWER: 3.5", "3.5", pattern=pat, case_sensitive=True) is False
    assert score("regex", "it is 42", None, pattern=r"\d+") is True
    assert score("regex", "it is none", None, pattern=r"\d+") is False


@pytest.mark.parametrize(("out", "label"), [
    ("B", "B"), ("(C)", "C"), ("Answer: D", "D"), ("The answer is (A).", "A"), ("B.", "B"),
    ("it is a trick question", None), ("I think A, but the answer is C", "C"), ("no idea", None),
    ("Because of this", None),
])
def test_choice_extraction(out: str, label: str | None) -> None:
    got = extract_choice(out, ("A", "B", "C", "D"))
    assert (got.upper() if got else None) == label


def test_choice_scorer() -> None:
    assert score("choice", "Answer: C", "C") is True
    assert score("choice", "Answer: B", "C") is False
    assert score("choice", "(C) because", "C") is True


@pytest.mark.parametrize(("out", "exp", "tol", "ok"), [
    ("42", "42", 1e-6, True), ("The answer is 1,234.", "1234", 1e-6, True), ("3.14159", "3.14", 0.01, True),
    ("3.2", "3.14", 0.01, False), ("-7", "-7.0", 1e-6, True), ("seven", "7", 1e-6, False),
    ("first 3 then 5", "5", 1e-6, True),
])
def test_numeric(out: str, exp: str, tol: float, ok: bool) -> None:
    assert score("numeric", out, exp, tolerance=tol) is ok


@pytest.mark.parametrize(("out", "ok"), [('{"a": 1}', True), ("[1, 2]", True), ("{'a': 1}", False),
                                         ("not json {", False), ("", False)])
def test_json_valid(out: str, ok: bool) -> None:
    assert score("json_valid", out, None) is ok


def test_scorer_set_uses_the_case_scorer_else_the_first() -> None:
    ss = ScorerSet((ScorerConfig("exact", "exact"), ScorerConfig("num", "numeric", tolerance=0.5)))
    assert ss.score("41.8", Case(id="a", input="q", expected="42", scorer="num")).passed is True
    assert ss.score("41.8", Case(id="b", input="q", expected="42")).passed is False

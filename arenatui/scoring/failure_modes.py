"""What a wrong answer looked like: one failure mode per stored result, beside its score.

An aggregate score averages outcomes that are not equivalent ("0.78, mostly refusals" and "0.78, mostly
invalid JSON" call for different fixes), so every result is put in exactly one mode. The rules, in the
order they are tried (the first that applies wins):

1. The call never answered: its error class (``timeout``, ``rate_limited``, ``transient``, ``terminal``,
   ``cancelled``, ``solver_error``, ``unreachable``: a chained case whose parent did not pass), or
   ``scoring_error`` / ``judge_error`` when the answer could not be scored.
2. It passed: ``none``.
3. ``cut_while_reasoning``: no answer, stopped at the token limit (finish reason ``length``): a reasoning model
   spent the whole limit thinking (the limit must cover reasoning and answer).
   ``empty``: no answer (nothing but white space) although the model said it had finished. An answer is only
   ever empty with a real finish reason: a stream with none is ``incomplete_stream``, never an answer.
4. ``truncated``: the provider stopped it at the token limit (finish reason ``length``/``max_tokens``);
   a cut answer is a budget problem before it is a knowledge problem.
5. ``refusal``: the answer opens by declining (several phrasings; see ``_REFUSAL``), or is short and
   declines anywhere. A refusal that goes on to answer at length is judged on its answer.
6. ``invalid_format``: the scorer could not read an answer at all (JSON that does not parse or validate,
   a choice outside the options, no number where one was expected).
   ``tests_not_run``: a code_exec answer ended (``sys.exit``, ``os._exit``) before its tests ran to the end; its
   scorer knows this, not its text, so it says so itself.
7. ``wrong_language``: the case names a ``language`` and the answer is plainly in another one.
8. ``wrong_answer``: everything else.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final, Literal

FailureMode = Literal[
    "none", "wrong_answer", "refusal", "invalid_format", "tests_not_run", "truncated", "cut_while_reasoning",
    "empty", "wrong_language", "judge_error", "scoring_error", "solver_error", "unreachable", "timeout",
    "rate_limited", "transient", "incomplete_stream", "terminal", "cancelled",
]
FAILURE_MODES: Final[tuple[str, ...]] = (
    "none", "wrong_answer", "refusal", "invalid_format", "tests_not_run", "truncated", "cut_while_reasoning",
    "empty", "wrong_language", "judge_error", "scoring_error", "solver_error", "unreachable", "timeout",
    "rate_limited", "transient", "incomplete_stream", "terminal", "cancelled",
)
"""Every mode, in the order reports list them."""

TRUNCATED_FINISH: Final[frozenset[str]] = frozenset({"length", "max_tokens", "model_length", "answer_cap"})

_SORRY = r"(?:i['’]?m|i am)\s+(?:really\s+|very\s+|so\s+)?sorry"
_CANT = (r"(?:i\s+(?:can(?:no|['’])?t|cannot|won['’]?t|will\s+not|am\s+(?:not\s+able|unable)|"
         r"must\s+(?:decline|refuse)|have\s+to\s+decline|do\s+not\s+feel\s+comfortable|"
         r"don['’]?t\s+feel\s+comfortable|am\s+not\s+(?:allowed|permitted))"
         r"|i['’]m\s+(?:not\s+able|unable|not\s+(?:allowed|permitted)))")
_REFUSAL: Final[re.Pattern[str]] = re.compile(
    rf"^\W*(?:{_SORRY}\W*(?:,|but|\.)?|unfortunately,?|as\s+an?\s+(?:ai|language\s+model|assistant)[^.,]*,?)?\s*"
    rf"(?:but\s+)?{_CANT}\b"
    rf"|^\W*{_SORRY}\W*(?:,\s*)?but\b"
    r"|^\W*(?:i\s+)?(?:must|have\s+to)\s+(?:respectfully\s+)?decline\b"
    r"|^\W*(?:sorry|apologies),?\s+(?:but\s+)?(?:i|that)\b"
    r"|^\W*as\s+an?\s+(?:ai|language\s+model)\b",
    re.IGNORECASE,
)
_REFUSAL_ANYWHERE: Final[re.Pattern[str]] = re.compile(
    rf"{_CANT}\s+(?:help|assist|provide|comply|answer|do\s+that|fulfil+|support|create|share|generate)\b",
    re.IGNORECASE,
)
SHORT_REFUSAL_CHARS: Final = 300
"""A declining sentence anywhere in an answer shorter than this makes the answer a refusal."""


_REFUSAL_WORDS: Final = ("can", "won", "will", "able", "decline", "refuse", "allowed", "permitted", "sorry",
                         "apolog", "ai", "language")
"""A word (lower case) every match of `_REFUSAL` or `_REFUSAL_ANYWHERE` contains: an ASCII answer with none of
them is no refusal, decided without the patterns (they cost ≈ 6 µs on a short answer, a twentieth of the engine's
whole cost per call at zero latency; benchmarks/engine_overhead.py)."""
_REFUSAL_WORD: Final = re.compile("|".join(_REFUSAL_WORDS))
"""Any of them, in one search (a loop over the twelve cost a fifth more)."""


def looks_like_refusal(output: str) -> bool:
    """True when the answer declines instead of answering (English phrasings; see the module docstring)."""
    head = output.lstrip()[:400]
    seen = output if len(output) < SHORT_REFUSAL_CHARS else head  # all the text either pattern is run on
    if seen.isascii() and _REFUSAL_WORD.search(seen.lower()) is None:
        return False  # ASCII: IGNORECASE is exactly lower(); others (İ, ı, ſ, K fold into ASCII) take the patterns
    if _REFUSAL.match(head):  # every alternative starts at ^
        # A polite opening that then answers at length ("I can't be certain, but the answer is 42 because...")
        # is an answer: only short ones, or ones that say what they will not do, count.
        return len(output) < SHORT_REFUSAL_CHARS or bool(_REFUSAL_ANYWHERE.search(head))
    return len(output) < SHORT_REFUSAL_CHARS and bool(_REFUSAL_ANYWHERE.search(output))


# --- language ------------------------------------------------------------------------------------------
# Script first (cheap and reliable), then function words for the Latin-script languages people evaluate
# most. An answer too short or too mixed to tell is never called wrong.

_SCRIPTS: Final[dict[str, str]] = {
    "LATIN": "latin", "CYRILLIC": "cyrillic", "GREEK": "greek", "ARABIC": "arabic", "HEBREW": "hebrew",
    "DEVANAGARI": "devanagari", "HANGUL": "hangul", "HIRAGANA": "kana", "KATAKANA": "kana", "CJK": "han",
    "THAI": "thai",
}
_LANG_SCRIPT: Final[dict[str, str]] = {
    "en": "latin", "fr": "latin", "de": "latin", "es": "latin", "it": "latin", "pt": "latin", "nl": "latin",
    "ru": "cyrillic", "uk": "cyrillic", "el": "greek", "ar": "arabic", "he": "hebrew", "hi": "devanagari",
    "ko": "hangul", "ja": "kana", "zh": "han", "th": "thai",
}
_STOPWORDS: Final[dict[str, frozenset[str]]] = {  # word lists read best as one string each
    "en": frozenset("the and is are of to in that it with for was this not you be on have".split()),  # noqa: SIM905
    "fr": frozenset("le la les et est des une un du que qui dans pour pas sur avec ce il elle sont".split()),  # noqa: SIM905
    "de": frozenset("der die das und ist nicht ein eine mit den von zu auf sich dem des ich sie es".split()),  # noqa: SIM905
    "es": frozenset("el la los las y es de que en un una por con para no se del al como está".split()),  # noqa: SIM905
    "it": frozenset("il lo la gli le e è di che un una per con non del della sono nel alla".split()),  # noqa: SIM905
    "pt": frozenset("o a os as e é de que um uma para com não do da em no na são".split()),  # noqa: SIM905
    "nl": frozenset("de het een en is van dat niet op te zijn met voor die er ik".split()),  # noqa: SIM905
}
LANGUAGES: Final[tuple[str, ...]] = tuple(sorted(_LANG_SCRIPT))
"""Language codes a case's ``language`` may name (ISO 639-1)."""


def _script_of(ch: str) -> str | None:
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return None
    first = name.split(" ", 1)[0]
    if first == "CJK":
        return "han"
    return _SCRIPTS.get(first)


def detect_language(text: str) -> str | None:
    """A best guess at the answer's language (a code from LANGUAGES, or a script name), None when unsure."""
    counts: dict[str, int] = {}
    letters = 0
    for ch in text[:4000]:
        if ch.isalpha():
            letters += 1
            s = _script_of(ch)
            if s:
                counts[s] = counts.get(s, 0) + 1
    if letters < 12 or not counts:
        return None
    if counts.get("kana", 0) > 0.05 * letters:
        counts["kana"] += counts.pop("han", 0)  # Japanese writes kanji among its kana
    script, n = max(counts.items(), key=lambda kv: kv[1])
    if n < 0.6 * letters:
        return None
    if script != "latin":
        return {"cyrillic": "ru", "greek": "el", "arabic": "ar", "hebrew": "he", "devanagari": "hi",
                "hangul": "ko", "kana": "ja", "han": "zh", "thai": "th"}.get(script, script)
    words = re.findall(r"[^\W\d_]+", text[:4000].casefold())
    if len(words) < 5:
        return None
    hits = {lang: sum(w in sw for w in words) for lang, sw in _STOPWORDS.items()}
    best = max(hits, key=lambda k: hits[k])
    ranked = sorted(hits.values(), reverse=True)
    if ranked[0] < 2 or ranked[0] < 1.5 * ranked[1]:
        return None
    return best


def is_wrong_language(output: str, language: str) -> bool:
    """True only when the answer is confidently in another language than the case asks for."""
    want = language.casefold().split("-", 1)[0]
    got = detect_language(output)
    if got is None:
        return False
    if want == got:
        return False
    if want in ("ru", "uk") and got in ("ru", "uk"):
        return False  # one script, and the stopword lists do not tell them apart
    want_script = _LANG_SCRIPT.get(want)
    if want_script is None:
        return False  # a language we cannot check is never called wrong
    if want_script != "latin" or _LANG_SCRIPT.get(got, got) != "latin":
        return _LANG_SCRIPT.get(got, got) != want_script
    return want in _STOPWORDS and got != want


def classify(*, passed: bool, output: str | None, finish_reason: str | None = None, error_class: str | None = None,
             invalid_format: bool = False, language: str | None = None) -> str:
    """The failure mode of one result (rules in the module docstring)."""
    if error_class:
        return error_class
    if passed:
        return "none"
    return answer_mode(output, finish_reason, invalid_format, language)


def answer_mode(output: str | None, finish_reason: str | None, invalid_format: bool, language: str | None) -> str:
    """The failure mode of an answer that did not pass (`classify`'s rules after the error and the pass; positional:
    the engine asks it of every wrong answer)."""
    text = output or ""
    if not text.strip():
        return "cut_while_reasoning" if finish_reason in TRUNCATED_FINISH else "empty"
    if finish_reason in TRUNCATED_FINISH:
        return "truncated"
    if looks_like_refusal(text):
        return "refusal"
    if invalid_format:
        return "invalid_format"
    if language and is_wrong_language(text, language):
        return "wrong_language"
    return "wrong_answer"

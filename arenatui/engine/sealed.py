"""Keeping a sealed case's text out of error messages: a provider's error body may echo the prompt back.

A sealed case's input and expected answer are never shown or exported; an error message is both, so
before one is stored, logged or shown it loses every stretch that also appears in the case's texts:
the whole texts wherever they occur, and any run of at least `MIN_RUN` characters shared with them
(an echo that was cut, re-wrapped or JSON-escaped still shares long runs with the original).
"""

from __future__ import annotations

import json

from arenatui.config.schema import Case

MIN_RUN = 12
"""Shared runs this long or longer are removed: long enough that an error's own wording ("invalid request
body") is not mistaken for case text, short enough that no meaningful part of a prompt survives."""
MIN_WHOLE = 3
"""A whole input or expected text this long or longer is removed wherever it occurs, even inside words:
a one- or two-character answer ("B", "42") cannot be hidden without destroying the message."""
REDACTED = "[sealed case text removed]"


class SealedScrubber:
    """Removes one sealed case's texts from messages. Built once per case, on its first error."""

    __slots__ = ("_grams", "_wholes")

    def __init__(self, case: Case) -> None:
        texts = [case.prompt_text()]
        if not isinstance(case.input, str):
            texts.extend(m.get("content", "") for m in case.input)
        if case.expected is not None:
            texts.append(case.expected)
        # the forms an echo takes: as sent, and JSON-escaped as it appears in an error body quoting the request
        forms: set[str] = set()
        for t in texts:
            if t:
                forms.update((t, json.dumps(t)[1:-1], json.dumps(t, ensure_ascii=False)[1:-1]))
        self._wholes = sorted((f for f in forms if len(f) >= MIN_WHOLE), key=len, reverse=True)
        self._grams = {f[i:i + MIN_RUN] for f in forms if len(f) >= MIN_RUN for i in range(len(f) - MIN_RUN + 1)}

    def scrub(self, message: str) -> str:
        if not message:
            return message
        covered = bytearray(len(message))
        for w in self._wholes:
            start = message.find(w)
            while start != -1:
                covered[start:start + len(w)] = b"\x01" * len(w)
                start = message.find(w, start + 1)
        grams = self._grams
        if grams:
            for i in range(len(message) - MIN_RUN + 1):
                if message[i:i + MIN_RUN] in grams:
                    covered[i:i + MIN_RUN] = b"\x01" * MIN_RUN
        if not any(covered):
            return message
        out: list[str] = []
        i = 0
        n = len(message)
        while i < n:
            if covered[i]:
                while i < n and covered[i]:
                    i += 1
                out.append(REDACTED)
            else:
                j = i
                while j < n and not covered[j]:
                    j += 1
                out.append(message[i:j])
                i = j
        return "".join(out)


def scrub_sealed(case: Case, message: str | None) -> str | None:
    """`message` without `case`'s texts if the case is sealed; as it is otherwise."""
    if message is None or not case.sealed:
        return message
    return SealedScrubber(case).scrub(message)

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

_ANCHOR = 6
_STEP = MIN_RUN - _ANCHOR + 1
"""Any shared run of MIN_RUN characters contains a case-text substring of _ANCHOR characters that starts at
a multiple of _STEP in the case text: indexing only those keeps the index at a seventh of the text's length
(a 1 MB sealed document is not 3 million 12-character strings)."""
_MAX_HITS = 256
"""Positions in the case texts tried per anchor found in a message (bounds the work on repetitive text)."""


class SealedScrubber:
    """Removes one sealed case's texts from messages. Built once per case, on its first error."""

    __slots__ = ("_anchors", "_forms", "_wholes")

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
        self._forms = [f for f in forms if len(f) >= MIN_RUN]
        anchors: dict[str, list[tuple[int, int]]] = {}
        for fi, f in enumerate(self._forms):
            for q in range(0, len(f) - _ANCHOR + 1, _STEP):
                anchors.setdefault(f[q:q + _ANCHOR], []).append((fi, q))
        self._anchors = anchors

    def scrub(self, message: str) -> str:
        if not message:
            return message
        n = len(message)
        covered = bytearray(n)
        for w in self._wholes:
            start = message.find(w)
            while start != -1:
                covered[start:start + len(w)] = b"\x01" * len(w)
                start = message.find(w, start + 1)
        anchors, forms = self._anchors, self._forms
        i = 0
        while i <= n - _ANCHOR:
            hits = anchors.get(message[i:i + _ANCHOR])
            nxt = i + 1
            if hits:
                for fi, q in hits[:_MAX_HITS]:
                    f = forms[fi]
                    # left: MIN_RUN is enough to decide (a longer run was met, and covered, at an earlier i)
                    a, b = i, q
                    while a > 0 and b > 0 and i - a < MIN_RUN and message[a - 1] == f[b - 1]:
                        a -= 1
                        b -= 1
                    c, d = i + _ANCHOR, q + _ANCHOR
                    while c < n and d < len(f) and message[c] == f[d]:
                        c += 1
                        d += 1
                    if c - a >= MIN_RUN:
                        covered[a:c] = b"\x01" * (c - a)
                        nxt = max(nxt, c - _ANCHOR + 1)
            i = nxt
        if not any(covered):
            return message
        out: list[str] = []
        i = 0
        while i < n:
            j = i
            if covered[i]:
                while j < n and covered[j]:
                    j += 1
                out.append(REDACTED)
            else:
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

"""What a user's solver returns (an `Answer`, a mapping read as one, or a string) and the one-line summary of what it
raised: shared by the solver provider and its process pool's workers, which import nothing else of the provider."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


class Answer(NamedTuple):
    """A solver's answer with what it knows of its cost; counts left None are estimated from the texts."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    """Spend the solver reports itself (dollars), added to what the model's prices give for the tokens."""
    ttft_s: float | None = None
    """Seconds from the attempt's start to the first token, when the solver streams."""


def summary(e: BaseException) -> str:
    """One line for the stored message: the exception's type and its first line, bounded."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    line = f"{type(e).__name__}: {text}" if text else type(e).__name__
    return line[:300]


def as_answer(out: object) -> object:
    """A mapping with a "text" key read as an Answer; anything else as it is."""
    if isinstance(out, Mapping) and "text" in out:
        return Answer(*(out.get(k, d) for k, d in zip(Answer._fields, (None, *Answer._field_defaults.values()),
                                                      strict=True)))
    return out

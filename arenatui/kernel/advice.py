"""What the tool tells a person to change, from a pattern in what a server did: one rule for the live console and
for the summaries of a stored run."""

from __future__ import annotations

INTERRUPTED_SHARE = 0.2
"""Share of a model's attempts ended by an interrupted stream while another of its calls was in flight past which
the tool says the server takes one request at a time (`single_slot_advice`)."""
INTERRUPTED_MIN = 3


def single_slot_advice(model: str, interrupted: int, attempts: int) -> str | None:
    """What to do when `interrupted` of a model's `attempts` were streams cut while another call was in flight: the
    pattern of a server with one slot that stops a stream when a request arrives (llama-cpp-python's), where
    concurrency only buys cut streams and retries. None below the share that says so."""
    if interrupted < INTERRUPTED_MIN or interrupted < INTERRUPTED_SHARE * attempts:
        return None
    return (f"{model}: the server interrupts a stream when another request arrives; set stream = false or "
            f"max_concurrency = 1 for {model}")

"""What a view may do to a running sweep, and read of it: the narrow control surface (the shape of Inspect AI's
display protocol), the same one the user has through the keys and the auto-tuner has through the sweep.

Views hold a `SweepControl` (`Sweep.control`), never the runner: its queues, lanes and workers are the engine's.
"""

from __future__ import annotations

from typing import Protocol


class SweepControl(Protocol):
    @property
    def target(self) -> int:
        """The global concurrency limit now."""
        ...

    @property
    def paused(self) -> bool: ...

    @property
    def cancelled(self) -> bool: ...

    def set_concurrency(self, n: int, source: str = "user") -> None:
        """Change the global limit (bounded to [1, limits.MAX_CONCURRENCY]); raising starts calls at once, lowering
        lets running calls finish."""
        ...

    def set_model_cap(self, model_key: str, cap: int | None, source: str = "user") -> None:
        """Cap one model's calls in flight at its provider (None: no cap)."""
        ...

    def model_cap(self, model_key: str) -> int | None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def cancel(self) -> None:
        """Stop now: calls in flight end as 'cancelled' (resume runs them again); finished ones stay."""
        ...

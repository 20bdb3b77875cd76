"""The one error tree of arenatui, and the one function that renders errors for people.

    ArenaError                      anything arenatui reports to a user (exit code 2 at the CLI)
    ├── ConfigError                 a project file, case file or theme is wrong: file, key path, expectation
    ├── PlanError                   filters leave nothing to run, a run to resume does not exist
    ├── StoreError                  the results database cannot be used: newer schema, corrupt, locked
    │   ├── DiskFullError           the disk holding it is full (exit code 1: the run failed, resume later)
    │   ├── ReadOnlyDatabase        it cannot be written here (a command whose writing is a by-product reads on)
    │   └── NoSuchDatabase          a command that only reads was pointed at a database that does not exist
    ├── ProviderSetupError          a provider cannot start: missing API key variable, bad base_url
    └── SolverMisuse                a python solver is used in a way that would corrupt results (one instance
                                    shared by trials at once): the run fails at once

    ProviderError                   raised by providers for one attempt; the engine classifies, never the user
    ├── RateLimited                 429 or the simulated equivalent; carries retry_after (seconds) when known
    ├── TransientError              worth retrying: 5xx, resets, timeouts, malformed or truncated responses
    │   ├── IncompleteStream        a stream that ended cleanly without its end marker (no finish reason, no
    │   │                           [DONE] / message_stop): a proxy's or server's cut, never an answer
    │   └── Transient               what a python solver raises for the same (arenatui.Transient)
    └── TerminalError               never retried: 4xx other than 408/409/429, a refusal to serve
        └── SolverFailed            a python solver raised (or its worker process died): error class solver_error
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arenatui.kernel.events import DeclaredLimits


class ArenaError(Exception):
    """An error meant for a person: rendered as one paragraph, exit code 2, no traceback."""

    exit_code = 2


class ConfigError(ArenaError):
    """A value in a file is wrong. Names the file, the key path and what was expected."""

    def __init__(self, file: str, key: str | None, expected: str) -> None:
        self.file = file
        self.key = key
        self.expected = expected
        where = f"{file}: {key}" if key else file
        super().__init__(f"{where}: {expected}")


class PlanError(ArenaError):
    """The requested sweep cannot be planned (empty after filters, unknown run to resume)."""


class StoreError(ArenaError):
    """The results database cannot be used."""


class DiskFullError(StoreError):
    """The disk under the results database is full: the run failed; what was committed is kept."""

    exit_code = 1


class ReadOnlyDatabase(StoreError):
    """The results database (or its directory) cannot be written here: a command that must write fails with this;
    one whose writing is a by-product (arena bakeoff saving its decision) reads on and says what was not kept."""


class NoSuchDatabase(StoreError):
    """A reader (runs, report, export, browse, ...) was given a database path that does not exist: it never creates
    one, so a typo in --db is said, not answered with an empty list."""


def unwrap(exc: BaseException) -> BaseException:
    """The error a person should hear about inside a task group's ExceptionGroup: an ArenaError first."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [unwrap(e) for e in exc.exceptions]
        for leaf in leaves:
            if isinstance(leaf, ArenaError):
                return leaf
        for leaf in leaves:
            if isinstance(leaf, Exception):
                return leaf
        return leaves[0] if leaves else exc
    return exc


class ProviderSetupError(ArenaError):
    """A provider cannot be constructed from its configuration. `setting` names the model's key that caused it
    (``api_key_env``, ``headers_env.X-Api-Key``), so whoever knows the project file can say where
    (`providers.registry.make_provider`)."""

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class ProviderError(Exception):
    """One attempt of one call failed. Subclasses tell the engine whether to retry."""

    error_class = "transient"
    latency_s: float | None = None
    """Where the provider could tell: from the request going onto the wire to the refusal's last byte."""
    connect_s: float | None = None
    """Where the provider could tell: the attempt's start until its request was on the wire."""
    http_status: int | None = None
    """The HTTP status of the refusal, for HTTP providers (stored with each failed attempt)."""
    retry_after: float | None = None
    """How long the provider asked to wait before the next attempt, when it said (a refusal for rate)."""
    retry_after_source: str | None = None
    """The header that gave `retry_after` (``retry-after``, ``llm_provider-retry-after``, ...), when one did."""
    input_tokens: int = 0
    output_tokens: int = 0
    """Usage the failed attempt consumed, where the provider reported it (counted in the call's cost)."""
    detail: str | None = None
    """More than the one-line message where there is more (a solver's traceback), stored as the call's detail."""
    limits: DeclaredLimits | None = None
    """The rate limits a refusal's headers declared when it sent any."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RateLimited(ProviderError):
    """The provider refused for rate: retry no earlier than ``retry_after`` seconds if given."""

    error_class = "rate_limited"

    def __init__(self, message: str = "rate limited", retry_after: float | None = None,
                 retry_after_source: str | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.retry_after_source = retry_after_source


class TransientError(ProviderError):
    """A failure that a later attempt may not repeat."""

    error_class = "transient"


class IncompleteStream(TransientError):
    """A streamed answer ended without its end marker: whatever arrived is not the answer (retried like a
    transient failure; stored as ``incomplete_stream`` so a proxy cutting streams is told apart)."""

    error_class = "incomplete_stream"


class AttemptTimedOut(TimeoutError):
    """An attempt that reached its deadline, with what the provider saw of the answer: `first_token` True when a
    streamed answer's first token had arrived (slow, not hung), False when none had (probably hung), None where
    it cannot tell (a non-streamed answer arrives whole, so silence until the deadline says nothing)."""

    def __init__(self, message: str, first_token: bool | None) -> None:
        super().__init__(message)
        self.first_token = first_token
        self.first_token_s: float | None = None
        """When it had: seconds from the request going out to the first token."""


class TerminalError(ProviderError):
    """A failure that will repeat: the engine records it after one attempt and never sleeps."""

    error_class = "terminal"


class Transient(TransientError):
    """Raise it from a python solver for a failure worth retrying (a flaky backend): the engine retries the call
    with the same backoff as a provider's 5xx."""

    def __init__(self, message: str = "transient failure raised by the solver") -> None:
        super().__init__(message)


class SolverFailed(TerminalError):
    """A python solver raised (or the process running it died): that call ends errored with error class
    solver_error, never retried; `message` is one line, `detail` the traceback."""

    error_class = "solver_error"

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail


class SolverMisuse(ArenaError):
    """A python solver used in a way that would silently corrupt results: the run fails at once."""


def render_error(exc: BaseException | str, *, prefix: str = "error") -> str:
    """One readable paragraph for a person, wrapped to 100 columns, prefixed with ``error:`` (or `prefix`)."""
    from arenatui.kernel.text import printable  # messages quote user files: no escape sequence reaches the terminal

    text = printable(str(exc).strip() or exc.__class__.__name__, newlines=False)
    return textwrap.fill(f"{prefix}: " + " ".join(text.split()), width=100, break_on_hyphens=False,
                         break_long_words=False)  # a path or command cut in two cannot be copied

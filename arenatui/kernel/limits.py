"""Upper bounds on what a user can ask for, checked where input enters (config, CLI, console), in one place.

Each bound is far above any sensible use and well below what breaks something: an unbounded concurrency
starts a worker per unit (a million workers took 42 s and 3.5 GB for 144 calls), and the live matrix keeps
per-cell trial counts in 16-bit arrays.
"""

from __future__ import annotations

MAX_CONCURRENCY = 4096
"""Global concurrency and per-model caps: more calls at once than any provider serves from one client."""
MAX_TRIALS = 1000
"""Trials per (model, case); the live matrix counts a cell's trials in 16 bits (65,535)."""
MAX_ATTEMPTS = 100
"""Attempts per call, retries included."""
MAX_RPM = 10_000_000
"""Requests (or tokens) per minute for a rate limit."""
MIN_PORT, MAX_PORT = 0, 65535
"""TCP ports (0 asks the system for a free one)."""
MAX_NESTING = 64
"""Levels of arrays and tables in a project or case file: real files use a handful; a file 5,000 deep made
the parsers raise RecursionError."""
MAX_SQL_INT = 2**63 - 1
"""The largest whole number SQLite stores or compares: a count passed to a query (``arena runs --limit``)."""
MAX_SOLVER_PROCESSES = 256
"""Worker processes in one python solver's pool: each is a Python interpreter (~20-40 MB)."""
MAX_ANSWER_CHARS_LIMIT = 1_000_000_000
"""The highest [run] max_answer_chars: a gigabyte of text per answer is past what a results row should hold."""


def concurrency_bounded(n: int) -> int:
    """A concurrency level or cap within [1, MAX_CONCURRENCY] (the engine sets the nearest bound and says so)."""
    return min(max(1, n), MAX_CONCURRENCY)

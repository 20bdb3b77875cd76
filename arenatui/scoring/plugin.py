"""The python scorer: a user function ``(case, output) -> float | bool | Score`` named ``package.module:name``.

The module is looked up in the project's directory first (so a ``scorers.py`` beside ``arena.toml`` just
works), then among installed packages. Loading happens once, when the project's scorers are built, so a
missing module or name is a configuration error before any call is made.

Each call runs in a daemon thread of its own and is waited for up to the scorer's ``timeout_s``: past it, the
call is that answer's scoring error and the thread is abandoned. A thread cannot be killed, so an abandoned one
runs on until it returns; being a daemon it never holds the process at exit (Ctrl-C ends the run at once), and
once `STUCK_LIMIT` of a scorer's calls are still running, it is not called again until one returns (so a function
that never returns costs a few threads, not one per call). A subprocess could be killed, but the function takes
the case and keeps whatever state its module holds (a loaded model, a cache): a process per call would reload
it, and a pool would have to pickle cases and answers both ways. Anything the function raises, BaseException
included (``SystemExit``, a ``KeyboardInterrupt`` of its own: a real Ctrl-C reaches the main thread, never this
one), is that call's scoring error; so is a value that is no score (out of [0, 1], NaN, or a pass/fail that
contradicts its score).
"""

from __future__ import annotations

import contextlib
import decimal
import importlib
import importlib.util
import math
import numbers
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from arenatui.kernel.text import printable

UserScorer = Callable[[Any, str], Any]

STUCK_LIMIT = 4
"""A scorer with this many calls still running past their timeout is not called again until one of them returns."""


class PluginProblem(ValueError):
    """The function could not be loaded; the message says what to fix."""


class PluginFailed(Exception):
    """One call of the function gave no score (it raised, it ran past its timeout, it returned no score)."""


SLOW_IMPORT_S = 1.0
"""After this long importing a user's module, one line on stderr names it: a module that hangs at import (a
model download, a lock, a loop) otherwise held the start silently."""


@contextlib.contextmanager
def said_if_slow(what: str) -> Iterator[None]:
    """Import `what` in this (the main) thread, so Ctrl-C interrupts it as ever; a timer thread says which module
    it is once SLOW_IMPORT_S has passed."""
    timer = threading.Timer(SLOW_IMPORT_S, lambda: print(
        f"arena: still importing {printable(what, newlines=False)} after {SLOW_IMPORT_S:g} s; Ctrl-C stops",
        file=sys.stderr, flush=True))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def load_function(spec: str, project_dir: Path | None) -> UserScorer:
    if spec.count(":") != 1:
        raise PluginProblem(f"expected 'package.module:function', got {spec!r}")
    mod_name, func_name = spec.split(":")
    if not mod_name or not func_name:
        raise PluginProblem(f"expected 'package.module:function', got {spec!r}")
    module = None
    if project_dir is not None:
        rel = Path(*mod_name.split("."))
        for candidate in (project_dir / rel.with_suffix(".py"), project_dir / rel / "__init__.py"):
            if candidate.is_file():
                unique = f"arenatui_user_scorer_{abs(hash(str(candidate.resolve())))}"
                loader_spec = importlib.util.spec_from_file_location(unique, candidate)
                if loader_spec is None or loader_spec.loader is None:
                    break
                module = importlib.util.module_from_spec(loader_spec)
                sys.modules[unique] = module
                try:
                    with said_if_slow(f"{candidate} (for {spec!r})"):
                        loader_spec.loader.exec_module(module)
                except (Exception, SystemExit) as e:  # a KeyboardInterrupt here may be a real Ctrl-C: it goes on
                    del sys.modules[unique]
                    raise PluginProblem(f"{candidate} failed to import: {type(e).__name__}: {e}") from None
                break
    if module is None:
        try:
            with said_if_slow(f"module {mod_name!r} (for {spec!r})"):
                module = importlib.import_module(mod_name)
        except ImportError as e:
            where = f" in {project_dir} or" if project_dir is not None else ""
            raise PluginProblem(f"module {mod_name!r} was not found{where} among installed packages ({e})") from None
        except (Exception, SystemExit) as e:
            raise PluginProblem(f"module {mod_name!r} failed to import: {type(e).__name__}: {e}") from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise PluginProblem(f"{mod_name!r} has no function {func_name!r}")
    return func  # type: ignore[no-any-return]


def call(func: UserScorer, case: Any, output: str, timeout_s: float,
         stuck: list[threading.Thread]) -> tuple[float, bool, bool, str | None]:
    """``func(case, output)`` as a score (see `coerce`), called in a daemon thread and waited for up to
    ``timeout_s``; raises PluginFailed saying why there is none. Reading the returned value (its ``float()``,
    ``repr()``, ``len()``: a user's class can make any of them hang) happens inside that same timed call, so it is
    bounded too. ``stuck`` holds the scorer's calls still running past their timeout."""
    stuck[:] = [t for t in stuck if t.is_alive()]
    if len(stuck) >= STUCK_LIMIT:
        raise PluginFailed(f"{len(stuck)} earlier calls are still running past their timeout; it is not called "
                           f"again until one of them returns")
    box: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            value = func(case, output)
        except BaseException as e:  # SystemExit, KeyboardInterrupt raised by the function: this call's error
            box.append((False, f"raised {_described(e)}"))
            return
        try:
            box.append((True, coerce(value)))
        except ValueError as e:
            box.append((False, str(e)))
        except BaseException as e:  # the value's own __float__ or __repr__ raised
            box.append((False, f"returned a value that could not be read ({_described(e)})"))

    t = threading.Thread(target=run, name="arena python scorer", daemon=True)
    t.start()
    t.join(timeout_s)
    if not box:
        stuck.append(t)
        raise PluginFailed(f"gave no verdict within {timeout_s:g}s (its timeout_s); the call was abandoned")
    ok, value = box[0]
    if not ok:
        raise PluginFailed(value)
    return value  # type: ignore[no-any-return]


def _described(e: BaseException) -> str:
    """'Type: message' of an exception, read in the scorer's own thread (its __str__ is user code too)."""
    try:
        text = str(e)
    except BaseException:  # a __str__ that raises still names its type
        text = "(its message could not be read)"
    return f"{type(e).__name__}: {text}"


def _type_name(value: Any) -> str:
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _plain(value: Any) -> Any:
    """A numpy scalar (`np.isclose` returns `numpy.bool_`) as the Python bool, int or float it holds, a Decimal as
    a float; anything else as it is."""
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def _score(raw: Any, value: Any) -> float:
    raw = _plain(raw)
    if isinstance(raw, bool) or not isinstance(raw, numbers.Real):
        raise ValueError(f"the scorer returned {value!r}: its score is a {_type_name(raw)}, not a number")
    score = float(raw)
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise ValueError(f"the scorer returned the score {raw!r} ({value!r}); expected a number from 0 to 1")
    return score


def coerce(value: Any) -> tuple[float, bool, bool, str | None]:
    """A user function's return value as (score, passed, invalid_format, detail): a bool, a number in [0, 1]
    (passed at 1), or a Score / (score, passed) whose score is in [0, 1] and agrees with its pass (no pass at 0,
    no fail at 1). numpy's scalars and Decimal count as the bools and numbers they hold. Anything else raises
    ValueError naming the value or its type."""
    value = _plain(value)
    if isinstance(value, bool):
        return float(value), value, False, None
    passed = _plain(value[1]) if isinstance(value, tuple) and len(value) >= 2 else None
    if isinstance(passed, bool):  # Score or (value, passed)
        score = _score(value[0], value)
        if score == (0.0 if passed else 1.0):
            raise ValueError(f"the scorer returned {value!r}: {'passed' if passed else 'failed'} with the score "
                             f"{value[0]!r} contradicts itself")
        invalid = len(value) > 2 and _plain(value[2]) is True
        detail = str.__str__(value[3]) if len(value) > 3 and isinstance(value[3], str) else None
        return score, passed, invalid, detail
    if isinstance(value, numbers.Real):
        score = _score(value, value)
        return score, score >= 1.0, False, None
    raise ValueError(f"the scorer returned {_type_name(value)}; expected a number from 0 to 1, a bool or a Score")

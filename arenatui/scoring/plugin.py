"""The python scorer: a user function ``(case, output) -> float | bool | Score`` named ``package.module:name``.

The module is looked up in the project's directory first (so a ``scorers.py`` beside ``arena.toml`` just
works), then among installed packages. Loading happens once, when the project's scorers are built, so a
missing module or name is a configuration error before any call is made.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

UserScorer = Callable[[Any, str], Any]


class PluginProblem(ValueError):
    """The function could not be loaded; the message says what to fix."""


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
                    loader_spec.loader.exec_module(module)
                except Exception as e:
                    del sys.modules[unique]
                    raise PluginProblem(f"{candidate} failed to import: {type(e).__name__}: {e}") from None
                break
    if module is None:
        try:
            module = importlib.import_module(mod_name)
        except ImportError as e:
            where = f" in {project_dir} or" if project_dir is not None else ""
            raise PluginProblem(f"module {mod_name!r} was not found{where} among installed packages ({e})") from None
        except Exception as e:
            raise PluginProblem(f"module {mod_name!r} failed to import: {type(e).__name__}: {e}") from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise PluginProblem(f"{mod_name!r} has no function {func_name!r}")
    return func  # type: ignore[no-any-return]


def coerce(value: Any) -> tuple[float, bool]:
    """A user function's return value as (score, passed): bool, a number in [0, 1] (passed at 1), or a Score."""
    if isinstance(value, bool):
        return float(value), value
    if isinstance(value, tuple) and len(value) >= 2 and isinstance(value[1], bool):  # Score or (value, passed)
        score = float(value[0])
        if not math.isfinite(score):
            raise ValueError(f"the scorer returned a non-finite score {value[0]!r}")
        return score, value[1]
    if isinstance(value, (int, float)):
        score = float(value)
        if not math.isfinite(score) or not 0.0 <= score <= 1.0:
            raise ValueError(f"the scorer returned {value!r}; expected a number from 0 to 1, a bool or a Score")
        return score, score >= 1.0
    raise ValueError(f"the scorer returned {type(value).__name__}; expected a number from 0 to 1, a bool or a Score")

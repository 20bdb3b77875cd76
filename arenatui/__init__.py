"""arenatui: a terminal console for benchmarking LLMs live, and a Python API for benchmarking your own pipeline.

    import arenatui
    result = arenatui.bench("arena.toml", trials=3, k_values=[1, 3])
    result.average_score(), result.pass_at_k(3), result.report("report.md")

The names below load on first use, so that `arena` (which imports this package) starts fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from arenatui.kernel import __version__ as __version__

if TYPE_CHECKING:
    from arenatui.api import RunResult, abench, bench
    from arenatui.config.schema import Case, Defaults, Project, RunSettings, SimSettings
    from arenatui.config.schema import ModelConfig as Model
    from arenatui.config.schema import ScorerConfig as Scorer
    from arenatui.kernel.errors import ArenaError, ConfigError, RateLimited, SolverMisuse, Transient
    from arenatui.providers.solver import Factory, Solver, SolverRequest, TrialContext
    from arenatui.providers.solver_answer import Answer

_LAZY: dict[str, tuple[str, str]] = {
    "bench": ("arenatui.api", "bench"),
    "abench": ("arenatui.api", "abench"),
    "RunResult": ("arenatui.api", "RunResult"),
    "Project": ("arenatui.config.schema", "Project"),
    "Model": ("arenatui.config.schema", "ModelConfig"),
    "Case": ("arenatui.config.schema", "Case"),
    "Scorer": ("arenatui.config.schema", "ScorerConfig"),
    "Defaults": ("arenatui.config.schema", "Defaults"),
    "RunSettings": ("arenatui.config.schema", "RunSettings"),
    "SimSettings": ("arenatui.config.schema", "SimSettings"),
    "TrialContext": ("arenatui.providers.solver", "TrialContext"),
    "SolverRequest": ("arenatui.providers.solver", "SolverRequest"),
    "Answer": ("arenatui.providers.solver_answer", "Answer"),
    "Solver": ("arenatui.providers.solver", "Solver"),
    "Factory": ("arenatui.providers.solver", "Factory"),
    "RateLimited": ("arenatui.kernel.errors", "RateLimited"),
    "Transient": ("arenatui.kernel.errors", "Transient"),
    "ArenaError": ("arenatui.kernel.errors", "ArenaError"),
    "ConfigError": ("arenatui.kernel.errors", "ConfigError"),
    "SolverMisuse": ("arenatui.kernel.errors", "SolverMisuse"),
}

__all__ = ["Answer", "ArenaError", "Case", "ConfigError", "Defaults", "Factory", "Model", "Project", "RateLimited",
           "RunResult", "RunSettings", "Scorer", "SimSettings", "Solver", "SolverMisuse", "SolverRequest", "Transient",
           "TrialContext", "abench", "bench"]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'arenatui' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

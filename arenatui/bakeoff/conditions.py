"""Identical conditions, checked: the settings that change what a model's figures mean (timeout, max tokens, max
attempts, system prompt, temperature), compared across the candidates of a bake-off.

A shorter timeout flatters a slow model's percentiles by turning slowness into errors; a higher max tokens lets
another finish answers the first had cut. Per-model settings are allowed, never silent: each difference is listed
with every model's value and where it was set (the sweep, or a load run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arenatui.config.schema import Defaults, RunSettings

SETTINGS = ("timeout_s", "max_tokens", "max_attempts", "system", "temperature")


@dataclass(frozen=True, slots=True)
class Difference:
    """One setting that is not the same for every candidate: per model, its values and where each was used."""

    setting: str
    values: dict[str, list[tuple[Any, str]]]
    """Per model: (value, where: 'sweep' or 'load run ID')."""

    @property
    def words(self) -> str:
        per = "; ".join(f"{m} " + ", ".join(f"{_shown(v)} ({where})" for v, where in vs)
                        for m, vs in self.values.items())
        return f"{self.setting} differs: {per}"


def _shown(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, str):
        return repr(v if len(v) <= 40 else v[:39] + "…")
    return f"{v:g}" if isinstance(v, float) else str(v)


def conditions_of(config: Mapping[str, Any], model_key: str) -> dict[str, Any] | None:
    """The settings a model ran with, as a run's stored configuration gives them (None: no such model)."""
    model = next((m for m in config.get("models", ()) if isinstance(m, Mapping) and m.get("key") == model_key), None)
    if model is None:
        return None
    run = config.get("run") or {}
    dft = config.get("defaults") or {}
    d_run, d_dft = RunSettings(), Defaults()
    return {
        "timeout_s": float(model.get("timeout_s", run.get("timeout_s", d_run.timeout_s))),
        "max_tokens": model.get("max_tokens") or dft.get("max_tokens", d_dft.max_tokens),
        "max_attempts": model.get("max_attempts", run.get("max_attempts", d_run.max_attempts)),
        "system": model.get("system") if model.get("system") is not None else dft.get("system"),
        "temperature": float(model["temperature"] if model.get("temperature") is not None
                             else dft.get("temperature", d_dft.temperature)),
    }


def differences(used: Mapping[str, Sequence[tuple[Mapping[str, Any], str]]]) -> list[Difference]:
    """Per model, the conditions it ran with in each run (`conditions_of`, where) -> the settings that differ.

    A setting differs when any two uses (two models, or one model's sweep and its load run) have different
    values."""
    out = []
    for setting in SETTINGS:
        values = {m: [(c[setting], where) for c, where in uses] for m, uses in used.items() if uses}
        distinct = {repr(v) for vs in values.values() for v, _ in vs}
        if len(distinct) > 1:
            shown: dict[str, list[tuple[Any, str]]] = {}
            for m, vs in values.items():  # a model whose runs agree shows its value once, where first used
                first: dict[str, tuple[Any, str]] = {}
                for v, where in vs:
                    first.setdefault(repr(v), (v, where))
                shown[m] = list(first.values())
            out.append(Difference(setting, shown))
    return out

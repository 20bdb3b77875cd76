"""Which providers exist: name → lazy factory, default base_url and wire format (the shape of Inspect AI's registry).

The base module (`providers.base`) defines the protocol and knows no implementation; each implementation imports
the base; this registry imports an implementation only when a model of its kind is made, so `arena --help` and
the config check load none of them. Adding a provider is one new module plus one `register` call below (or, from
outside the package, a call at import time of the module that defines it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry imports nothing at run time: the config check reads it while `config` loads
    from arenatui.config.schema import ModelConfig, Project, RunSettings
    from arenatui.providers.base import Provider

Factory = Callable[["ModelConfig", "RunSettings", int], "Provider"]
"""Makes one model's provider: (model, run settings, concurrency hint: how many calls may be in flight at once)."""


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    name: str
    """What a project's `provider = "..."` says."""
    factory: Factory
    """Imports its implementation when called, never before."""
    default_base_url: str | None = None
    """Used when a model gives no base_url (None: the provider needs none, or the model must give one)."""
    wire_format: str | None = None
    """The HTTP API it speaks ('openai', 'anthropic'), or None for a provider in this process."""


_SPECS: dict[str, ProviderSpec] = {}


def register(spec: ProviderSpec) -> None:
    """Add a provider (a name given twice replaces the first: tests register toys)."""
    _SPECS[spec.name] = spec


def unregister(name: str) -> None:
    _SPECS.pop(name, None)


def provider_names() -> tuple[str, ...]:
    return tuple(_SPECS)


def provider_spec(name: str) -> ProviderSpec | None:
    return _SPECS.get(name)


def make_provider(model: ModelConfig, run: RunSettings, concurrency_hint: int = 64, *,
                  project: Project | None = None) -> Provider:
    """The model's provider (the config check has made sure its kind is registered). Given the `project` the model
    is from, a setup error names the file and the model's key in it (`arena.toml: models[2].api_key_env: ...`)."""
    from arenatui.kernel.errors import ProviderSetupError

    try:
        return _SPECS[model.provider].factory(model, run, concurrency_hint)
    except ProviderSetupError as e:
        index = next((i for i, m in enumerate(project.models) if m.key == model.key), None) if project else None
        if project is None or index is None or e.setting is None or not project.path.is_file():
            raise  # a project built in Python has no file to point at: the model's name says which
        raise ProviderSetupError(f"{project.path}: models[{index}].{e.setting}: {e}", setting=e.setting) from None


def _sim(model: ModelConfig, run: RunSettings, _hint: int) -> Provider:
    from arenatui.providers.sim import DeclaringSimProvider, SimProvider

    if model.sim.declares():
        return DeclaringSimProvider(model, seed=run.seed)

    return SimProvider(model, seed=run.seed)


def _openai(model: ModelConfig, run: RunSettings, hint: int) -> Provider:
    from arenatui.providers.openai import OpenAIProvider

    return OpenAIProvider(model, run, hint)


def _python(model: ModelConfig, run: RunSettings, _hint: int) -> Provider:
    from arenatui.providers.solver import SolverProvider

    return SolverProvider(model, run)


def _anthropic(model: ModelConfig, run: RunSettings, hint: int) -> Provider:
    from arenatui.providers.anthropic import AnthropicProvider

    return AnthropicProvider(model, run, hint)


register(ProviderSpec("sim", _sim))
register(ProviderSpec("openai", _openai, "https://api.openai.com/v1", "openai"))
register(ProviderSpec("anthropic", _anthropic, "https://api.anthropic.com", "anthropic"))
register(ProviderSpec("python", _python))  # a user's solver (arenatui.providers.solver), called once per trial

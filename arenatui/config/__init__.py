"""Project configuration: the validated frozen dataclasses a project is (arenatui.project reads and writes the TOML)."""

from arenatui.config.schema import (
    Case,
    Defaults,
    ModelConfig,
    Project,
    RunSettings,
    ScorerConfig,
    SimSettings,
)

__all__ = [
    "Case",
    "Defaults",
    "ModelConfig",
    "Project",
    "RunSettings",
    "ScorerConfig",
    "SimSettings",
]

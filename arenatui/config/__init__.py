"""Project configuration: TOML in, validated frozen dataclasses out, TOML back out."""

from arenatui.config.load import load_project, project_from_dict, project_to_dict
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
    "load_project",
    "project_from_dict",
    "project_to_dict",
]

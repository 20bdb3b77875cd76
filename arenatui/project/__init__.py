"""A project file: TOML read into arenatui.config's frozen dataclasses (validated by the provider and scorer
registries), and written back."""

from arenatui.project.read import load_project, project_from_dict, project_to_dict

__all__ = ["load_project", "project_from_dict", "project_to_dict"]

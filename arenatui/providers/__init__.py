"""Providers: one protocol (`complete(request) -> Completion`, in `base`) and its implementations, which the
registry (`registry`) names and makes lazily."""

from arenatui.providers.base import Completion, Provider, Request
from arenatui.providers.registry import make_provider

__all__ = ["Completion", "Provider", "Request", "make_provider"]

"""Providers: one protocol (`complete(request) -> Completion`) and its implementations."""

from arenatui.providers.base import Completion, Provider, Request, make_provider

__all__ = ["Completion", "Provider", "Request", "make_provider"]

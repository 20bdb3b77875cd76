"""`arena mock-server`: an OpenAI- and Anthropic-compatible HTTP server whose models are simulated (SimCore)."""

from arenatui.mockserver.app import MockServer, serve

__all__ = ["MockServer", "serve"]

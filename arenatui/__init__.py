"""arenatui: a terminal console for benchmarking LLMs live."""

__version__ = "0.1.0"

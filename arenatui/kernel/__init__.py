"""The kernel: leaf modules every layer may import (errors, events and lane keys, limits, units, paths, redaction,
text made safe to print, threads); they import nothing else of arenatui."""

__version__ = "0.1.0"

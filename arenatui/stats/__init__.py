"""Statistics over per-item results: pure numpy, no I/O, no UI."""

from arenatui.stats.bootstrap import Interval, mean_ci, paired_bootstrap
from arenatui.stats.summary import ModelSummary, summarize

__all__ = ["Interval", "ModelSummary", "mean_ci", "paired_bootstrap", "summarize"]

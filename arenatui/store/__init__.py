"""The results database: the only package that speaks SQL."""

from arenatui.store.db import RunRecord, Store, default_db_path
from arenatui.store.writer import ResultWriter

__all__ = ["ResultWriter", "RunRecord", "Store", "default_db_path"]

"""Presentation shared by every view: columns and figures, charts, wording, safe text, terminal output, variant
and load tables. Reads results; never a view, never the store's SQL."""

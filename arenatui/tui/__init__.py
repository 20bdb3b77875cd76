"""The Textual console: run screen, widgets, themes. Only views live here; the sweep runs in arenatui.session.sweep."""

"""The `arena` verbs' drivers and their printing, one module each; `arenatui.cli` parses and dispatches to them."""

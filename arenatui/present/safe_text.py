"""Untrusted text shown in Rich: a `Text` of its characters exactly as they are, never parsed as markup, every control
character made visible (arenatui.kernel.text.printable)."""

from __future__ import annotations

from rich.text import Text

from arenatui.kernel.text import printable


def literal(s: str | None, style: str = "", *, newlines: bool = True) -> Text:
    """A Rich Text showing `s` exactly as characters: no markup, no escapes, no emoji codes."""
    return Text(printable(s or "", newlines=newlines), style=style, no_wrap=False)

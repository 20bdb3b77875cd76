"""A small typed document (headings, paragraphs, lists, tables, figures, code) and its two renderers, Markdown and
self-contained HTML.

The decision report and the bake-off page build one `Document` each; every section is written once, as blocks, and
each format renders it. What a format cannot show it renders from the block's own fallback: a `Figure`'s drawings
are SVG (HTML only) and its `text` blocks stand in for them in Markdown.

Every string in a document is untrusted text (model names, provider messages, case ids): the renderers escape it
for their format (Markdown's active characters; HTML's entities) after removing control characters, so nothing in
a document is ever read as markup or reaches a terminal as an escape sequence. SVG drawings are the one exception:
they are built by our chart code, which escapes what it puts in them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias
from urllib.parse import urlsplit

from arenatui.kernel.text import printable

# ---- inline runs -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Strong:
    """Bold in both formats (a list item's subject: the model, the scorer, the pair)."""
    text: str


@dataclass(frozen=True, slots=True)
class Emph:
    """Italics in both formats."""
    text: str


@dataclass(frozen=True, slots=True)
class Mark:
    """Text with a meaning HTML colours (its class: decided, open, eliminated, contender); plain in Markdown."""
    text: str
    cls: str


@dataclass(frozen=True, slots=True)
class Code:
    """A provider's words quoted as they came (an error message): HTML's code; plain in Markdown, where a backtick
    in the message could not be quoted safely."""
    text: str


@dataclass(frozen=True, slots=True)
class Link:
    """An http(s) address (a term's source): a link in HTML (rel noopener), the address as text in Markdown."""
    href: str


Inline: TypeAlias = "str | Strong | Emph | Mark | Code | Link"
Text: TypeAlias = "str | tuple[Inline, ...]"
"""A paragraph's or list item's text: one string, or runs of inline text and marks."""
Cell: TypeAlias = "str | Mark | Link"
"""A table cell: a string, or text HTML colours by class, or a link."""

# ---- blocks ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True, slots=True)
class Para:
    text: Text


@dataclass(frozen=True, slots=True)
class Item:
    """A list item with sub-items (a recommendation and the evidence it rests on)."""
    text: Text
    sub: tuple[Text, ...] = ()


@dataclass(frozen=True, slots=True)
class Bullets:
    items: tuple[Text | Item, ...]


@dataclass(frozen=True, slots=True)
class Table:
    """A table; `cls` styles it in HTML ("names": the first column left, figures right; "text": every column left).
    `split`: on a wide table, HTML shows columns from `split` on as a second table (the first column repeated in
    it, `split_words` between them, `split_cls` its class) so a desktop page never scrolls sideways; Markdown keeps
    one table."""
    head: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    cls: str = ""
    split: int | None = None
    split_words: str = ""
    split_cls: str = ""
    key: int = 0
    """The column that names a row (the model), repeated first in a split table's second part."""


@dataclass(frozen=True, slots=True)
class Figure:
    """Drawings (SVG, already escaped by the chart code) with their `title` (a level-3 heading) and `caption` (how
    to read them) for HTML; `text`: the blocks Markdown shows instead (a table of the same figures, or nothing)."""
    drawings: tuple[str, ...]
    text: tuple[Block, ...] = ()
    title: str = ""
    caption: str = ""


@dataclass(frozen=True, slots=True)
class Pre:
    """Preformatted text (the run's settings as JSON)."""
    text: str
    lang: str = ""


@dataclass(frozen=True, slots=True)
class Callout:
    """A warning set apart: a box in HTML, its blocks as they are in Markdown."""
    blocks: tuple[Block, ...]


Block: TypeAlias = "Heading | Para | Bullets | Table | Figure | Pre | Callout"


@dataclass(frozen=True, slots=True)
class Document:
    title: str
    blocks: tuple[Block, ...] = field(default_factory=tuple)


def table(head: Sequence[str], body: Sequence[Sequence[Cell]], cls: str = "", *, split: int | None = None,
          split_words: str = "", split_cls: str = "", key: int = 0) -> Table:
    """A `Table` from any sequences (the document holds tuples)."""
    return Table(tuple(head), tuple(tuple(r) for r in body), cls, split, split_words, split_cls, key)


# ---- Markdown ----------------------------------------------------------------------------------------------------


_MD_ACTIVE = re.compile(r"[\\`*\[\]<|]|(?<![^\W_])_|_(?![^\W_])")
"""Markdown's active characters: backslash, code, emphasis, links, raw HTML, table pipes; `_` unless inside a word
(CommonMark never reads an intraword underscore as emphasis, and `max_tokens` stays readable)."""
_MD_LINE_START = re.compile(r"^(\s*)(?:([#>]|[+-](?=\s))|(\d+)([.)])(?=\s))")
"""What opens a block at a line's start (a heading, a quote, a list): escaped where a text starts a line."""


def md_escape(s: object, *, line_start: bool = False) -> str:
    """A table cell or inline text: one line, no control characters, Markdown's active characters escaped;
    `line_start`: the text starts a line (a paragraph, a list item), so what would open a block there is escaped."""
    text = _MD_ACTIVE.sub(lambda m: "\\" + m.group(), printable(str(s), newlines=False))
    if not line_start:
        return text
    return _MD_LINE_START.sub(lambda m: m.group(1) + ("\\" + m.group(2) if m.group(2) else
                                                      m.group(3) + "\\" + m.group(4)), text)


def _md_inline(t: Text) -> str:
    """Inline text that starts a line (a paragraph's, a list item's)."""
    if isinstance(t, str):
        return md_escape(t, line_start=True)
    out: list[str] = []
    for run in t:
        if not out and isinstance(run, str):
            out.append(md_escape(run, line_start=True))
            continue
        if isinstance(run, Strong):
            out.append(f"**{md_escape(run.text)}**")
        elif isinstance(run, Emph):
            out.append(f"_{md_escape(run.text)}_")
        elif isinstance(run, Link):
            out.append(md_escape(run.href))
        elif isinstance(run, (Mark, Code)):
            out.append(md_escape(run.text))
        else:
            out.append(md_escape(run))
    return "".join(out)


def cell_text(c: Cell) -> str:
    """A cell's words, whatever marks it carries."""
    return c.href if isinstance(c, Link) else c.text if isinstance(c, Mark) else c


def _md_cell(c: Cell) -> str:
    return md_escape(cell_text(c))


def md_table(head: Sequence[str], body: Sequence[Sequence[Cell]]) -> list[str]:
    out = ["| " + " | ".join(md_escape(h) for h in head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in body]
    return out


def _md_block(b: Block) -> list[str]:
    if isinstance(b, Heading):
        return [f"{'#' * b.level} {md_escape(b.text)}"]
    if isinstance(b, Para):
        return [_md_inline(b.text)]
    if isinstance(b, Bullets):
        out = []
        for it in b.items:
            item = it if isinstance(it, Item) else Item(it)
            out.append(f"- {_md_inline(item.text)}")
            out += [f"  - {_md_inline(s)}" for s in item.sub]
        return out
    if isinstance(b, Table):
        return md_table(b.head, b.rows)
    if isinstance(b, Pre):
        return [f"```{b.lang}", printable(b.text, newlines=True).replace("```", "`\u200b``"), "```"]
    inner = b.text if isinstance(b, Figure) else b.blocks
    return md_blocks(inner)


def md_blocks(blocks: Sequence[Block]) -> list[str]:
    """Blocks as Markdown lines, a blank line between blocks."""
    out: list[str] = []
    for b in blocks:
        lines = _md_block(b)
        if lines:
            out += [*([""] if out else []), *lines]
    return out


def to_markdown(doc: Document) -> str:
    """The document as Markdown: one blank line between blocks, a heading's level as its #s."""
    return "\n".join([f"# {md_escape(doc.title)}", "", *md_blocks(doc.blocks), ""])


# ---- HTML --------------------------------------------------------------------------------------------------------


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right;white-space:nowrap}
th{background:#f3f3f3}td:nth-child(2),th:nth-child(2){text-align:left}
.decided{color:#0a6b2d;font-weight:600}.open{color:#8a5a00}
pre{background:#f6f6f6;padding:1em;overflow:auto}svg{border:1px solid #ddd;background:#fff}
svg.frontier{display:block;max-width:100%;height:auto}.wide{overflow-x:auto;max-width:100%}
li,p{overflow-wrap:anywhere}
.front{fill:#0a6b2d}.dot{fill:#888}.muted{fill:#ddd;stroke:#bbb}.muted-label{fill:#aaa}.out{fill:#fff;stroke:#a1261b;stroke-width:2}
.warn{border-left:4px solid #b36b00;background:#fff6e5;padding:.25em 1em;margin:1em 0}
.eliminated{color:#a1261b;font-weight:600}.contender{color:#0a6b2d;font-weight:600}
table.names td,table.names th{text-align:right}table.names td:first-child,table.names th:first-child,table.text td,
table.text th{text-align:left}
table.board th{white-space:normal}table.board td:nth-child(2),table.board th:nth-child(2){text-align:left}
table.load th{white-space:normal}table.load td:last-child{white-space:normal;min-width:16em;text-align:left}
table.load th:last-child{text-align:left}td{overflow-wrap:anywhere}
table.prose td:last-child{white-space:normal}
.wide td:first-child,.wide th:first-child{position:sticky;left:0;background:#fff}
.wide th:first-child{background:#f3f3f3}
@media (max-width:600px){body{padding:0 .5em}th,td{padding:.2em .35em}}
"""


def h(s: object) -> str:
    """Untrusted text for HTML: control characters removed, entities escaped (quotes too: safe in attributes)."""
    return html.escape(printable(str(s), newlines=False), quote=True)


def _link(href: str) -> str:
    """An http(s) address as a link (escaped); any other scheme stays text: the address is someone's words."""
    if urlsplit(href).scheme in ("http", "https") and " " not in href:
        return f'<a href="{h(href)}" rel="noopener noreferrer">{h(href)}</a>'
    return h(href)


def _html_inline(t: Text) -> str:
    if isinstance(t, str):
        return h(t)
    out = []
    for run in t:
        if isinstance(run, Strong):
            out.append(f"<b>{h(run.text)}</b>")
        elif isinstance(run, Emph):
            out.append(f"<i>{h(run.text)}</i>")
        elif isinstance(run, Mark):
            out.append(f'<span class="{h(run.cls)}">{h(run.text)}</span>')
        elif isinstance(run, Code):
            out.append(f"<code>{h(run.text)}</code>")
        elif isinstance(run, Link):
            out.append(_link(run.href))
        else:
            out.append(h(run))
    return "".join(out)


def _html_cell(c: Cell) -> str:
    if isinstance(c, Mark):
        return f'<td class="{h(c.cls)}">{h(c.text)}</td>'
    if isinstance(c, Link):
        return f"<td>{_link(c.href)}</td>"
    return f"<td>{h(c)}</td>"


def html_table(head: Sequence[str], body: Sequence[Sequence[Cell]], cls: str = "") -> str:
    """A table in a box that scrolls sideways on a narrow page (a phone), so the page itself never overflows."""
    th = "".join(f"<th>{h(c)}</th>" for c in head)
    tbody = "".join("<tr>" + "".join(_html_cell(c) for c in r) + "</tr>" for r in body)
    opening = f'<table class="{cls}">' if cls else "<table>"
    return f'<div class="wide">{opening}<thead><tr>{th}</tr></thead><tbody>{tbody}</tbody></table></div>'


def _html_block(b: Block) -> str:
    if isinstance(b, Heading):
        return f"<h{b.level}>{h(b.text)}</h{b.level}>"
    if isinstance(b, Para):
        return f"<p>{_html_inline(b.text)}</p>"
    if isinstance(b, Bullets):
        items = []
        for it in b.items:
            item = it if isinstance(it, Item) else Item(it)
            sub = "<ul>" + "".join(f"<li>{_html_inline(s)}</li>" for s in item.sub) + "</ul>" if item.sub else ""
            items.append(f"<li>{_html_inline(item.text)}{sub}</li>")
        return "<ul>" + "".join(items) + "</ul>"
    if isinstance(b, Table):
        if b.split is None or b.split >= len(b.head):
            return html_table(b.head, b.rows, b.cls)
        cut = b.split
        first = html_table(b.head[:cut], [r[:cut] for r in b.rows], b.cls)
        words = f"<p>{h(b.split_words)}</p>" if b.split_words else ""
        k = b.key
        return first + words + html_table((b.head[k], *b.head[cut:]), [(r[k], *r[cut:]) for r in b.rows],
                                          b.split_cls)
    if isinstance(b, Figure):
        return ((f"<h3>{h(b.title)}</h3>" if b.title else "") + (f"<p>{h(b.caption)}</p>" if b.caption else "")
                + "".join(b.drawings))
    if isinstance(b, Pre):
        return f"<pre>{html.escape(printable(b.text, newlines=True))}</pre>"
    return '<div class="warn">' + "".join(_html_block(x) for x in b.blocks) + "</div>"


def html_head(title: str) -> str:
    """The page's head and opening: the report's styling, readable on a phone."""
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>"
            '<meta name=viewport content="width=device-width, initial-scale=1">'
            f"<title>{h(title)}</title><style>{CSS}</style></head><body>")


def to_html(doc: Document) -> str:
    """The document as one self-contained HTML page (its styling inline, no script, no external resource)."""
    parts = [html_head(doc.title), f"<h1>{h(doc.title)}</h1>"]
    parts += [x for x in (_html_block(b) for b in doc.blocks) if x]
    parts.append("</body></html>\n")
    return "\n".join(parts)

"""The typed report document (present/document.py): every block written once, rendered as Markdown and HTML, with
untrusted text escaped for each format and nothing a format cannot show lost without its fallback."""

from __future__ import annotations

import io
import re

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from arenatui.present.document import (
    Bullets,
    Callout,
    Code,
    Document,
    Emph,
    Figure,
    Heading,
    Item,
    Link,
    Mark,
    Para,
    Pre,
    Strong,
    md_escape,
    table,
    to_html,
    to_markdown,
)
from arenatui.present.terminal import print_document

HOSTILE = "<script>x</script> **b** _i_ [l](javascript:y) a|b `c` \x1b[31mred"


def _doc(text: str) -> Document:
    return Document(text, (
        Heading(text), Para(text), Para((Strong(text), ": ", Mark(text, "open"), " ", Code(text), Emph(text))),
        Bullets((text, Item((Strong(text),), (text,)))),
        table(("model", text), [[text, Mark(text, "eliminated")], ["m", Link("https://x.example/?a=1&b=2")]]),
        Figure(("<svg></svg>",), (Para(text),), title=text, caption=text), Callout((Para(text),)),
        Pre('{"k": "' + text.replace("\x1b", "\\u001b") + '"}', "json")))


def test_untrusted_text_is_escaped_in_every_block_of_both_formats() -> None:
    doc = _doc(HOSTILE)
    md, page = to_markdown(doc), to_html(doc)
    for out in (md, page):
        assert "\x1b" not in out
    prose = md[:md.index("```json")]  # in a fenced block every character is literal
    assert not re.search(r"(?<!\\)<", prose) and "\\<script>" in md and "\\*\\*b\\*\\*" in md and "a\\|b" in md
    assert "\\[l\\](javascript:y)" in md and "\\`c\\`" in md and "\\_i\\_" in md
    assert "<script>" not in page and "&lt;script&gt;" in page and 'href="javascript' not in page
    assert '<a href="https://x.example/?a=1&amp;b=2" rel="noopener noreferrer">' in page
    assert '<td class="eliminated">' in page and '<span class="open">' in page and "<code>" in page
    assert '<div class="warn">' in page and "<pre>" in page and "<svg></svg>" in page


def test_a_figure_is_drawn_in_html_and_its_text_stands_in_for_it_in_markdown() -> None:
    doc = Document("t", (Figure(("<svg>drawn</svg>",), (table(("a",), [["the figures"]]),), title="chart"),))
    assert "drawn" not in to_markdown(doc) and "| the figures |" in to_markdown(doc)
    page = to_html(doc)
    assert "<svg>drawn</svg>" in page and "<h3>chart</h3>" in page and "the figures" not in page


def test_a_split_table_is_two_tables_in_html_with_its_key_column_in_both_and_one_in_markdown() -> None:
    t = table(("#", "model", "quality", "spend"), [["1", "m1", "0.9", "$1"], ["2", "m2", "0.8", "$2"]],
              split=3, split_words="Spend (same order):", key=1)
    doc = Document("t", (t,))
    md = to_markdown(doc)
    assert "| # | model | quality | spend |" in md and sum(ln.startswith("|---") for ln in md.splitlines()) == 1
    page = to_html(doc)
    assert page.count("<table") == 2 and "<p>Spend (same order):</p>" in page
    second = page[page.index("Spend (same order)"):]
    assert "<th>model</th><th>spend</th>" in second and "<td>m1</td><td>$1</td>" in second


def test_markdown_keeps_words_readable_and_escapes_only_what_would_be_markup() -> None:
    assert md_escape("max_tokens and timeout_s") == "max_tokens and timeout_s"  # intraword: never emphasis
    assert md_escape("_x_") == "\\_x\\_" and md_escape("P(a > b)") == "P(a > b)"
    assert md_escape("# not a heading", line_start=True) == "\\# not a heading"
    assert md_escape("> not a quote", line_start=True) == "\\> not a quote"
    assert md_escape("1. not a list", line_start=True) == "1\\. not a list"
    assert md_escape("- not an item", line_start=True) == "\\- not an item"
    assert md_escape("-0.5", line_start=True) == "-0.5"
    md = to_markdown(Document("t", (Bullets(("# a model named like a heading",)),)))
    assert "- \\# a model named like a heading" in md


@given(st.text(max_size=40))
def test_any_text_renders_without_control_characters_or_raw_tags(text: str) -> None:
    doc = _doc(text)
    md, page = to_markdown(doc), to_html(doc)
    for out in (md, page):
        assert not any(ord(c) < 32 and c not in "\n\t" for c in out)
    body = page[page.index("<body>"):]
    assert "<" + "script" not in body.replace("&lt;script", "")  # every tag is ours


def test_the_terminal_renders_prose_through_markdown_and_fits_each_table() -> None:
    doc = Document("Report: m", (Heading("Section"), Para((Strong("bold"), " words")),
                                 table(tuple(f"col{i}" for i in range(12)), [[f"v{i}" for i in range(12)]]),
                                 Figure(("<svg/>",), (table(("a", "b"), [["x", "y"]]),))))
    buf = io.StringIO()
    print_document(Console(file=buf, width=60, color_system=None), doc, elsewhere=" (the file has them)")
    out = buf.getvalue()
    assert "Report: m" in out and "Section" in out and "bold words" in out and "**" not in out
    assert "col0" in out and "Left out at 60 columns" in out and "(the file" in out
    assert "<svg" not in out and "┃ a" in out  # a figure's table, fitted like the others

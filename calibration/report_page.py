"""The pieces every self-contained HTML report is built of, defined once: the style sheet, a
page's opening, a table, a box that scrolls sideways and a collapsed list.

No scripts, fonts or styles are fetched from anywhere: a page works offline and can be mailed.
Every piece of text from the data is escaped with the standard library's :func:`html.escape`.
Nothing here loads numpy, so a command that writes a page starts fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

# Laid out for a 1400 px window: prose stays at a readable measure; a table wider than the
# page scrolls inside its own box (.wide) instead of pushing the page sideways; a long list
# is a collapsed <details> that scrolls inside a box of bounded height (.list) when opened.
STYLE = """
body{font-family:system-ui,sans-serif;max-width:1320px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}
p{max-width:60em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}td{overflow-wrap:break-word}td:first-child{max-width:24em}svg{display:block;margin:.5em 0}
.wide{max-width:100%;overflow-x:auto}.wide table{font-size:.9em}
details{margin:.5em 0}summary{cursor:pointer;font-weight:600}
.list{max-height:30em;overflow:auto;display:inline-block;max-width:100%}
.list th{position:sticky;top:0;background:#f6f6f6}
.note{color:#555;font-size:.9em}
"""


def page_head(title: str) -> str:
    """A page's opening up to its ``<title>`` (escaped); the style sheet and body follow.

    >>> page_head("A & B")
    "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>A &amp; B</title>"
    """
    return f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}</title>"


def wide(html: str) -> str:
    """``html`` (a table) in a box that scrolls sideways when it is wider than the page."""
    return f"<div class='wide'>{html}</div>"


def collapsed(summary: str, html: str) -> str:
    """``html`` (a long table) folded under a one-line ``summary`` (plain text, escaped here),
    in a box of bounded height once opened."""
    return f"<details><summary>{escape(summary)}</summary><div class='list'>{html}</div></details>"


def html_table(header: Sequence[object], rows: Sequence[Sequence[object]]) -> str:
    """An HTML table of ``header`` and ``rows``, every cell escaped (the reports' one table).

    >>> html_table(["a<b"], [[1], ["&"]])
    '<table><tr><th>a&lt;b</th></tr><tr><td>1</td></tr><tr><td>&amp;</td></tr></table>'
    """
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"

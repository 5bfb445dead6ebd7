"""A query's other fields (a TREC topic's description and narrative, the extra fields of a
JSONL or CSV query file) as safe HTML for the labelling page.

The narrative is what defines relevance for a TREC assessor, so it is shown under the query.
Every key and value is untrusted and escaped; the only tags in the output are written here.
Description and narrative come first, labelled in words; other fields follow under their own
name. A long field is collapsed (a ``<details>`` element) so the grade buttons stay where they
are; its opening words show in the summary.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

#: How the fields of a TREC topic are labelled; other fields show under their own name.
LABELS: dict[str, str] = {"desc": "Description", "description": "Description", "narr": "Narrative", "narrative": "Narrative"}

#: A field longer than this (in characters) is collapsed, its opening words in the summary.
LONG = 240
_PREVIEW = 120
_STYLE = "font-size:0.9rem;margin-bottom:0.5rem"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _ordered(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    fields = [(k, _text(v)) for k, v in meta.items() if v not in (None, "", [], {})]
    first = [f for f in fields if f[0].lower() in LABELS]
    first.sort(key=lambda f: 0 if LABELS[f[0].lower()] == "Description" else 1)
    return first + sorted((f for f in fields if f[0].lower() not in LABELS), key=lambda f: f[0])


def query_fields_html(meta: Mapping[str, Any]) -> str:
    """The query's fields as HTML, escaped; empty when it has none.

    >>> query_fields_html({"narr": "<b>only</b> docs & more", "desc": "Find it."})
    '<div class="gp-query-fields" style="font-size:0.9rem;margin-bottom:0.5rem"><div><strong>Description</strong> Find it.</div><div><strong>Narrative</strong> &lt;b&gt;only&lt;/b&gt; docs &amp; more</div></div>'
    >>> query_fields_html({})
    ''
    """
    parts = []
    for key, value in _ordered(meta):
        label = html.escape(LABELS.get(key.lower(), key))
        if len(value) <= LONG:
            parts.append(f"<div><strong>{label}</strong> {html.escape(value)}</div>")
            continue
        preview = html.escape(value[:_PREVIEW].rsplit(" ", 1)[0]) + " …"
        parts.append(
            f"<details><summary><strong>{label}</strong> {preview}</summary>"
            f"<div>{html.escape(value)}</div></details>"
        )
    return f'<div class="gp-query-fields" style="{_STYLE}">{"".join(parts)}</div>' if parts else ""

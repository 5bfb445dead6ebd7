"""What the pages of the tasks on answers share (claims, correctness, answer relevance).

Each page draws its item with the verdict pages' one frame (``verdict_page.item_frame``): a
single escaped HTML element holding the item counter, the question, the judged text (the
response, with the claim marked on the claims page) and what it is weighed against (the
contexts, or the reference) in a box below that scrolls on its own; so a new item replaces
the old one whole, and at 1400x900 the response and the keys beside it stay in view however
long the contexts are. The progress, the note, the keys, back, skip and the rubric come from
``verdict_page.render_task``, as on the faithfulness page. The annotator sees texts and their
own work only: no system name, answer id, judge or other person's verdict (a ``Card``
carries none of them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

import sqlite_utils
import streamlit as st

from labeler.store.vocabulary import Annotator
from labeler.store.verdict_queue import Card
from labeler.ui.pages.verdict_page import EMPTY_RESPONSE, Box, Choice, item_frame_html, render_task

# What these pages add to the frame's style: the claim's mark, a claim shown apart, and the
# contexts one under another in their box.
STYLE = """<style>
.gp-answer mark.gp-claim { background: rgba(250, 204, 21, 0.45); color: inherit; border-radius: 2px;
                           box-shadow: 0 0 0 1px rgba(202, 138, 4, 0.7); }
.gp-answer .gp-claim-apart { border-color: #ca8a04 !important; }
.gp-answer .gp-context + .gp-context { border-top: 1px dashed #ccc; margin-top: 0.6rem; padding-top: 0.6rem; }
.gp-answer .gp-context-head { display: block; font-size: 0.8rem; color: #666; white-space: normal; }
.gp-answer .gp-empty { color: #888; }
</style>"""


def text(value: str | None, *, empty: str | None = None) -> str:
    """An untrusted text as HTML: escaped (white space is kept by the box's style). With
    ``empty``, a text with nothing to see shows that caption in muted italics instead."""
    value = value or ""
    if empty is not None and not value.strip():
        return f'<em class="gp-empty">{escape(empty)}</em>'
    return escape(value)


def response(card: Card) -> str:
    """The item's response, escaped."""
    return text(card.response, empty=EMPTY_RESPONSE)


def box(heading: str, body: str, css_class: str) -> Box:
    """A box of the frame whose body is HTML this module escaped."""
    return Box(heading, "", css_class, html=body)


def response_box(card: Card, body: str | None = None) -> Box:
    return box("Response", response(card) if body is None else body, "gp-response")


def item_html(card: Card, judged: Sequence[Box], reading: Sequence[Box] = ()) -> str:
    """The whole item as one HTML element: the frame, inside this pages' style."""
    frame = item_frame_html(card.question, judged, reading, position=card.position, batch_size=card.batch_size)
    return f'{STYLE}<div class="gp-answer">{frame}</div>'


def render_answer_task(db: sqlite_utils.Database, user: Annotator, task: str, title: str, choices: Sequence[Choice],
                       boxes: Callable[[Card], tuple[Sequence[Box], Sequence[Box]]], shown: dict[str | None, str]) -> None:
    """Draw the annotator's current item of ``task`` (its ``boxes``: judged, and weighed against) and the keys."""
    render_task(db, user, task, title, choices, lambda card: st.html(item_html(card, *boxes(card))), shown.__getitem__)

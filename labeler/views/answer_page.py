"""What the pages of the tasks on answers share (claims, correctness, answer relevance).

Each page draws its item as one unit: a single escaped HTML element holding the question,
the response and what the response is weighed against (the contexts, or the reference),
so a new item replaces the old one whole and never shows under the old one's text. The
progress, the note, the keys, back, skip and the rubric come from ``verdict_page``, the
same as on the faithfulness page.

Layout: the texts stand in two columns, the one judged on the left and what it is weighed
against on the right. Every long text scrolls in its own box of bounded height, so at
1400x900 the response (with the claim) and the keys below it stay in view however long the
contexts are. The annotator sees texts and their own work only: no system name, answer id,
judge or other person's verdict (a ``Card`` carries none of them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

import sqlite_utils
import streamlit as st

from labeler.store.labels import Annotator
from labeler.store.verdict_queue import Card
from labeler.views.verdict_page import EMPTY_RESPONSE, Choice, render_task

# Style only, sent with each item in its one element. The scroll boxes' heights leave room,
# below them, for the progress bars, the note and every key, back and skip included
# (measured at 1400x900); the left column's boxes add up to the right one's height.
STYLE = """<style>
.block-container { padding-top: 2.5rem; }
.gp-answer { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem; align-items: start; }
.gp-answer.gp-single { grid-template-columns: minmax(0, 1fr); }
.gp-answer .gp-head { font-size: 0.8rem; color: #666; margin: 0 0 0.25rem; }
.gp-answer .gp-box { border: 1px solid #ddd; border-radius: 6px; padding: 0.6rem 0.9rem; margin-bottom: 0.6rem;
                     white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.45; overflow: auto; }
.gp-answer .gp-question { max-height: 5.5rem; }
.gp-answer .gp-claim-apart { max-height: 5.5rem; border-color: #ca8a04; }
.gp-answer .gp-main { max-height: calc(100vh - 40rem); min-height: 4rem; }
.gp-answer .gp-claim-apart ~ .gp-main { max-height: calc(100vh - 47rem); }
.gp-answer .gp-side { max-height: calc(100vh - 32rem); min-height: 6rem; }
.gp-answer.gp-single .gp-main { max-height: calc(100vh - 37rem); }
.gp-answer .gp-context + .gp-context { border-top: 1px dashed #ccc; margin-top: 0.6rem; padding-top: 0.6rem; }
.gp-answer .gp-context-head { display: block; font-size: 0.8rem; color: #666; white-space: normal; }
.gp-answer mark.gp-claim { background: rgba(250, 204, 21, 0.45); color: inherit; border-radius: 2px;
                           box-shadow: 0 0 0 1px rgba(202, 138, 4, 0.7); }
.gp-answer .gp-empty { color: #888; }
</style>"""


@dataclass(frozen=True, slots=True)
class Box:
    """One titled text of an item, already escaped HTML (``body``)."""

    heading: str
    body: str
    css_class: str  # what the box shows: gp-question, gp-response, gp-contexts, ...
    scroll: str = ""  # gp-main or gp-side: a long text scrolls inside the box, to a bounded height


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


def question_box(card: Card) -> Box:
    return Box("Question", text(card.question), "gp-question")


def response_box(card: Card, body: str | None = None) -> Box:
    return Box("Response", response(card) if body is None else body, "gp-response", "gp-main")


def item_html(main: Sequence[Box], side: Sequence[Box] = ()) -> str:
    """The whole item as one HTML block: ``main`` on the left, ``side`` on the right (or
    ``main`` alone across the page)."""

    def column(boxes: Sequence[Box]) -> str:
        return "".join(
            f'<div class="gp-head">{escape(b.heading)}</div>'
            f'<div class="{" ".join(filter(None, ("gp-box", b.css_class, b.scroll)))}">{b.body}</div>'
            for b in boxes)

    if not side:
        return f'{STYLE}<div class="gp-answer gp-single"><div>{column(main)}</div></div>'
    return f'{STYLE}<div class="gp-answer"><div>{column(main)}</div><div>{column(side)}</div></div>'


def render_answer_task(db: sqlite_utils.Database, user: Annotator, task: str, title: str, choices: Sequence[Choice],
                       boxes: Callable[[Card], tuple[Sequence[Box], Sequence[Box]]], shown: dict[str | None, str]) -> None:
    """Draw the annotator's current item of ``task`` (its ``boxes``: main and side) and the keys."""
    render_task(db, user, task, title, choices, lambda card: st.html(item_html(*boxes(card))), shown.__getitem__)

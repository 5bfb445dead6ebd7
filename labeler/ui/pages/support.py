"""The nugget support page: does the answer support this nugget?

Keys ``2`` SUPPORT, ``1`` PARTIAL_SUPPORT, ``0`` NOT_SUPPORT (the score each counts for, doubled:
support 1, partial 0.5, none 0), ``u`` back, ``s`` skip. An answer's nuggets come one after
another (``nugget_support.next_support_card``), so a person reads an answer once and judges all
its nuggets. The frame (``verdict_page.frame_html``) holds the counter (the nugget's place among
the answer's), the question and the nugget on top, and the answer below, filling the window
and scrolling on its own, with the nugget's words marked in it: however long the answer and
however many nuggets, the nugget, the answer and the keys stay in view at 1400x900.

Blind: the page shows the question, the answer, the nugget and the person's own work only,
never the system, the answer's id, a judge's verdict, where the nugget came from (people or a
judge) or anyone else's verdict (a ``SupportCard`` carries none of them). Every text is escaped.
"""

from __future__ import annotations

from html import escape

import sqlite_utils
import streamlit as st

from labeler.store.nugget_support import RUBRIC, SupportCard
from labeler.store.vocabulary import NOT_SUPPORT, PARTIAL_SUPPORT, SUPPORT, Annotator
from labeler.text import highlight, query_terms
from labeler.ui.pages.verdict_page import BOX, EMPTY_RESPONSE, Box, Choice, counter_html, frame_html, render_task

TASK = "nuggets"
CHOICES = (Choice(SUPPORT, "2 · Support", "2"), Choice(PARTIAL_SUPPORT, "1 · Partial support", "1"),
           Choice(NOT_SUPPORT, "0 · No support", "0"))
SHOWN = {None: "not judged yet", SUPPORT: "support", PARTIAL_SUPPORT: "partial support", NOT_SUPPORT: "no support"}

# What this page adds to the frame's style: the nugget stands out, its words are marked in the answer.
STYLE = """<style>
.gp-support .gp-nugget { border-color: #ca8a04 !important; font-weight: 600; }
.gp-support mark { background: rgba(250, 204, 21, 0.35); color: inherit; border-radius: 2px; }
.gp-support .gp-empty { color: #888; }
</style>"""


def answer_html(response: str, nugget: str) -> str:
    """The answer as escaped HTML, the nugget's words (its terms, no stop words) marked.

    >>> answer_html("Paris <b>is</b> the capital", "The capital is Paris")
    '<mark>Paris</mark> &lt;b&gt;is&lt;/b&gt; the <mark>capital</mark>'
    >>> answer_html("  ", "x")
    '<em class="gp-empty">(empty response)</em>'
    """
    if not response.strip():
        return f'<em class="gp-empty">{escape(EMPTY_RESPONSE)}</em>'
    return highlight(response, nugget) if query_terms(nugget) else escape(response)


def item_html(card: SupportCard) -> str:
    """The whole item as one HTML element: counter, question and nugget, then the answer."""
    counter = counter_html(f"This answer: nugget {card.nugget_number} of {card.nuggets}",
                           card.nugget_number / max(card.nuggets, 1))
    ask = (f'<div class="gp-heading">Question</div><div class="gp-question" style="{BOX}">{escape(card.question)}</div>'
           f'<div class="gp-heading" style="margin-top:0.5rem">Nugget: does the answer state this?</div>'
           f'<div class="gp-nugget" style="{BOX}">{escape(card.nugget)}</div>')
    answer = Box("Answer", "", "gp-response", html=answer_html(card.response, card.nugget))
    return f'{STYLE}<div class="gp-support">{frame_html(counter, ask, [answer])}</div>'


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current (answer, nugget), or a thank-you when none is left."""
    render_task(db, user, TASK, "Nugget support", CHOICES, lambda card: st.html(item_html(card)),  # type: ignore[arg-type]
                SHOWN.__getitem__, rubric=RUBRIC)

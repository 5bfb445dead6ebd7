"""The pairwise page: which of two responses is better? Keys ``a`` (left), ``b`` (right), ``t`` (tie).

The two responses stand side by side in a left/right order fixed per (annotator, item) by a
hash (``verdict_queue.slot_order``); the keys name the slots as shown, and the store records
the response a key stands for together with the order. Model names are never shown.
"""

from __future__ import annotations

import sqlite_utils
import streamlit as st

from labeler.store.labels import Annotator
from labeler.store.verdict_queue import Card
from labeler.views.verdict_page import EMPTY_RESPONSE, Choice, render_task, text_box

CHOICES = (Choice("left", "a · Left is better", "a"), Choice("right", "b · Right is better", "b"),
           Choice("tie", "t · Tie", "t"))
_SHOWN = {None: "not judged yet", "left": "left is better", "right": "right is better", "tie": "tie"}


def _draw(card: Card) -> None:
    text_box(card.question, "gp-question", "Question")
    if card.context:
        text_box(card.context, "gp-context", "Context")
    left, right = st.columns(2)
    with left:
        text_box(card.left or "", "gp-left", "Left (a)", empty=EMPTY_RESPONSE)
    with right:
        text_box(card.right or "", "gp-right", "Right (b)", empty=EMPTY_RESPONSE)


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current pairwise item, or a thank-you when none is left."""
    render_task(db, user, "pairwise", "Pairwise", CHOICES, _draw, _SHOWN.__getitem__)

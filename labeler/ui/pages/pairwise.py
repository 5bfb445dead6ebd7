"""The pairwise page: which of two responses is better? Keys ``a`` (left), ``b`` (right), ``t`` (tie).

The two responses stand side by side in a left/right order fixed per (annotator, item) by a
hash (``verdict_queue.slot_order``); the keys name the slots as shown, and the store records
the response a key stands for together with the order. Model names are never shown. Each
response scrolls in a box of its own, the context (if any) below them, so both responses and
the keys stay in view (``verdict_page.item_frame``).
"""

from __future__ import annotations

import sqlite_utils

from labeler.store.vocabulary import Annotator
from labeler.store.verdict_queue import Card
from labeler.ui.pages.verdict_page import EMPTY_RESPONSE, Box, Choice, item_frame, render_task

CHOICES = (Choice("left", "a · Left is better", "a"), Choice("right", "b · Right is better", "b"),
           Choice("tie", "t · Tie", "t"))
_SHOWN = {None: "not judged yet", "left": "left is better", "right": "right is better", "tie": "tie"}


def _draw(card: Card) -> None:
    answers = [Box("Left (a)", card.left or "", "gp-left", EMPTY_RESPONSE),
               Box("Right (b)", card.right or "", "gp-right", EMPTY_RESPONSE)]
    item_frame(card.question, answers, [Box("Context", card.context)] if card.context else [],
               position=card.position, batch_size=card.batch_size)


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current pairwise item, or a thank-you when none is left."""
    render_task(db, user, "pairwise", "Pairwise", CHOICES, _draw, _SHOWN.__getitem__)

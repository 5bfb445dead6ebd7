"""The correctness page: does the response give the reference's answer? Keys ``1`` CORRECT, ``0`` INCORRECT.

The question on top, the response under it, the reference answer below; no contexts
(correctness is weighed against the reference only).
"""

from __future__ import annotations

import sqlite_utils

from labeler.store.vocabulary import Annotator
from labeler.store.verdict_queue import Card
from labeler.ui.pages.answer_page import Box, box, render_answer_task, response_box, text
from labeler.ui.pages.verdict_page import Choice

CHOICES = (Choice("CORRECT", "1 · Correct", "1"), Choice("INCORRECT", "0 · Incorrect", "0"))
SHOWN = {None: "not judged yet", "CORRECT": "correct", "INCORRECT": "incorrect"}


def boxes(card: Card) -> tuple[list[Box], list[Box]]:
    """The response, and the reference below it."""
    return [response_box(card)], [box("Reference answer", text(card.reference), "gp-reference")]


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current answer to weigh against its reference, or a thank-you."""
    render_answer_task(db, user, "correctness", "Correctness", CHOICES, boxes, SHOWN)

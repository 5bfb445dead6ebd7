"""The answer relevance page: does the response address the question? Keys ``1`` ADDRESSES, ``0`` MISSES.

The question and the response only: whether the response is right does not matter here.
"""

from __future__ import annotations

import sqlite_utils

from labeler.store.labels import Annotator
from labeler.store.verdict_queue import Card
from labeler.views.answer_page import Box, render_answer_task, response_box
from labeler.views.verdict_page import Choice

CHOICES = (Choice("ADDRESSES", "1 · Addresses the question", "1"), Choice("MISSES", "0 · Misses the question", "0"))
SHOWN = {None: "not judged yet", "ADDRESSES": "addresses the question", "MISSES": "misses the question"}


def boxes(card: Card) -> tuple[list[Box], list[Box]]:
    """The response alone under the question."""
    return [response_box(card)], []


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current answer to weigh against its question, or a thank-you."""
    render_answer_task(db, user, "answer-relevance", "Answer relevance", CHOICES, boxes, SHOWN)

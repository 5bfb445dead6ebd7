"""The answer relevance page: does the response address the question? Keys ``1`` ADDRESSES, ``0`` MISSES,
``d`` DECLINES (the response declines to answer: an abstention, one keystroke like the others).

The question and the response only: whether the response is right does not matter here.
"""

from __future__ import annotations

import sqlite_utils

from labeler.store.vocabulary import Annotator
from labeler.store.verdict_queue import Card
from labeler.store.vocabulary import DECLINES
from labeler.ui.pages.answer_page import Box, render_answer_task, response_box
from labeler.ui.pages.verdict_page import Choice

CHOICES = (Choice("ADDRESSES", "1 · Addresses the question", "1"), Choice("MISSES", "0 · Misses the question", "0"),
           Choice(DECLINES, "d · Declines to answer", "d"))
SHOWN = {None: "not judged yet", "ADDRESSES": "addresses the question", "MISSES": "misses the question",
         DECLINES: "declines to answer"}


def boxes(card: Card) -> tuple[list[Box], list[Box]]:
    """The response alone under the question."""
    return [response_box(card)], []


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current answer to weigh against its question, or a thank-you."""
    render_answer_task(db, user, "answer-relevance", "Answer relevance", CHOICES, boxes, SHOWN)

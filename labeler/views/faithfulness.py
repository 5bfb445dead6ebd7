"""The faithfulness page: is the response supported by the contexts? Keys ``1`` / ``0``."""

from __future__ import annotations

import sqlite_utils

from labeler.store.labels import Annotator
from labeler.store.verdict_queue import Card
from labeler.views.verdict_page import EMPTY_RESPONSE, Choice, render_task, text_box

CHOICES = (Choice("SUPPORTED", "1 · Supported", "1"), Choice("UNSUPPORTED", "0 · Unsupported", "0"))


def _draw(card: Card) -> None:
    text_box(card.question, "gp-question", "Question")
    for n, context in enumerate(card.contexts, start=1):
        text_box(context, "gp-context", f"Context {n} of {len(card.contexts)}")
    text_box(card.response or "", "gp-response", "Response", empty=EMPTY_RESPONSE)


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current faithfulness item, or a thank-you when none is left."""
    render_task(db, user, "faithfulness", "Faithfulness", CHOICES, _draw,
                lambda verdict: "not judged yet" if verdict is None else verdict.lower())

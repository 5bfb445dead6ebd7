"""The faithfulness page: is the response supported by the contexts? Keys ``1`` / ``0``.

The response stands right under the question and the contexts below it, in a box that
scrolls on its own (``verdict_page.item_frame``), so the response and the keys stay in view
however long the contexts.
"""

from __future__ import annotations

import sqlite_utils

from labeler.store.vocabulary import Annotator
from labeler.store.verdict_queue import Card
from labeler.ui.pages.verdict_page import EMPTY_RESPONSE, Box, Choice, item_frame, render_task

CHOICES = (Choice("SUPPORTED", "1 · Supported", "1"), Choice("UNSUPPORTED", "0 · Unsupported", "0"))


def _draw(card: Card) -> None:
    contexts = [Box(f"Context {n} of {len(card.contexts)}", text) for n, text in enumerate(card.contexts, start=1)]
    item_frame(card.question, [Box("Response", card.response or "", "gp-response", EMPTY_RESPONSE)], contexts,
               position=card.position, batch_size=card.batch_size)


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current faithfulness item, or a thank-you when none is left."""
    render_task(db, user, "faithfulness", "Faithfulness", CHOICES, _draw,
                lambda verdict: "not judged yet" if verdict is None else verdict.lower())

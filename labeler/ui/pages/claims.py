"""The claims page: is this claim of the response supported by the contexts?

Keys ``1`` SUPPORTED, ``0`` UNSUPPORTED, ``x`` NOT_ONE_CLAIM: the claim is not one checkable
claim (two facts joined, vague, a question), which flags how the answer was split rather than
the answer. The claim is highlighted inside the full response (``highlight.claim_span``: word
for word, else ignoring white space and case). A claim whose highlight starts too far down a
long response to be in view is also shown in a box of its own above the response; a claim not
found there is shown only in that box, and nothing is highlighted. The contexts stand below, in
a box that scrolls on its own. The rubric beside the keys (``verdict_queue.RUBRICS``) says the
same in the same words.
"""

from __future__ import annotations

import sqlite_utils

from labeler.text import claim_html
from labeler.store.vocabulary import Annotator
from labeler.store.verdict_queue import Card
from labeler.store.vocabulary import NOT_ONE_CLAIM
from labeler.ui.pages.answer_page import Box, box, render_answer_task, response_box, text
from labeler.ui.pages.verdict_page import Choice

CHOICES = (Choice("SUPPORTED", "1 · Supported", "1"), Choice("UNSUPPORTED", "0 · Unsupported", "0"),
           Choice(NOT_ONE_CLAIM, "x · Not one claim", "x"))
SHOWN = {None: "not judged yet", "SUPPORTED": "supported", "UNSUPPORTED": "unsupported", NOT_ONE_CLAIM: "not one claim"}
#: Heading of the claim when the response does not contain it (so nothing is highlighted).
CLAIM_APART = "Claim (not found as such in the response: nothing is highlighted there)"
#: Heading of the claim when its highlight starts too far down the response to be in view
#: before the response box is scrolled.
CLAIM_FURTHER = "Claim (highlighted further down the response)"
#: Characters of the response that its box shows before it scrolls, at 1400x900.
IN_VIEW = 500


def contexts_html(contexts: tuple[str, ...]) -> str:
    """Every context, escaped, each under its own small heading, for one scrolling box."""
    if not contexts:
        return text("", empty="(no contexts)")
    return "".join(f'<div class="gp-context"><span class="gp-context-head">Context {n} of {len(contexts)}</span>'
                   f"{text(context)}</div>" for n, context in enumerate(contexts, start=1))


def boxes(card: Card) -> tuple[list[Box], list[Box]]:
    """The question, the response with the claim marked (or the claim apart), and the contexts."""
    judged = []
    marked, span = claim_html(card.response or "", card.claim or "")
    if span is None or span[0] > IN_VIEW:
        judged.append(box(CLAIM_APART if span is None else CLAIM_FURTHER, text(card.claim), "gp-claim-apart"))
    judged.append(response_box(card, None if span is None else marked))
    return judged, [box("Contexts", contexts_html(card.contexts), "gp-contexts")]


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current claim, or a thank-you when none is left."""
    render_answer_task(db, user, "claims", "Claims", CHOICES, boxes, SHOWN)

"""The relevance rubric, versioned by content hash, with an append-only history.

Every label records the hash of the rubric in force when it was made, because a rubric edit
changes what the grades mean. Going back to an earlier text appends a change rather than
re-dating the earlier one, so "which rubric was in force when" is never rewritten.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import sqlite_utils

from labeler.store.access import caller_id, require_admin
from labeler.store.connection import transaction
from labeler.store.errors import StoreError
from labeler.store.schema import now
from labeler.store.vocabulary import Caller


@dataclass(frozen=True, slots=True)
class Rubric:
    hash: str  # sha256 of the text, first 12 hex digits
    text: str
    created_at: str


# A section headed "For annotators" is for people only: judge prompts leave it out.
DEFAULT_RUBRIC = """\
# Relevance rubric

Judge the chunk against the query alone: how much of an answer to the query does it hold?

- **3 - Fully answers.** The chunk on its own answers the query completely and correctly.
- **2 - Partly answers.** The chunk answers part of the query, or answers it only together
  with information that is not in the chunk.
- **1 - On topic.** The chunk is about the query's subject but does not answer it.
- **0 - Irrelevant.** The chunk is unrelated to the query, or only shares words with it.

Judge what the chunk says, not how it is written. When torn between two grades, choose the
lower one.

## For annotators

When torn between two grades, leave a note. Skip (`s`) an item you cannot judge yet: it comes
back after your other items.
"""


def rubric_hash(text: str, digits: int = 12) -> str:
    """A rubric's version: the first ``digits`` hex digits of the sha256 of its text.

    12 for the relevance rubric (the key of ``rubrics``, stored with every judgment); the
    verdict pages' rubrics are stored with 16 (:func:`labeler.store.verdict_queue.verdict_rubric_hash`).
    Stored hashes keep their length: a hash names a text it was computed from.

    >>> rubric_hash("grade 0-3"), len(rubric_hash("grade 0-3", 16))
    ('a63c47674f0d', 16)
    """
    return hashlib.sha256(text.encode()).hexdigest()[:digits]


def current_rubric(db: sqlite_utils.Database) -> Rubric:
    """The rubric in force (``created_at``: since when), else the default (``created_at``
    empty until a label first uses it)."""
    row = db.execute(
        "SELECT r.hash, r.text, c.at FROM rubric_changes c JOIN rubrics r ON r.hash = c.hash "
        "ORDER BY c.id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return Rubric(rubric_hash(DEFAULT_RUBRIC), DEFAULT_RUBRIC, "")
    return Rubric(*row)


def _put_in_force(db: sqlite_utils.Database, digest: str, text: str, at: str, annotator_id: int | None) -> None:
    db.execute(
        "INSERT OR IGNORE INTO rubrics (hash, text, created_at, annotator_id) VALUES (?, ?, ?, ?)",
        [digest, text, at, annotator_id],
    )
    db.execute("INSERT INTO rubric_changes (hash, at, annotator_id) VALUES (?, ?, ?)", [digest, at, annotator_id])


def rubric_in_use(db: sqlite_utils.Database) -> str:
    """The current rubric's hash, storing the default the first time a label needs it."""
    rubric = current_rubric(db)
    if not rubric.created_at:
        _put_in_force(db, rubric.hash, rubric.text, now(), None)
    return rubric.hash


def set_rubric(db: sqlite_utils.Database, text: str, *, caller: Caller) -> Rubric:
    """Make ``text`` the rubric in force (admin only); the change records who made it.

    A text used before keeps its hash; making it current again appends a change, so the
    history of which rubric was in force when is never rewritten.

    Raises:
        StoreError: empty text, or a caller who is not an admin.
    """
    require_admin(db, caller)
    if not text.strip():
        raise StoreError("rubric text is empty")
    digest, at = rubric_hash(text), now()
    with transaction(db):
        current = current_rubric(db)
        if current.created_at and current.hash == digest:
            return current
        _put_in_force(db, digest, text, at, caller_id(caller))
    return Rubric(digest, text, at)

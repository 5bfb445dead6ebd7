"""Annotators, assignment, judgments, skips, adjudications and rubrics.

This module is the contract between the labelling app and the database. The app and the CLI
call only these functions; every one is plain Python over a ``sqlite_utils.Database`` opened
with ``labeler.store.connect``.

Blindness: nothing here returns a pool entry's sources, ranks or priority, or another
annotator's labels, to a non-admin caller. ``Item`` carries only what the annotator may see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import sqlite_utils

Role = Literal["annotator", "admin"]

#: The graded relevance scale, shown on the labelling page and in the rubric.
GRADES: dict[int, str] = {
    0: "Irrelevant",
    1: "On topic",
    2: "Partly answers",
    3: "Fully answers",
}


@dataclass(frozen=True, slots=True)
class Annotator:
    id: int
    name: str
    role: Role
    active: bool


@dataclass(frozen=True, slots=True)
class Item:
    """One (query, chunk) as an annotator sees it, with nothing about where it came from."""

    query_id: str
    doc_id: str
    query_text: str
    doc_title: str
    doc_text: str
    position: int  # 1-based place of this item in the annotator's batch for this query
    batch_size: int  # items of this query assigned to this annotator
    relevance: int | None  # this annotator's current (latest) grade, if any
    note: str  # this annotator's latest note on it


@dataclass(frozen=True, slots=True)
class Progress:
    done: int  # items this annotator has labelled (skips do not count)
    assigned: int  # items assigned to this annotator so far
    query_done: int  # of the current query's batch
    query_total: int


@dataclass(frozen=True, slots=True)
class Judgment:
    """The latest label of one annotator on one item."""

    query_id: str
    doc_id: str
    annotator: str
    relevance: int
    at: str
    seconds: float | None
    note: str


@dataclass(frozen=True, slots=True)
class Rubric:
    hash: str  # sha256 of the text, first 12 hex digits
    text: str
    created_at: str


# ---------------------------------------------------------------------------------------------
# The contract. Every function below is implemented in this module; the app and the CLI call
# nothing else. Writes are one short transaction each (``labeler.store.transaction``).
# ---------------------------------------------------------------------------------------------


def add_annotator(db: sqlite_utils.Database, name: str, role: Role = "annotator") -> tuple[Annotator, str]:
    """Create an annotator; return it and its one-time access token (only a salted hash is kept)."""
    raise NotImplementedError


def authenticate(db: sqlite_utils.Database, token: str) -> Annotator | None:
    """The active annotator holding ``token``, or None (constant-time comparison)."""
    raise NotImplementedError


def list_annotators(db: sqlite_utils.Database) -> list[Annotator]:
    raise NotImplementedError


def set_active(db: sqlite_utils.Database, annotator_id: int, active: bool) -> None:
    raise NotImplementedError


def next_item(db: sqlite_utils.Database, annotator_id: int) -> Item | None:
    """The annotator's next unlabelled, unskipped item, assigning a new query batch when the
    current one is done and reserving single-label items; None when there is no work left."""
    raise NotImplementedError


def previous_item(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str) -> Item | None:
    """The item shown before (query_id, doc_id) in this annotator's order (the `u` key)."""
    raise NotImplementedError


def get_item(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str) -> Item:
    """One of this annotator's assigned items; raises StoreError if it is not theirs."""
    raise NotImplementedError


def record_judgment(
    db: sqlite_utils.Database,
    annotator_id: int,
    query_id: str,
    doc_id: str,
    relevance: int,
    seconds: float | None,
    note: str = "",
) -> int:
    """Append one label (with the current rubric hash); return its row id."""
    raise NotImplementedError


def record_skip(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str, seconds: float | None) -> None:
    raise NotImplementedError


def progress(db: sqlite_utils.Database, annotator_id: int, query_id: str | None = None) -> Progress:
    raise NotImplementedError


def latest_judgments(db: sqlite_utils.Database) -> list[Judgment]:
    """The latest label per (query_id, doc_id, annotator), every annotator (admin use)."""
    raise NotImplementedError


def current_rubric(db: sqlite_utils.Database) -> Rubric:
    raise NotImplementedError


def set_rubric(db: sqlite_utils.Database, text: str, annotator_id: int | None = None) -> Rubric:
    raise NotImplementedError

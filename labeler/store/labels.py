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

"""The admin side of labelling: progress, the overlap for agreement, adjudication, export.

Every function here is admin only: it takes the required keyword ``caller`` (the signed-in
``Annotator`` or id, or ``OWNER`` for the project owner working on the file directly, the CLI)
and raises ``StoreError`` unless that caller is an active admin as the database says now.

Agreement statistics are not computed here: the current labels (``current_judgments``) go to
``calibration.project_report``; ``overlap_labels`` gives the aligned label pairs for callers
that want them raw.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from typing import TextIO

import sqlite_utils

from labeler.store.access import caller_id, require_admin
from labeler.store.connection import transaction
from labeler.store.errors import StoreError
from labeler.store.schema import now
from labeler.store.settings import get_settings
from labeler.store.vocabulary import KINDS, TASKS, Caller, Role, check_grade


@dataclass(frozen=True, slots=True)
class AnnotatorProgress:
    """One annotator's work.

    ``labels_per_hour`` is per hour on screen (labels and skips), so breaks do not count;
    ``median_seconds`` is over every label row, including changed labels. Both are None
    before the first timed label.
    """

    annotator_id: int
    name: str
    role: Role
    active: bool
    done: int  # pool entries labelled (at least once), in the app or imported
    assigned: int  # items in their queue, labelled or not
    labels_per_hour: float | None
    median_seconds: float | None


@dataclass(frozen=True, slots=True)
class QueryProgress:
    query_id: str
    done: int  # pool entries with at least one label
    assigned: int  # pool entries handed out to at least one annotator
    pool_size: int


@dataclass(frozen=True, slots=True)
class TaskProgress:
    """One task's labelling, imported labels and verdicts included.

    ``items`` are the task's items (pool entries for relevance, verdict items otherwise);
    ``labelled`` those with a current label from at least one person; ``overlap_done`` those
    labelled by at least ``overlap_k`` people (the agreement sample so far); ``per_annotator``
    the items each person has labelled (name -> count, everyone listed, by id).
    """

    task: str
    items: int
    labelled: int
    overlap_done: int
    overlap_k: int
    per_annotator: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class ProgressReport:
    annotators: tuple[AnnotatorProgress, ...]
    queries: tuple[QueryProgress, ...]  # in query import order; queries with a pool only
    tasks: tuple[TaskProgress, ...] = ()  # one per task, in TASKS order


@dataclass(frozen=True, slots=True)
class OverlapLabel:
    """The current labels of two annotators on one item (names in sorted order)."""

    query_id: str
    doc_id: str
    annotator_a: str
    annotator_b: str
    relevance_a: int
    relevance_b: int


@dataclass(frozen=True, slots=True)
class Disagreement:
    """An item whose current labels differ and that has no adjudication yet."""

    query_id: str
    doc_id: str
    query_text: str
    doc_title: str
    doc_text: str
    labels: tuple[tuple[str, int, str], ...]  # (annotator, relevance, note), by annotator name


@dataclass(frozen=True, slots=True)
class Adjudication:
    """The final grade an admin gave an item (the latest adjudication row of the item)."""

    query_id: str
    doc_id: str
    admin: str
    relevance: int
    note: str
    at: str


# The current label of each (item, annotator).
_CURRENT = """
SELECT j.query_id, j.doc_id, n.name, j.relevance, j.note
FROM current_judgments j JOIN annotators n ON n.id = j.annotator_id
"""


def _current_by_item(db: sqlite_utils.Database) -> dict[tuple[str, str], list[tuple[str, int, str]]]:
    items: dict[tuple[str, str], list[tuple[str, int, str]]] = defaultdict(list)
    for query_id, doc_id, name, relevance, note in db.execute(_CURRENT):
        items[(query_id, doc_id)].append((name, relevance, note))
    for labels in items.values():
        labels.sort()
    return items


def progress_report(db: sqlite_utils.Database, *, caller: Caller) -> ProgressReport:
    """Progress per annotator (done, assigned, labels/hour, median seconds), per query and per task.

    Its counts are the ones the store keeps as it writes (migration ``m23_progress_counts``), so
    the report costs the same on a project of any size.
    """
    require_admin(db, caller)
    # Done counts every current label, imported ones included (an import assigns nothing).
    assigned_to = dict(db.execute("SELECT annotator_id, n FROM assignment_counts"))
    by_task = _labelled_by(db)
    done_by = by_task["relevance"]
    people = []
    for annotator_id, name, role, active in db.execute("SELECT id, name, role, active FROM annotators ORDER BY id"):
        assigned, done = assigned_to.get(annotator_id, 0), done_by.get(annotator_id, 0)
        n_timed, timed_seconds, median = _timed(db, annotator_id)
        skipped = db.execute("SELECT sum(seconds) FROM skips WHERE annotator_id = ?", [annotator_id]).fetchone()[0]
        on_screen = timed_seconds + (skipped or 0.0)
        people.append(
            AnnotatorProgress(
                annotator_id,
                name,
                role,
                bool(active),
                done,
                assigned,
                3600 * n_timed / on_screen if n_timed and on_screen > 0 else None,
                median,
            )
        )
    return ProgressReport(tuple(people), tuple(_query_progress(db)), _task_progress(db, by_task))


_TIMED = "FROM judgments INDEXED BY judgments_timed WHERE annotator_id = ? AND seconds IS NOT NULL"


def _timed(db: sqlite_utils.Database, annotator_id: int) -> tuple[int, float, float | None]:
    """A person's timed label rows: how many, their seconds in all, and the median (None when none),
    read from the index of timed labels (the middle one or two rows, not every row)."""
    n, total = db.execute(f"SELECT count(*), coalesce(sum(seconds), 0.0) {_TIMED}", [annotator_id]).fetchone()
    if not n:
        return 0, 0.0, None
    middle = [r[0] for r in db.execute(
        f"SELECT seconds {_TIMED} ORDER BY seconds LIMIT ? OFFSET ?", [annotator_id, 2 - n % 2, (n - 1) // 2]
    )]
    return n, float(total), statistics.fmean(middle)


def _labelled_by(db: sqlite_utils.Database) -> dict[str, dict[int, int]]:
    """Task -> annotator id -> items that person has labelled (app and imports alike)."""
    out: dict[str, dict[int, int]] = {task: {} for task in TASKS}
    for task, annotator_id, n in db.execute("SELECT task, annotator_id, n FROM label_counts"):
        if task in out:
            out[task][annotator_id] = n
    return out


def labelled_counts(db: sqlite_utils.Database, *, caller: Caller) -> dict[int, dict[str, int]]:
    """Annotator id -> task -> items they have labelled (in the app or imported), every
    annotator and every task listed (0 when none)."""
    require_admin(db, caller)
    by_task = _labelled_by(db)
    ids = [r[0] for r in db.execute("SELECT id FROM annotators ORDER BY id")]
    return {i: {task: by_task[task].get(i, 0) for task in TASKS} for i in ids}


def task_progress(db: sqlite_utils.Database, *, caller: Caller) -> tuple[TaskProgress, ...]:
    """Every task's items, items labelled, overlap done and items per annotator (:class:`TaskProgress`)."""
    require_admin(db, caller)
    return _task_progress(db, _labelled_by(db))


_ITEMS = {"relevance": "SELECT n FROM work_counts WHERE name = 'pool'",
          **{kind: f"SELECT count(*) FROM verdict_items WHERE kind = '{kind}'" for kind in KINDS}}


def _task_progress(db: sqlite_utils.Database, by_task: dict[str, dict[int, int]]) -> tuple[TaskProgress, ...]:
    k = get_settings(db).overlap_k
    names = db.execute("SELECT id, name FROM annotators ORDER BY id").fetchall()
    out = []
    for task in TASKS:
        labelled, overlap = db.execute(
            "SELECT coalesce(sum(n), 0), coalesce(sum(CASE WHEN people >= ? THEN n END), 0) "
            "FROM overlap_counts WHERE task = ? AND people > 0", [k, task]
        ).fetchone()
        items = db.execute(_ITEMS[task]).fetchone()[0]
        per = tuple((name, by_task[task].get(i, 0)) for i, name in names)
        out.append(TaskProgress(task, items, labelled, overlap, k, per))
    return tuple(out)


def _query_progress(db: sqlite_utils.Database) -> Iterator[QueryProgress]:
    for query_id, done, assigned, size in db.execute(
        "SELECT c.query_id, c.labelled, c.assigned, c.pool FROM query_counts c JOIN queries q ON q.query_id = c.query_id "
        "WHERE c.pool > 0 ORDER BY q.rowid"
    ):
        yield QueryProgress(query_id, done, assigned, size)


def overlap_labels(db: sqlite_utils.Database, *, caller: Caller) -> list[OverlapLabel]:
    """Aligned current labels on every item two annotators both labelled, one row per pair.

    An item labelled by k annotators gives k(k-1)/2 rows. ``[r.relevance_a for r in rows]``
    and ``[r.relevance_b for r in rows]`` are what ``calibration.cohen_kappa`` takes.
    """
    require_admin(db, caller)
    rows = []
    for (query_id, doc_id), labels in sorted(_current_by_item(db).items()):
        for (name_a, grade_a, _), (name_b, grade_b, _) in combinations(labels, 2):
            rows.append(OverlapLabel(query_id, doc_id, name_a, name_b, grade_a, grade_b))
    return rows


def disagreements(db: sqlite_utils.Database, *, caller: Caller) -> list[Disagreement]:
    """The adjudication queue: items whose current labels differ and have no adjudication."""
    require_admin(db, caller)
    settled = {(r[0], r[1]) for r in db.execute("SELECT DISTINCT query_id, doc_id FROM adjudications")}
    queue = []
    for (query_id, doc_id), labels in sorted(_current_by_item(db).items()):
        if (query_id, doc_id) in settled or len({grade for _, grade, _ in labels}) < 2:
            continue
        text = db.execute(
            "SELECT q.text, d.title, d.text FROM queries q, documents d WHERE q.query_id = ? AND d.doc_id = ?",
            [query_id, doc_id],
        ).fetchone()
        queue.append(Disagreement(query_id, doc_id, text[0], text[1], text[2], tuple(labels)))
    return queue


def record_adjudication(
    db: sqlite_utils.Database,
    query_id: str,
    doc_id: str,
    relevance: int,
    note: str = "",
    *,
    caller: Caller,
) -> int:
    """Record an admin's final grade for an item as its own row; return the row id.

    Nothing is overwritten: a second adjudication of the same item is a new row and the
    latest one is the final grade.

    Raises:
        StoreError: not an active admin (:data:`OWNER` included: the row names its admin),
            a grade outside 0-3, or an item not in the pool.
    """
    author = caller_id(caller)
    if author is None:
        raise StoreError("an adjudication needs the admin who makes it")
    require_admin(db, caller)
    relevance = check_grade(relevance)
    with transaction(db):
        if db.execute("SELECT 1 FROM pool WHERE query_id = ? AND doc_id = ?", [query_id, doc_id]).fetchone() is None:
            raise StoreError(f"({query_id}, {doc_id}) is not in the pool")
        cursor = db.execute(
            "INSERT INTO adjudications (query_id, doc_id, annotator_id, relevance, note, at) VALUES (?, ?, ?, ?, ?, ?)",
            [query_id, doc_id, author, relevance, str(note or ""), now()],
        )
    return int(cursor.lastrowid)


def adjudications(db: sqlite_utils.Database, *, caller: Caller) -> list[Adjudication]:
    """The final grade of every adjudicated item (its latest adjudication)."""
    require_admin(db, caller)
    rows = db.execute(
        """SELECT a.query_id, a.doc_id, n.name, a.relevance, a.note, a.at
           FROM current_adjudications a JOIN annotators n ON n.id = a.annotator_id
           ORDER BY a.query_id, a.doc_id"""
    )
    return [Adjudication(*r) for r in rows]


_EXPORT = """
SELECT j.query_id, j.doc_id, n.name, j.relevance, j.at, j.seconds, j.note, j.rubric_hash, a.relevance
FROM judgments j JOIN annotators n ON n.id = j.annotator_id
LEFT JOIN current_adjudications a ON a.query_id = j.query_id AND a.doc_id = j.doc_id
ORDER BY j.id
"""
_KEYS = ("query_id", "doc_id", "annotator", "relevance", "at", "seconds", "note", "rubric_hash", "adjudicated")


def _write_rows(db: sqlite_utils.Database, out: TextIO) -> int:
    n = 0
    for row in db.execute(_EXPORT):
        out.write(json.dumps(dict(zip(_KEYS, row, strict=True)), ensure_ascii=False) + "\n")
        n += 1
    return n


def export_judgments(db: sqlite_utils.Database, out: TextIO, *, caller: Caller) -> int:
    """Write every raw label (history included, oldest first) to ``out`` as JSONL; return how many.

    Keys: query_id, doc_id, annotator, relevance, at, seconds, note, rubric_hash, and
    adjudicated (the item's final grade from its latest adjudication, null if none). Files are
    opened by the caller (the command line writes them through ``output_file``).
    """
    require_admin(db, caller)
    return _write_rows(db, out)

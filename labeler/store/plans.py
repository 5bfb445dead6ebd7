"""What SQLite does with the statements a piece of work runs: which statements, and their plans.

A diagnostic for the labelling paths (``bench/query_plans.py`` prints it, a test checks it):
:func:`recorded` keeps every statement a connection runs while it is open, as SQLite ran it
(parameters written in); :func:`query_plan` is SQLite's ``EXPLAIN QUERY PLAN`` of one of them,
and :func:`full_scans` the lines of a plan that read a whole table that grows with the project.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import sqlite_utils

#: Tables whose size grows with the project's items and work. A plan line that scans one of
#: them (``SCAN t``, with or without an index: it reads every row) costs more as the project
#: grows; reading them by ``SEARCH`` costs the rows asked for.
GROWING = frozenset({
    "answer_batches", "answer_sample_items", "answers", "assignments", "candidates", "claims", "documents",
    "human_verdicts", "judge_verdicts", "judgments", "nugget_items", "nugget_proposals", "nugget_revisions", "nuggets",
    "pool", "queries", "reservations", "run_entries", "sample_items", "sessions", "skips", "verdict_assignments",
    "verdict_items", "verdict_open", "verdict_skips",
})
_DML = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "REPLACE")


@contextmanager
def recorded(db: sqlite_utils.Database) -> Iterator[list[str]]:
    """Collect, in order, every statement ``db`` runs inside the block (SQLite's expanded SQL)."""
    seen: list[str] = []
    db.conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        db.conn.set_trace_callback(None)


_LITERAL = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b")


def shape(sql: str) -> str:
    """``sql`` with its literal values as ``?``: one shape per statement however it was called."""
    return _LITERAL.sub("?", " ".join(sql.split()))


def distinct_queries(statements: Iterable[str]) -> list[str]:
    """The statements that read or write rows (no BEGIN, COMMIT, PRAGMA), one of each shape
    (:func:`shape`), in the order first run."""
    out: dict[str, str] = {}
    for sql in statements:
        text = " ".join(sql.split())
        if text.upper().startswith(_DML):
            out.setdefault(shape(text), text)
    return list(out.values())


def query_plan(db: sqlite_utils.Database, sql: str) -> list[str]:
    """The lines of the plan SQLite chooses for ``sql`` (it is not run)."""
    return [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}")]


# A table named after FROM or JOIN (or a comma of FROM), with its alias if it has one.
_TABLE = re.compile(r"(?:\bFROM|\bJOIN|,)\s+(\w+)(?:\s+(?:AS\s+)?(?!ON\b|WHERE\b|JOIN\b|LEFT\b|USING\b|GROUP\b|ORDER\b"
                    r"|LIMIT\b|INNER\b|CROSS\b|UNION\b|SET\b|VALUES\b)(\w+))?", re.IGNORECASE)


def full_scans(plan: Iterable[str], sql: str = "") -> list[str]:
    """The lines of ``plan`` (of ``sql``, whose aliases name the tables) that read every row of
    a :data:`GROWING` table."""
    tables = {alias or table: table for table, alias in _TABLE.findall(sql)}
    out = []
    for line in plan:
        words = line.split()
        if len(words) >= 2 and words[0] == "SCAN" and tables.get(words[1], words[1]) in GROWING:
            out.append(line)
    return out

"""Designed samples of a system's answers: which answers people label for the generation
tasks, each with its inclusion probability (``sample-answers``). A sample never changes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from labeler.store.access import require_admin
from labeler.store.connection import transaction
from labeler.store.errors import StoreError, shown
from labeler.store.schema import now
from labeler.store.vocabulary import Caller


@dataclass(frozen=True, slots=True)
class AnswerSample:
    """A stored sample: ``items`` maps answer_id to (inclusion probability, stratum)."""

    name: str
    system: str
    design: str
    seed: int
    params: Mapping[str, Any]
    items: Mapping[str, tuple[float, str | None]]


def save_answer_sample(db: sqlite_utils.Database, name: str, system: str, design: str, seed: int,
                       params: Mapping[str, Any], items: Sequence[tuple[str, float, str | None]], *,
                       caller: Caller) -> None:
    """Store a sample of ``system``'s answers under a new ``name`` (admin only), in one transaction.

    Raises:
        StoreError: an empty or taken name, no item, a probability outside (0, 1].
    """
    require_admin(db, caller)
    if not name or any(ch.isspace() or not ch.isprintable() for ch in name):
        raise StoreError(f"sample name {shown(name)}: give a non-empty name of visible characters")
    if not items:
        raise StoreError(f"sample {shown(name)}: no answer was drawn; give a larger --n")
    bad = [i for i in items if not 0.0 < i[1] <= 1.0]
    if bad:
        raise StoreError(f"sample {shown(name)}: answer {shown(bad[0][0])} has probability {bad[0][1]}, outside (0, 1]")
    with transaction(db):
        taken = db.conn.execute("SELECT 1 FROM answer_samples WHERE name = ? UNION "
                                "SELECT 1 FROM samples WHERE name = ?", [name, name]).fetchone()
        if taken is not None:
            raise StoreError(f"sample {shown(name)} exists already: a sample never changes, choose another name")
        db.conn.execute("INSERT INTO answer_samples (name, system, design, seed, params, created_at) "
                        "VALUES (?, ?, ?, ?, ?, ?)", [name, system, design, seed,
                                                      json.dumps(dict(params), sort_keys=True), now()])
        db.conn.executemany("INSERT INTO answer_sample_items (sample, answer_id, probability, stratum) "
                            "VALUES (?, ?, ?, ?)", [(name, *item) for item in items])


def check_answer_sample(db: sqlite_utils.Database, name: str) -> str:
    """``name`` if it is a stored sample of answers.

    Raises:
        StoreError: no such sample (the known ones named).
    """
    if db.conn.execute("SELECT 1 FROM answer_samples WHERE name = ?", [name]).fetchone() is None:
        known = [r[0] for r in db.conn.execute("SELECT name FROM answer_samples ORDER BY name")]
        raise StoreError(f"no sample of answers {shown(name)}; "
                         + (f"known: {', '.join(known)}" if known else "draw one with `goldpool sample-answers`"))
    return name


def get_answer_sample(db: sqlite_utils.Database, name: str) -> AnswerSample:
    """The stored sample ``name``.

    Raises:
        StoreError: no such sample.
    """
    check_answer_sample(db, name)
    system, design, seed, params = db.conn.execute(
        "SELECT system, design, seed, params FROM answer_samples WHERE name = ?", [name]).fetchone()
    items = {r[0]: (r[1], r[2]) for r in db.conn.execute(
        "SELECT answer_id, probability, stratum FROM answer_sample_items WHERE sample = ? ORDER BY answer_id", [name])}
    return AnswerSample(name, system, design, seed, json.loads(params), items)


def judge_answer_verdicts(db: sqlite_utils.Database, system: str, judge: str, *,
                          caller: Caller) -> list[tuple[str, str, str]]:
    """``(answer_id, item_id, verdict)`` of every parseable verdict ``judge`` gave on ``system``'s
    answer items, every repeat and order (not only the current one): how split the judge is on
    an answer (admin only)."""
    require_admin(db, caller)
    return [tuple(r) for r in db.conn.execute(  # type: ignore[misc]
        "SELECT i.answer_id, v.item_id, v.verdict FROM judge_verdicts v JOIN verdict_items i ON i.item_id = v.item_id "
        "JOIN answers a ON a.answer_id = i.answer_id WHERE a.system = ? AND v.judge = ? AND v.verdict IS NOT NULL "
        "ORDER BY v.id", [system, judge])]

"""A project's assignment settings and the store's own bookkeeping in the ``settings`` table.

The settings (:class:`Settings`) say how pool entries are handed out: overlap, batch size,
holds, the task pages, the adaptive pooling strategy and its stopping rule, a designed sample.
Keys under ``state.`` are bookkeeping (:mod:`labeler.store.assign`), only ever lower bounds.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, fields

import sqlite_utils

from labeler.store.errors import StoreError
from labeler.store.vocabulary import TASKS


@dataclass(frozen=True, slots=True)
class Settings:
    """Assignment settings of a project (``settings`` table; these are the defaults)."""

    overlap: float = 0.2  # share of pool entries labelled by more than one annotator
    overlap_k: int = 2  # annotators per overlap entry
    reservation_minutes: float = 30.0  # an idle hold on a single-label entry lapses after this
    batch_size: int = 10  # entries of one query handed out at a time
    tasks: tuple[str, ...] | None = None  # task pages annotators see; None: every task with work
    strategy: str = "depth"  # adaptive pooling strategy (labeler.retrieval.adaptive); depth: pool order
    stop_recall: float | None = None  # stop offering a query's candidates at this recall; None: off
    stop_confidence: float = 0.9  # ... once the stopping rule is this confident of it
    sample: str | None = None  # hand out only this designed sample's entries (plan-sample); None: the whole pool
    stop_rule: str = "sample"  # which stopping rule (pooling.stopping.RULES) decides
    answer_sample: str | None = None  # hand out only this sample's answers (sample-answers); None: every answer


#: The first query that may still have work to hand out (``labeler.store.assign``).
FRONTIER = "state.frontier"


def get_settings(db: sqlite_utils.Database) -> Settings:
    """The project's assignment settings (defaults for any not set)."""
    names = [f.name for f in fields(Settings)]
    marks = ",".join("?" * len(names))
    stored = dict(db.execute(f"SELECT key, value FROM settings WHERE key IN ({marks})", names).fetchall())
    values = {name: json.loads(value) for name, value in stored.items()}
    if values.get("tasks") is not None:
        values["tasks"] = tuple(values["tasks"])
    return Settings(**values)


# One probe per task on the index of items by kind: the cost does not grow with the items.
_TASKS_WITH_ITEMS = "SELECT t.name FROM tasks t WHERE EXISTS (SELECT 1 FROM verdict_items i WHERE i.kind = t.name)"


def enabled_tasks(db: sqlite_utils.Database, settings: Settings | None = None) -> tuple[str, ...]:
    """The tasks annotators see: the admin's choice, else every task the project has work for.

    ``settings`` are the project's, if already read. The app reads this once per run and
    passes it down (``labeler.ui.state.open_tasks``).
    """
    chosen = (settings or get_settings(db)).tasks
    if chosen is not None:
        return chosen
    found = {r[0] for r in db.execute(_TASKS_WITH_ITEMS)}
    if db.execute("SELECT min(query_id) FROM pool").fetchone()[0] is not None:
        found.add("relevance")
    return tuple(t for t in TASKS if t in found)


def _tasks(raw: object) -> tuple[str, ...]:
    """Parse the ``tasks`` setting: a comma-separated string (CLI) or a list of task names."""
    names = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(names, (list, tuple)):
        raise StoreError(f"setting tasks: {raw!r} is not a list of tasks")
    clean = [str(n).strip() for n in names if str(n).strip()]
    unknown = [n for n in clean if n not in TASKS]
    if unknown:
        raise StoreError(f"setting tasks: unknown task {unknown[0]!r}; tasks are: {', '.join(TASKS)}")
    if not clean:
        raise StoreError(f"setting tasks: give at least one of {', '.join(TASKS)}")
    return tuple(t for t in TASKS if t in clean)


def _strategy(raw: object, strategies: Collection[str]) -> str:
    """Parse the ``strategy`` setting: one of ``strategies``."""
    name = str(raw).strip()
    if name not in strategies:
        raise StoreError(f"setting strategy: unknown strategy {name!r}; strategies are: {', '.join(strategies)}")
    return name


def validate_settings(
    values: dict[str, object], strategies: Collection[str] = ("depth",), rules: Collection[str] = ("sample",)
) -> dict[str, object]:
    """Check setting values, converting numeric strings (from the CLI); return them typed.

    ``strategies`` are the valid ``strategy`` names (the pooling strategies the caller can
    run; :func:`labeler.retrieval.scheduling.set_settings` passes them all), ``rules`` the valid
    ``stop_rule`` names (likewise).

    Raises:
        StoreError: an unknown setting or a value out of range, saying which.
    """
    checks: dict[str, tuple[type, float, float]] = {
        "overlap": (float, 0.0, 1.0),
        "overlap_k": (int, 2, 100),
        "reservation_minutes": (float, 0.01, 7 * 24 * 60),
        "batch_size": (int, 1, 10_000),
    }
    checks.update({"stop_recall": (float, 0.01, 1.0), "stop_confidence": (float, 0.5, 0.999)})
    clean: dict[str, object] = {}
    for key, raw in values.items():
        if key in ("sample", "answer_sample"):
            name = str(raw).strip()
            clean[key] = None if name.lower() in ("off", "none", "") else name
            continue
        if key in ("tasks", "strategy"):
            clean[key] = _tasks(raw) if key == "tasks" else _strategy(raw, strategies)
            continue
        if key == "stop_rule":
            name = str(raw).strip()
            if name not in rules:
                raise StoreError(f"setting stop_rule: unknown rule {name!r}; rules are: {', '.join(rules)}")
            clean[key] = name
            continue
        if key == "stop_recall" and str(raw).strip().lower() in ("off", "none", ""):
            clean[key] = None
            continue
        if key not in checks:
            raise StoreError(f"unknown setting {key!r}; settings are: {', '.join([*checks, 'tasks', 'strategy', 'stop_rule', 'sample', 'answer_sample'])}")
        kind, low, high = checks[key]
        try:
            if isinstance(raw, bool) or (kind is int and isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            value = kind(raw)
        except (TypeError, ValueError):
            raise StoreError(f"setting {key}: {raw!r} is not {'an integer' if kind is int else 'a number'}") from None
        if not low <= value <= high:
            raise StoreError(f"setting {key}: {value} is outside [{low}, {high}]")
        clean[key] = value
    return clean


def state(db: sqlite_utils.Database, key: str) -> object:
    """A bookkeeping value (None when not kept)."""
    row = db.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()
    return None if row is None else json.loads(row[0])


def set_state(db: sqlite_utils.Database, key: str, value: object) -> None:
    """Keep a bookkeeping value (inside the caller's write transaction)."""
    db.execute("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", [key, json.dumps(value)])


def forget_frontier(db: sqlite_utils.Database) -> None:
    """Make the next batch look at every query again (after work was released)."""
    db.execute("DELETE FROM settings WHERE key = ?", [FRONTIER])

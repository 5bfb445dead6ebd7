"""Judge cards: a judge's calibration against people, saved per task; every SQL statement for them.

A card row holds what ``calibrate --judge NAME --save`` measured on one task: the models and
prompt hashes behind the judge's verdicts, the date, agreement and kappa with their intervals,
the human ceiling and the counts. Rows are append-only; the latest row of a (judge, task) is the
judge's card for that task. Cards hold numbers, no verdict and no text of an item.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import sqlite_utils

from labeler.store.access import require_admin
from labeler.store.connection import transaction
from labeler.store.schema import now
from labeler.store.vocabulary import Caller

#: The columns of a card row a caller gives (``calibrated_at`` and ``id`` are the store's).
CARD_COLUMNS = ("judge", "task", "models", "prompt_hashes", "n", "n_pairs",
                "agreement", "agreement_low", "agreement_high", "kappa", "kappa_low", "kappa_high", "ceiling_n",
                "ceiling_agreement", "ceiling_agreement_low", "ceiling_agreement_high",
                "ceiling_kappa", "ceiling_kappa_low", "ceiling_kappa_high", "details")


def add_cards(db: sqlite_utils.Database, cards: Sequence[Mapping[str, Any]], *, caller: Caller) -> str:
    """Save one card row per mapping (``CARD_COLUMNS``; ``models`` and ``prompt_hashes`` lists,
    ``details`` a dict), all with one date, in one transaction (admin only); returns the date."""
    require_admin(db, caller)
    at = now()
    rows = []
    for card in cards:
        row = {c: card.get(c) for c in CARD_COLUMNS}
        row["models"] = json.dumps(sorted(card["models"]))
        row["prompt_hashes"] = json.dumps(sorted(card["prompt_hashes"]))
        row["details"] = json.dumps(dict(card.get("details") or {}), sort_keys=True)
        rows.append([*row.values(), at])
    with transaction(db):
        db.conn.executemany(f"INSERT INTO judge_cards ({', '.join(CARD_COLUMNS)}, calibrated_at) "
                            f"VALUES ({', '.join('?' * (len(CARD_COLUMNS) + 1))})", rows)
    return at


def latest_cards(db: sqlite_utils.Database, judge: str) -> dict[str, dict[str, Any]]:
    """The judge's card per task: the latest saved row of each, as a dict (lists and details decoded)."""
    cursor = db.execute(
        "SELECT c.* FROM judge_cards c JOIN (SELECT task, max(id) AS id FROM judge_cards WHERE judge = ? GROUP BY task) l "
        "ON l.id = c.id ORDER BY c.task", [judge])
    names = [d[0] for d in cursor.description]
    out = {}
    for values in cursor.fetchall():
        row = dict(zip(names, values))
        for key in ("models", "prompt_hashes", "details"):
            row[key] = json.loads(row[key])
        out[row["task"]] = row
    return out


def verdict_versions(db: sqlite_utils.Database, judge: str) -> dict[str, tuple[set[str], set[str]]]:
    """Per task, the (prompt hashes, models) of the judge's current verdicts: what its numbers rest on now."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for task, prompt, model in db.execute(
        "SELECT DISTINCT task, prompt_hash, model FROM current_judge_verdicts WHERE judge = ?", [judge]
    ):
        prompts, models = out.setdefault(task, (set(), set()))
        prompts.add(prompt)
        models.add(model)
    return out

"""The scheduling policy is planned from plain data; the store only applies the plan."""

from __future__ import annotations

from pathlib import Path

from labels_fixtures import make_project

from labeler.retrieval.scheduling import Scheduler
from labeler.store import access, labels
from labeler.store.assign import Entry, Offer, Request, is_overlap, shuffle_key
from labeler.store.settings import Settings


def _docs(query_id: str, share: float, overlap: bool, n: int) -> list[str]:
    return [d for d in (f"d{k}" for k in range(100)) if is_overlap(query_id, d, share) == overlap][:n]


def test_a_hand_out_is_planned_without_the_database() -> None:
    settings = Settings(overlap=0.5, overlap_k=2)
    (shared_doc,), (single, lapsed) = _docs("q", 0.5, True, 1), _docs("q", 0.5, False, 2)
    batch = [
        Entry(shared_doc, None, None, 0, False, False),
        Entry(single, None, None, 0, False, False),
        Entry(lapsed, 2, "2000-01-01T00:00:00", 1, False, False),  # ann 2's hold has lapsed
    ]
    request = Request(1, settings, "2030-01-01T00:00:00", labellers=(1, 2, 3), shared={2: 5, 3: 1})
    plan = Scheduler().hand_out(request, "q", batch, load={2: 10, 3: 10})
    assert plan.shown == tuple(sorted((shared_doc, single, lapsed), key=lambda d: shuffle_key(1, "q", d)))
    assert plan.reserve == {single, lapsed} and plan.take_over == {lapsed: 2}
    assert plan.copies == {3: (shared_doc,)}  # ann 3 shares fewer entries with ann 1 than ann 2 does
    assert plan.settle == (shared_doc,)


class _Reversed(Scheduler):
    """Hands out a query's unassigned entries from the last pool position up, two at a time."""

    def offer(self, db, request: Request, query_id: str, entries) -> Offer:
        free = [e for e in reversed(entries) if e.holder is None and e.holders == 0]
        return Offer(tuple(free[:2]), not free)


def test_the_store_applies_whatever_the_planner_plans(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", overlap=0.0)
    ann, _ = access.add_annotator(db, "ann")
    item = labels.next_item(db, ann.id, _Reversed())
    assert item is not None and item.query_id == "q001"
    handed = db.execute("SELECT doc_id FROM assignments WHERE annotator_id = ?", [ann.id]).fetchall()
    held = db.execute("SELECT doc_id FROM reservations WHERE annotator_id = ?", [ann.id]).fetchall()
    last_two = db.execute("SELECT doc_id FROM pool WHERE query_id = 'q001' ORDER BY position DESC LIMIT 2").fetchall()
    assert sorted(handed) == sorted(held) == sorted(last_two)

"""Scheduling: which pool entries go to which annotator, and in which order they are shown.

The policy, planned here and applied by the store (:mod:`labeler.store.assign`) in one write
transaction:

- Work goes out query by query, queries in import order (``queries.rowid``). An annotator who
  has nothing left to do gets a *batch*: up to ``batch_size`` entries of one query, taken in
  pool ``position`` order, so a limited budget labels the likeliest relevant entries first.
- Within a batch the order on screen is a per-annotator shuffle (``assignments.shown_order``):
  entries are sorted by a hash of (annotator, query, doc), so position on screen says nothing
  about priority, and a rerun shows the same order.
- Each entry is labelled once, except a share ``overlap`` of entries, chosen by a hash of the
  entry, which go to ``overlap_k`` annotators for agreement. When an overlap entry is first
  handed out, its other copies go at once to the annotators who share the fewest entries with
  the first one so far, so every pair of annotators ends up overlapping.
- An overlap entry handed out while fewer than ``overlap_k`` annotators label (one person
  started alone, the others come later) waits in ``overlap_waiting``: its next copies go to
  the next *other* annotator who asks for work, whenever they arrive, before any new work.
  Admins are never handed copies they did not ask for: they get work only by labelling.
- A single-label entry is held by one annotator at a time (``reservations``). The hold lasts
  ``reservation_minutes`` after the holder last labelled or skipped in that query; an unlabelled
  entry whose hold has lapsed goes to the next annotator who asks. The previous holder's
  assignment row is kept with a negated ``shown_order`` (it leaves their queue), so a label they
  still send is recorded rather than lost.
- Under adaptive pooling (a ``strategy`` other than ``depth``, or a stopping rule), a query's
  fresh entries are the ones :mod:`labeler.retrieval.adaptive` chooses, in its order; its decisions are
  made before the write lock is taken, so no model runs while other writers wait.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import sqlite_utils

from labeler.retrieval.adaptive import CHOSEN_AHEAD, choose_ahead, plan_next_chunks
from labeler.store import labels
from labeler.store.access import Caller
from labeler.store.assign import (
    Entry,
    HandOut,
    Offer,
    Request,
    is_overlap,
    shuffle_key,
    upcoming_queries,
)
from labeler.store.settings import Settings, get_settings
from pooling.stopping import RULES
from pooling.strategies import STRATEGIES

__all__ = ["Scheduler", "change_settings", "next_item", "set_settings"]


def adaptive(settings: Settings) -> bool:
    """Whether hand-outs follow a pooling strategy or a stopping rule rather than pool order."""
    return settings.strategy != "depth" or settings.stop_recall is not None


def _scan(entries: Sequence[Entry], settings: Settings, needed: int, at: str) -> tuple[list[Entry], bool]:
    """Entries of one query the annotator may take, and whether the query is finished for all."""
    available: list[Entry] = []
    finished = True
    for entry in entries:
        if entry.holder is not None:  # single-label
            if not entry.labelled:
                finished = False
                if not entry.mine and entry.expires_at is not None and entry.expires_at < at:
                    available.append(entry)
        elif entry.holders == 0:
            finished = False
            available.append(entry)
        else:  # overlap, handed out to some already
            finished = finished and entry.holders >= needed
            if not entry.mine and entry.holders < settings.overlap_k:
                available.append(entry)
    return available, finished


def _fresh(entry: Entry) -> bool:
    return entry.holder is None and entry.holders == 0


class _Partners:
    """Picks who gets the other copies of an overlap entry: fewest entries shared so far.

    Ties go to the annotator who has been handed the fewest items, then the lowest id. Counts
    are kept up to date as copies are handed out within the batch.
    """

    def __init__(self, candidates: list[int], shared: Mapping[int, int], load: Mapping[int, int]) -> None:
        self._candidates = candidates
        self._shared = Counter(shared)
        self._load = Counter({c: load[c] for c in candidates})

    def choose(self, n: int) -> list[int]:
        chosen = sorted(self._candidates, key=lambda c: (self._shared[c], self._load[c], c))[: max(n, 0)]
        for candidate in chosen:
            self._shared[candidate] += 1
            self._load[candidate] += 1
        return chosen


class Scheduler:
    """The project's scheduling policy, as the store's :class:`labeler.store.assign.Planner`."""

    def decide_before_lock(self, db: sqlite_utils.Database) -> None:
        """Under adaptive pooling, decide the next queries' chunks before the write lock.

        The stopping rule and ``active``'s classifier take tens to hundreds of milliseconds;
        decided now, the hand-out inside the transaction only looks their answers up and
        other writers wait for milliseconds, not for a model.
        """
        settings = get_settings(db)
        if not adaptive(settings):
            return
        choose_ahead(db, upcoming_queries(db, CHOSEN_AHEAD), settings)

    def offer(self, db: sqlite_utils.Database, request: Request, query_id: str, entries: Sequence[Entry]) -> Offer:
        """The query's entries for this annotator.

        Under adaptive pooling, entries already handed out to someone (lapsed holds, overlap
        copies) come first, in pool order; then the fresh entries the strategy chooses, in its
        order (candidates not yet in the pool are added to it). The query is finished when
        nothing handed out is unfinished and the strategy (or the stopping rule) offers
        nothing more.
        """
        settings = request.settings
        needed = min(settings.overlap_k, len(request.labellers))
        if not adaptive(settings):
            available, finished = _scan(entries, settings, needed, request.at)
            return Offer(tuple(available[: settings.batch_size]), finished)
        plan = plan_next_chunks(db, query_id, settings)
        started, finished = _scan([e for e in entries if not _fresh(e)], settings, needed, request.at)
        fresh = {e.doc_id: e for e in entries if _fresh(e)}
        pooled = {e.doc_id for e in entries}
        chosen = [
            fresh.get(d) or Entry(d, None, None, 0, False, False)  # added to the pool with this offer
            for d in plan.doc_ids
            if d in fresh or d not in pooled
        ]
        return Offer(tuple((started + chosen)[: settings.batch_size]), finished and not chosen, plan.additions, plan.check_urn)

    def hand_out(self, request: Request, query_id: str, batch: Sequence[Entry], load: Mapping[int, int]) -> HandOut:
        """Shuffle the batch for the annotator, hold its single-label entries for them, and send
        each fresh overlap entry's other copies to the partners sharing the fewest entries."""
        settings, me = request.settings, request.annotator_id
        partners = _Partners([a for a in request.labellers if a != me], request.shared, load)
        ordered = sorted(batch, key=lambda e: shuffle_key(me, query_id, e.doc_id))
        reserve: set[str] = set()
        take_over: dict[str, int] = {}
        earmarks: dict[int, list[str]] = {}
        for entry in ordered:
            if entry.holder is not None:  # a lapsed hold: the entry changes hands
                if entry.holder != me:  # (or comes back to the holder who released it)
                    take_over[entry.doc_id] = entry.holder
                reserve.add(entry.doc_id)
            elif entry.holders == 0 and is_overlap(query_id, entry.doc_id, settings.overlap):
                for partner in partners.choose(settings.overlap_k - 1):
                    earmarks.setdefault(partner, []).append(entry.doc_id)
            elif entry.holders == 0:
                reserve.add(entry.doc_id)
        return HandOut(
            shown=tuple(e.doc_id for e in ordered),
            reserve=frozenset(reserve),
            take_over=take_over,
            copies={p: tuple(self.shown_order(p, query_id, docs)) for p, docs in earmarks.items()},
            settle=tuple(
                e.doc_id
                for e in ordered
                if e.holder is None and (e.holders > 0 or is_overlap(query_id, e.doc_id, settings.overlap))
            ),
        )

    def shown_order(self, annotator_id: int, query_id: str, doc_ids: Sequence[str]) -> list[str]:
        """The annotator's shuffle of ``doc_ids``: by a hash of (annotator, query, doc)."""
        return sorted(doc_ids, key=lambda d: shuffle_key(annotator_id, query_id, d))


SCHEDULER = Scheduler()


def next_item(db: sqlite_utils.Database, annotator_id: int) -> labels.Item | None:
    """The annotator's next item under the project's scheduling (:func:`labeler.store.labels.next_item`).

    Raises:
        StoreError: the annotator does not exist or is deactivated.
    """
    return labels.next_item(db, annotator_id, SCHEDULER)


def change_settings(db: sqlite_utils.Database, values: dict[str, object], *, caller: Caller) -> labels.SettingsChange:
    """Change assignment settings (admin only), ``strategy`` being any pooling strategy and
    ``stop_rule`` any of :data:`pooling.stopping.RULES`; see :func:`labeler.store.labels.change_settings`
    (setting a sample releases the entries outside it handed out before).

    Raises:
        StoreError: an unknown setting or strategy, or a value out of range; nothing is changed.
    """
    return labels.change_settings(db, values, caller=caller, strategies=STRATEGIES, rules=RULES)


def set_settings(db: sqlite_utils.Database, values: dict[str, object], *, caller: Caller) -> Settings:
    """The settings after :func:`change_settings`."""
    return change_settings(db, values, caller=caller).settings

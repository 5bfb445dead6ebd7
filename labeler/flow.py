"""The keyboard flow of a verdict page (faithfulness, pairwise) over ``st.session_state``.

The same flow as the relevance page (``labeler.state``): the item on screen and since when,
a key acts only on the item it was drawn for and only if nothing was recorded on it since it
was shown, ``u`` goes back, ``s`` skips, a note typed on an item stays with that item (as a
draft when the annotator leaves it unsaved). Each task keeps its own keys
(``state.task_key``), so two pages never share an item. Plain Python over a mapping: a test
drives it with a dict and a fake clock.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import sqlite_utils

from labeler import state
from labeler.state import Clock, Session
from labeler.store import StoreError
from labeler.store import verdict_queue as queue
from labeler.store.verdict_queue import Card


@dataclass(frozen=True, slots=True)
class Flow:
    """The flow of one task page; ``Flow("pairwise").current(session, db, annotator_id)``."""

    task: str

    def key(self, part: str) -> str:
        """Session-state key of one part of this page's flow."""
        return state.task_key(self.task, part)

    def current(self, session: Session, db: sqlite_utils.Database, annotator_id: int,
                clock: Clock = time.monotonic) -> Card | None:
        """The item to show: the one on screen, else the next one (starting its clock)."""
        shown = session.get(self.key("current"))
        card: Card | None = None
        if shown is not None:
            try:
                card = queue.get_card(db, annotator_id, shown)
            except StoreError:
                card = None
        if card is None:
            card = queue.next_card(db, annotator_id, self.task)
        if card is None:
            self._forget(session)
            return None
        if card.item_id != shown or self.key("shown_at") not in session:
            self._show(session, annotator_id, card, clock)
        return card

    def choose(self, session: Session, db: sqlite_utils.Database, annotator_id: int, item_id: str, choice: str,
               clock: Clock = time.monotonic) -> int | None:
        """Record the verdict a key gave on the item on screen and move on (None: key dropped)."""
        if not self._on_screen(session, db, annotator_id, item_id, clock):
            return None
        note = str(session.get(self.key("note")) or "").strip()
        row_id = queue.record_verdict(db, annotator_id, item_id, choice, self._seconds(session, clock), note)
        self._forget(session)
        return row_id

    def skip(self, session: Session, db: sqlite_utils.Database, annotator_id: int, item_id: str,
             clock: Clock = time.monotonic) -> None:
        """Record a skip of the item on screen and move on (dropped like ``choose`` if stale)."""
        if not self._on_screen(session, db, annotator_id, item_id, clock):
            return
        note = str(session.get(self.key("note")) or "").strip()
        queue.record_skip(db, annotator_id, item_id, self._seconds(session, clock), note)
        self._forget(session)
        session[state.FLASH] = "Skipped."

    def back(self, session: Session, db: sqlite_utils.Database, annotator_id: int, item_id: str,
             clock: Clock = time.monotonic) -> bool:
        """Show the item before ``item_id`` again so its verdict can be changed."""
        if not self._on_screen(session, db, annotator_id, item_id, clock):
            return False
        previous = queue.previous_card(db, annotator_id, item_id)
        if previous is None:
            session[state.FLASH] = "There is no earlier item to go back to."
            return False
        self._keep_draft(session, annotator_id, item_id)
        self._show(session, annotator_id, previous, clock)
        return True

    def _show(self, session: Session, annotator_id: int, card: Card, clock: Clock) -> None:
        session[self.key("current")] = card.item_id
        session[self.key("shown_at")] = clock()
        session[self.key("shown_mark")] = card.mark
        drafts = session.get(self.key("drafts"), {})
        session[self.key("note")] = drafts.pop((annotator_id, card.item_id), card.note)

    def _keep_draft(self, session: Session, annotator_id: int, item_id: str) -> None:
        typed = str(session.get(self.key("note")) or "")
        if typed.strip() and typed != session.get(self.key("shown_mark"), (None, ""))[1]:
            session.setdefault(self.key("drafts"), {})[(annotator_id, item_id)] = typed

    def _forget(self, session: Session) -> None:
        for part in ("current", "shown_at", "shown_mark", "note"):
            session.pop(self.key(part), None)

    def _on_screen(self, session: Session, db: sqlite_utils.Database, annotator_id: int, item_id: str,
                   clock: Clock) -> bool:
        """Whether a key drawn for ``item_id`` may act (see ``state._on_screen`` for why)."""
        if session.get(self.key("current")) != item_id:
            session[state.FLASH] = "That key came before the next item was on screen, so nothing was saved."
            return False
        stored = queue.get_card(db, annotator_id, item_id)
        if stored.mark == session.get(self.key("shown_mark")):
            return True
        self._keep_draft(session, annotator_id, item_id)
        shown_at = session.get(self.key("shown_at"))
        self._show(session, annotator_id, stored, clock)
        if shown_at is not None:
            session[self.key("shown_at")] = shown_at
        session[state.FLASH] = (
            "Your verdict on this item changed since it was shown (in another window?), so that key saved "
            "nothing. The item now shows your latest verdict; press the key again."
        )
        return False

    def _seconds(self, session: Session, clock: Clock) -> float | None:
        shown_at = session.get(self.key("shown_at"))
        return None if shown_at is None else round(max(0.0, clock() - shown_at), 3)

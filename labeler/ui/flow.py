"""The keyboard flow of every task page, over ``st.session_state``.

One :class:`Flow` serves every task page alike (relevance, the verdict tasks, the tasks on
answers): the item on screen and since when, a key acts only on the item it was drawn for and only if nothing was recorded on
it since it was shown, ``u`` goes back, ``s`` skips, a note typed on an item stays with that
item (as a draft when the annotator leaves it unsaved), and key presses made while the
project is busy are kept and saved in order once it is free. What differs between tasks
(what an item is, how it is fetched, how an answer is written) is a small :class:`TaskAdapter`
adapter; a new task page needs a new adapter in :data:`FLOWS` and its view.

Each task keeps its own session keys (``state.task_key``), so two pages never share an item
or a note. Plain Python over a mapping, no Streamlit: a test drives it with a dict and a
fake clock. Time on screen is measured on the server, from the first render of an item to
the run that handles the key press; the rerun after a key press is milliseconds, far below
what an answer takes.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Hashable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import sqlite_utils

from labeler.retrieval import scheduling
from labeler.ui import state
from labeler.ui.state import Clock, Session
from labeler.store import StoreBusy, StoreError
from labeler.store import labels
from labeler.store import nugget_support as support
from labeler.store import verdict_queue as queue
from labeler.store.labels import Item
from labeler.store.nugget_support import SupportCard
from labeler.store.verdict_queue import Card

#: Shown while key presses wait for a busy project.
BUSY_MESSAGE = (
    "The project is busy (another program is writing to it). Your key press is kept and will "
    "be saved, in order, as soon as the project is free; this page retries by itself."
)

Shown = TypeVar("Shown")  # what the page draws for one item (``Item``, ``Card``)
Ident = TypeVar("Ident", bound=Hashable)  # an item's identity: in the session and on its buttons


class TaskAdapter(Protocol[Shown, Ident]):
    """What the flow needs from one task: its items, and how an answer or a skip is written.

    ``get``, ``previous``, ``record`` and ``record_skip`` raise ``StoreError`` when the item
    is not (or no longer) assigned to the annotator; ``get`` still returns an item whose hold
    lapsed while it was on screen, because an answer sent for it is still recorded.
    """

    task: str  # the task's name: session keys and widget keys are made from it
    answer: str  # what the annotator gives, in messages: "label", "verdict"

    def identity(self, item: Shown) -> Ident: ...
    def mark(self, item: Shown) -> tuple[Any, str]: ...  # (own latest answer, own latest note)
    def get(self, db: sqlite_utils.Database, annotator_id: int, ident: Ident) -> Shown: ...
    def next(self, db: sqlite_utils.Database, annotator_id: int,
             open_tasks: Collection[str] | None) -> Shown | None: ...  # open_tasks: as read this run, if read
    def previous(self, db: sqlite_utils.Database, annotator_id: int, ident: Ident) -> Shown | None: ...
    def record(self, db: sqlite_utils.Database, annotator_id: int, ident: Ident, choice: Any,
               seconds: float | None, note: str) -> int: ...
    def record_skip(self, db: sqlite_utils.Database, annotator_id: int, ident: Ident,
                    seconds: float | None, note: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Relevance:
    """Relevance labelling: an item is a (query_id, doc_id) pair, the choice a grade 0-3."""

    task: str = "relevance"
    answer: str = "label"

    def identity(self, item: Item) -> tuple[str, str]:
        return item.query_id, item.doc_id

    def mark(self, item: Item) -> tuple[int | None, str]:
        return item.relevance, item.note

    def get(self, db: sqlite_utils.Database, annotator_id: int, ident: tuple[str, str]) -> Item:
        return labels.get_item(db, annotator_id, *ident, allow_lapsed=True)

    def next(self, db: sqlite_utils.Database, annotator_id: int, open_tasks: Collection[str] | None) -> Item | None:
        return scheduling.next_item(db, annotator_id)

    def previous(self, db: sqlite_utils.Database, annotator_id: int, ident: tuple[str, str]) -> Item | None:
        return labels.previous_item(db, annotator_id, *ident)

    def record(self, db: sqlite_utils.Database, annotator_id: int, ident: tuple[str, str], choice: int,
               seconds: float | None, note: str) -> int:
        return labels.record_judgment(db, annotator_id, *ident, choice, seconds, note)

    def record_skip(self, db: sqlite_utils.Database, annotator_id: int, ident: tuple[str, str],
                    seconds: float | None, note: str) -> None:
        labels.record_skip(db, annotator_id, *ident, seconds, note)


@dataclass(frozen=True, slots=True)
class Verdicts:
    """A verdict task (faithfulness, pairwise, and the tasks on answers: claims, correctness,
    answer relevance): an item is a verdict item id, the choice a verdict as the page's keys
    name it (``verdict_queue.record_verdict``)."""

    task: str
    answer: str = "verdict"

    def identity(self, item: Card) -> str:
        return item.item_id

    def mark(self, item: Card) -> tuple[str | None, str]:
        return item.mark

    def get(self, db: sqlite_utils.Database, annotator_id: int, ident: str) -> Card:
        return queue.get_card(db, annotator_id, ident)

    def next(self, db: sqlite_utils.Database, annotator_id: int, open_tasks: Collection[str] | None) -> Card | None:
        return queue.next_card(db, annotator_id, self.task, open_tasks=open_tasks)

    def previous(self, db: sqlite_utils.Database, annotator_id: int, ident: str) -> Card | None:
        return queue.previous_card(db, annotator_id, ident)

    def record(self, db: sqlite_utils.Database, annotator_id: int, ident: str, choice: str,
               seconds: float | None, note: str) -> int:
        return queue.record_verdict(db, annotator_id, ident, choice, seconds, note)

    def record_skip(self, db: sqlite_utils.Database, annotator_id: int, ident: str,
                    seconds: float | None, note: str) -> None:
        queue.record_skip(db, annotator_id, ident, seconds, note)


@dataclass(frozen=True, slots=True)
class Support:
    """Nugget support: an item is one (answer, nugget), ``ANSWER_ID@nugget=NUGGET_ID``, served an
    answer's nuggets in a row; the choice ``SUPPORT``, ``PARTIAL_SUPPORT`` or ``NOT_SUPPORT``
    (:mod:`labeler.store.nugget_support`)."""

    task: str = "nuggets"
    answer: str = "verdict"

    def identity(self, item: SupportCard) -> str:
        return item.item_id

    def mark(self, item: SupportCard) -> tuple[str | None, str]:
        return item.mark

    def get(self, db: sqlite_utils.Database, annotator_id: int, ident: str) -> SupportCard:
        return support.support_card(db, annotator_id, ident)

    def next(self, db: sqlite_utils.Database, annotator_id: int,
             open_tasks: Collection[str] | None) -> SupportCard | None:
        return support.next_support_card(db, annotator_id, open_tasks=open_tasks)

    def previous(self, db: sqlite_utils.Database, annotator_id: int, ident: str) -> SupportCard | None:
        return support.previous_support_card(db, annotator_id, ident)

    def record(self, db: sqlite_utils.Database, annotator_id: int, ident: str, choice: str,
               seconds: float | None, note: str) -> int:
        return support.record_support(db, annotator_id, ident, choice, seconds, note)

    def record_skip(self, db: sqlite_utils.Database, annotator_id: int, ident: str,
                    seconds: float | None, note: str) -> None:
        support.skip_support(db, annotator_id, ident, seconds, note)


@dataclass(frozen=True, slots=True)
class Pending:
    """An answer (or, with ``choice`` None, a skip) pressed while the project was busy."""

    task: str
    annotator_id: int
    item: Hashable  # the item's identity (``TaskAdapter.identity``)
    choice: Any
    seconds: float | None
    note: str


@dataclass(frozen=True, slots=True)
class Flow(Generic[Shown, Ident]):
    """The flow of one task page: ``RELEVANCE.current(session, db, annotator_id)``."""

    adapter: TaskAdapter[Shown, Ident]

    @property
    def task(self) -> str:
        """The task's name (``TaskAdapter.task``)."""
        return self.adapter.task

    def key(self, part: str) -> str:
        """Session-state key of one part of this page's flow (``state.task_key``)."""
        return state.task_key(self.adapter.task, part)

    def current(self, session: Session, db: sqlite_utils.Database, annotator_id: int,
                clock: Clock = time.monotonic) -> Shown | None:
        """The item to show: the one already on screen, else the annotator's next one.

        Starts the on-screen clock when an item is shown for the first time; reruns of the
        same item (typing a note, opening the rubric) keep it running. An item whose hold
        lapsed while on screen stays there: the answer about to be given is still recorded.
        """
        shown = session.get(self.key("current"))
        item: Shown | None = None
        if shown is not None:
            try:
                item = self.adapter.get(db, annotator_id, shown)
            except StoreError:
                item = None  # unassigned meanwhile (e.g. by an admin): move on
        if item is None:
            item = self.adapter.next(db, annotator_id, session.get(state.OPEN_TASKS))
        if item is None:
            self._forget(session)
            return None
        if self.adapter.identity(item) != shown or self.key("shown_at") not in session:
            self._show(session, annotator_id, item, clock)
        return item

    def choose(self, session: Session, db: sqlite_utils.Database, annotator_id: int, item: Ident, choice: Any,
               clock: Clock = time.monotonic) -> int | None:
        """Record the answer a key gave on the item on screen, then move on to the next item.

        ``item`` is the identity of the item the button was drawn for. A key that arrives after the item left
        the screen (a double tap, faster than the next item appeared) is dropped with a
        message: it must neither re-answer the item just done nor answer one the annotator
        has not seen. Returns the new row's id; None when the key was dropped or kept for a
        busy project.
        """
        if not self._on_screen(session, db, annotator_id, item, clock):
            return None
        row_id = self._save_or_keep(session, db, self._press(session, annotator_id, item, choice, clock))
        self._forget(session)
        return row_id

    def skip(self, session: Session, db: sqlite_utils.Database, annotator_id: int, item: Ident,
             clock: Clock = time.monotonic) -> None:
        """Record a skip of the item on screen and move on (dropped like ``choose`` if stale)."""
        if not self._on_screen(session, db, annotator_id, item, clock):
            return
        self._save_or_keep(session, db, self._press(session, annotator_id, item, None, clock))
        self._forget(session)
        session.setdefault(state.FLASH, "Skipped.")

    def back(self, session: Session, db: sqlite_utils.Database, annotator_id: int, item: Ident,
             clock: Clock = time.monotonic) -> bool:
        """Show the item before ``item`` again so its answer can be changed."""
        if not self._on_screen(session, db, annotator_id, item, clock):
            return False
        previous = self.adapter.previous(db, annotator_id, item)
        if previous is None:
            session[state.FLASH] = "There is no earlier item to go back to."
            return False
        self._keep_draft(session, annotator_id, item)
        self._show(session, annotator_id, previous, clock)
        return True

    def _press(self, session: Session, annotator_id: int, item: Ident, choice: Any, clock: Clock) -> Pending:
        note = str(session.get(self.key("note")) or "").strip()
        return Pending(self.adapter.task, annotator_id, item, choice, self._seconds(session, clock), note)

    def _save_or_keep(self, session: Session, db: sqlite_utils.Database, press: Pending) -> int | None:
        """Write ``press`` now, or keep it in the session's queue when the project is busy.

        Presses kept earlier go first, so answers reach the database in the order they were
        pressed; while any are waiting, a new one joins the end of the queue.
        """
        kept: list[Pending] = session.setdefault(state.PENDING, [])
        if not kept:
            try:
                return _write(db, press)
            except StoreBusy:
                pass
        kept.append(press)
        session[state.FLASH] = BUSY_MESSAGE
        return None

    def _show(self, session: Session, annotator_id: int, item: Shown, clock: Clock) -> None:
        ident, mark = self.adapter.identity(item), self.adapter.mark(item)
        session[self.key("current")] = ident
        session[self.key("shown_at")] = clock()
        session[self.key("shown_mark")] = mark
        # One note field for every item keeps the page layout still; it starts from the
        # item's own latest note (or this annotator's unsaved draft of it), so a note never
        # follows the annotator to the next item, nor reaches anyone else.
        session[self.key("note")] = session.get(self.key("drafts"), {}).pop((annotator_id, ident), mark[1])

    def _keep_draft(self, session: Session, annotator_id: int, item: Ident) -> None:
        """Keep a note typed on the item on screen, if it differs from the saved one, as a
        draft that comes back the next time the item is shown to this annotator."""
        typed = str(session.get(self.key("note")) or "")
        if typed.strip() and typed != session.get(self.key("shown_mark"), (None, ""))[1]:
            session.setdefault(self.key("drafts"), {})[(annotator_id, item)] = typed

    def _forget(self, session: Session) -> None:
        for part in state.ITEM_PARTS:
            session.pop(self.key(part), None)

    def _on_screen(self, session: Session, db: sqlite_utils.Database, annotator_id: int, item: Ident,
                   clock: Clock) -> bool:
        """Whether a key drawn for ``item`` may act: the item is the one on screen and nothing
        was recorded on it since it was shown; otherwise leave a message and refuse.

        The database check matters because a key pressed while the page is being redrawn can
        reach the server with the session as it was before the previous key was handled; the
        database never goes back, so one showing of an item takes one answer at most.

        When the item is still on screen but was answered or skipped elsewhere (another tab
        of the same annotator), it is shown afresh, typed note kept, so the next key acts.

        Raises:
            StoreError: the item is no longer assigned to this annotator at all, or this
                session signed in with an access token that has since been replaced.
        """
        state.check_token(session, db, annotator_id)
        if session.get(self.key("current")) != item:
            session[state.FLASH] = "That key came before the next item was on screen, so nothing was saved."
            return False
        stored = self.adapter.get(db, annotator_id, item)
        if self.adapter.mark(stored) == session.get(self.key("shown_mark")):
            return True
        self._keep_draft(session, annotator_id, item)
        shown_at = session.get(self.key("shown_at"))
        self._show(session, annotator_id, stored, clock)
        if shown_at is not None:  # the item never left the screen: its time runs from the first render
            session[self.key("shown_at")] = shown_at
        word = self.adapter.answer
        session[state.FLASH] = (
            f"Your {word} on this item changed since it was shown (in another window?), so that key "
            f"saved nothing. The item now shows your latest {word}; press the key again."
        )
        return False

    def _seconds(self, session: Session, clock: Clock) -> float | None:
        """Seconds the item on screen has been there, or None if the session lost the time."""
        shown_at = session.get(self.key("shown_at"))
        return None if shown_at is None else round(max(0.0, clock() - shown_at), 3)


RELEVANCE: Flow[Item, tuple[str, str]] = Flow(Relevance())
FAITHFULNESS: Flow[Card, str] = Flow(Verdicts("faithfulness"))
PAIRWISE: Flow[Card, str] = Flow(Verdicts("pairwise"))
CLAIMS: Flow[Card, str] = Flow(Verdicts("claims"))
CORRECTNESS: Flow[Card, str] = Flow(Verdicts("correctness"))
ANSWER_RELEVANCE: Flow[Card, str] = Flow(Verdicts("answer-relevance"))
NUGGETS: Flow[SupportCard, str] = Flow(Support())

#: The flow of each task page, by task name.
FLOWS: dict[str, Flow[Any, Any]] = {
    flow.task: flow for flow in (RELEVANCE, FAITHFULNESS, PAIRWISE, CLAIMS, CORRECTNESS, ANSWER_RELEVANCE,
                                   NUGGETS)
}


def _write(db: sqlite_utils.Database, press: Pending) -> int | None:
    task = FLOWS[press.task].adapter
    if press.choice is None:
        task.record_skip(db, press.annotator_id, press.item, press.seconds, press.note)
        return None
    return task.record(db, press.annotator_id, press.item, press.choice, press.seconds, press.note)


def pending(session: Session) -> int:
    """How many key presses wait for the project to be free."""
    return len(session.get(state.PENDING) or [])


def flush_pending(session: Session, db: sqlite_utils.Database) -> int:
    """Write the kept key presses, oldest first, until done or the project is busy again.

    Each write is its own transaction and leaves the queue only once committed, so a press
    is written once: never lost, never twice. A press the store refuses for good (the
    annotator deactivated meanwhile, the item taken away) is dropped with a message.

    Returns:
        How many presses still wait.
    """
    kept: list[Pending] = session.get(state.PENDING) or []
    while kept:
        try:
            _write(db, kept[0])
        except StoreBusy:
            break
        except StoreError as exc:
            session[state.FLASH] = f"Not saved: {exc}"
        kept.pop(0)
    if not kept:
        session.pop(state.PENDING, None)
    return len(kept)

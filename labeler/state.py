"""Session-state keys of the labelling app, and the labelling session built on them.

Every key the app keeps in ``st.session_state`` is named here, so no page invents its own.
The functions below take the session as a plain ``MutableMapping`` and never import
Streamlit: the labelling flow (which item is on screen, since when, what a key press does)
is ordinary Python that a test can drive with a dict and a fake clock.

Time on screen is measured on the server, from the first render of an item to the run that
handles the key press; the rerun after a key press is milliseconds, far below what a label
takes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from labeler import scheduling
from labeler.store import StoreBusy, StoreError
from labeler.store.schema import StoreReadOnly
from labeler.store import labels, sessions
from labeler.store.labels import Annotator, Item
from labeler.store.vocabulary import KINDS

#: Environment variable holding the project database path (set by ``goldpool serve``).
DB_ENV_VAR = "GOLDPOOL_DB"

#: Cookie holding the browser's session secret (``labeler.store.sessions``); never the token.
COOKIE = "goldpool_session"

# Keys of st.session_state. Widget keys are the ones a test drives.
DB = "gp_db"  # (path, thread id, sqlite_utils.Database): one connection per session and script thread
USER = "gp_user"  # the signed-in Annotator
LOGIN_ERROR = "gp_login_error"  # message of the last refused sign-in
SIGN_IN_NOTICE = "gp_sign_in_notice"  # why this sign-in is not kept (a read-only or busy project)
SIGN_IN_FAILURES = "gp_sign_in_failures"  # (wrong tokens in a row, clock reading until which sign-in waits)
TOKEN_INPUT = "gp_token"  # widget: the "Access token" password field
LOGIN_SUBMIT = "gp_login"  # widget: the sign-in button
LOGOUT = "gp_logout"  # widget: the sign-out button
CURRENT = "gp_current"  # (query_id, doc_id) of the item on screen
SHOWN_AT = "gp_shown_at"  # clock reading when the item on screen was first rendered
SHOWN_LABEL = "gp_shown_label"  # (relevance, note) the item had in the database when shown
FLASH = "gp_flash"  # one-line message shown once on the next render
NOTE = "gp_note"  # widget: the note field, reset to the item's own note whenever an item is shown
DRAFTS = "gp_drafts"  # {(annotator_id, query_id, doc_id): note} typed, not saved, item left meanwhile
BACK = "gp_back"  # widget: the `u` button
SKIP = "gp_skip"  # widget: the `s` button
RUBRIC_TEXT = "gp_rubric_text"  # widget: the rubric editor
RUBRIC_SAVE = "gp_rubric_save"  # widget: save the rubric
TASKS_INPUT = "gp_tasks"  # widget: the admin's choice of task pages annotators see
TASKS_SAVE = "gp_tasks_save"  # widget: save that choice
PENDING = "gp_pending"  # [Pending, ...]: key presses kept while the project was busy, oldest first
TOKEN_FP = "gp_token_fp"  # fingerprint of the access token the user signed in with
SESSION_SECRET = "gp_session_secret"  # secret of this browser's kept sign-in (sessions table)
COOKIE_CLEAR = "gp_cookie_clear"  # set at sign-out: the next render clears the cookie
HIGHLIGHT = "gp_highlight"  # widget: the annotator's "mark query words" switch
ISSUED = "gp_issued"  # (name, token) just issued on the Annotators page, shown once
NEW_NAME = "gp_new_name"  # widget: name of the annotator to add
NEW_ROLE = "gp_new_role"  # widget: their role
ADD_SUBMIT = "gp_add_annotator"  # widget: add them
PROJECT = "gp_project"  # (clock, pool size, pool labelled, own labels then): the project figure
KEYS_HANDLED = "gp_keys_handled"  # how many item keys (grade, verdict, back, skip) this session handled

#: Seconds between two full counts of the project's labelled pool entries for one session.
PROJECT_REFRESH = 30.0

Session = MutableMapping[str, Any]
Clock = Callable[[], float]

#: Shown while key presses wait for a busy project.
BUSY_MESSAGE = (
    "The project is busy (another program is writing to it). Your key press is kept and will "
    "be saved, in order, as soon as the project is free; this page retries by itself."
)

#: Wrong tokens a browser session may type in a row before it must wait (see :func:`sign_in`).
FREE_ATTEMPTS = 3
#: Seconds of the first wait; each further wrong token doubles it, up to ``LONGEST_WAIT``.
FIRST_WAIT = 5.0
LONGEST_WAIT = 300.0

#: Shown to someone signed in to a project that cannot be written here (an archived copy).
READ_ONLY_NOTICE = (
    "This project is read-only here: you can read it, but nothing you do can be saved. "
    "This sign-in lasts until you reload the page."
)
#: Shown to someone signed in while the project was too busy to keep the sign-in.
UNKEPT_NOTICE = (
    "The project was busy, so this sign-in is not kept: a reload of the page will ask for "
    "your access token again."
)


@dataclass(frozen=True, slots=True)
class Pending:
    """A grade (or, with ``relevance`` None, a skip) pressed while the project was busy."""

    annotator_id: int
    query_id: str
    doc_id: str
    relevance: int | None
    seconds: float | None
    note: str


def grade_key(relevance: int) -> str:
    """Widget key of the button (and keyboard shortcut) for one grade."""
    return f"gp_grade_{relevance}"


def task_key(task: str, part: str) -> str:
    """Session-state key of one part of a verdict page's flow (``labeler.flow``).

    Each task page keeps its own item on screen, clock, note and drafts, so moving between
    pages never carries an item or a note across. ``part`` is one of ``current``,
    ``shown_at``, ``shown_mark``, ``note`` (widget), ``drafts``, ``back`` and ``skip`` (widgets).
    """
    return f"gp_{task}_{part}"


def choice_key(task: str, choice: str) -> str:
    """Widget key of a verdict page's button (and keyboard shortcut) for one choice."""
    return f"gp_{task}_choice_{choice}"


def active_key(annotator_id: int) -> str:
    """Widget key of an annotator's activate/deactivate toggle on the admin page."""
    return f"gp_active_{annotator_id}"


def reissue_key(annotator_id: int) -> str:
    """Widget key of an annotator's "New token" button on the admin page."""
    return f"gp_reissue_{annotator_id}"


def adjudication_key(query_id: str, doc_id: str) -> str:
    """Widget key prefix of one item's controls in the adjudication queue."""
    return f"gp_adj::{query_id}::{doc_id}"


def sign_in(
    session: Session, db: sqlite_utils.Database, token: str, clock: Clock = time.monotonic
) -> Annotator | None:
    """Check ``token``; on success keep the annotator in the session, else keep an error.

    A successful sign-in also opens a kept sign-in (``labeler.store.sessions``) whose secret
    the app keeps in the browser's cookie (``SESSION_SECRET``), so a reload or a link typed
    in the address bar finds the annotator signed in.

    Every check costs the server a slow hash, so a browser session that typed
    ``FREE_ATTEMPTS`` wrong tokens in a row is refused sign-in, without any check, for
    ``FIRST_WAIT`` seconds, twice as long after each further wrong token (at most
    ``LONGEST_WAIT``). Nothing sleeps: other sessions are served meanwhile.
    """
    at = clock()
    failures, until = session.get(SIGN_IN_FAILURES, (0, 0.0))
    if until > at:
        session[LOGIN_ERROR] = _wait_message(until - at)
        return None
    user = labels.authenticate(db, token.strip()) if token.strip() else None
    if user is None:
        session[LOGIN_ERROR] = "That access token was not recognised. Check it and try again."
        if token.strip():
            failures += 1
            if failures >= FREE_ATTEMPTS:
                until = at + min(FIRST_WAIT * 2 ** (failures - FREE_ATTEMPTS), LONGEST_WAIT)
                session[LOGIN_ERROR] += " " + _wait_message(until - at)
            session[SIGN_IN_FAILURES] = (failures, until)
        return None
    # The kept sign-in is a convenience: a project that cannot take its row now still lets
    # the annotator in, for this page only, and says why a reload asks for the token again.
    try:
        secret: str | None = sessions.open_session(db, user)
        notice = None
    except StoreReadOnly:
        secret, notice = None, READ_ONLY_NOTICE
    except StoreBusy:
        secret, notice = None, UNKEPT_NOTICE
    _enter(session, db, user, sessions.token_fingerprint(db, user.id) or "", secret)
    if notice:
        session[SIGN_IN_NOTICE] = notice
    return user


def _wait_message(seconds: float) -> str:
    return f"Too many wrong access tokens from this browser: try again in {math.ceil(seconds)} s."


def resume(session: Session, db: sqlite_utils.Database, secret: str | None) -> Annotator | None:
    """Sign in with the browser's session secret (from its cookie), if it is still good."""
    if not isinstance(secret, str) or not secret:
        return None
    found = sessions.resume_session(db, secret)
    if found is None:
        return None
    _enter(session, db, found[0], found[1], secret)
    return found[0]


def _enter(
    session: Session, db: sqlite_utils.Database, user: Annotator, fingerprint: str, secret: str | None
) -> None:
    session.pop(LOGIN_ERROR, None)
    session.pop(SIGN_IN_NOTICE, None)
    session.pop(SIGN_IN_FAILURES, None)
    session.pop(COOKIE_CLEAR, None)
    _forget_item(session)
    session.pop(DRAFTS, None)
    forget_tasks(session)
    session[USER] = user
    session[TOKEN_FP] = fingerprint
    if secret:
        session[SESSION_SECRET] = secret
    else:
        session.pop(SESSION_SECRET, None)


def sign_out(session: Session, db: sqlite_utils.Database | None = None) -> None:
    """Forget the signed-in annotator, the item on screen and any unsaved notes.

    Unsaved notes go too: the next person at this browser must neither see them nor save
    them under their own name. With ``db``, the kept sign-in ends as well (its secret signs
    nobody in again) and the annotator's idle holds lapse, so nobody waits for them.
    """
    user = session.pop(USER, None)
    secret = session.pop(SESSION_SECRET, None)
    if db is not None and secret:
        sessions.end_session(db, secret)
    if db is not None and user is not None:
        labels.release_holds(db, user.id)
    session.pop(TOKEN_FP, None)
    session.pop(SIGN_IN_NOTICE, None)
    session[COOKIE_CLEAR] = True
    _forget_item(session)
    session.pop(DRAFTS, None)
    forget_tasks(session)


def forget_tasks(session: Session) -> None:
    """Forget every verdict page's item on screen and unsaved notes (at sign-in and sign-out)."""
    for task in KINDS:
        for part in ("current", "shown_at", "shown_mark", "note", "drafts"):
            session.pop(task_key(task, part), None)


def signed_in(session: Session, db: sqlite_utils.Database) -> Annotator | None:
    """The signed-in annotator, re-read from the database on every run.

    Re-reading means a deactivation, a role change or a new access token takes effect at
    the next click, not at the next sign-in.
    """
    user = session.get(USER)
    if user is None:
        return None
    fresh = labels.annotator_by_id(db, user.id)
    if fresh is None or not fresh.active:
        sign_out(session)
        session[LOGIN_ERROR] = "This access token has been deactivated."
        return None
    if session.get(TOKEN_FP) != sessions.token_fingerprint(db, user.id):
        sign_out(session)
        session[LOGIN_ERROR] = "A new access token was issued for you: sign in with the new one."
        return None
    session[USER] = fresh
    return fresh


def keep_after_new_token(session: Session, db: sqlite_utils.Database, user: Annotator) -> None:
    """Keep the signed-in user signed in after they gave themselves a new token (they hold it):
    a new kept sign-in replaces the ones the new token ended."""
    secret = sessions.open_session(db, user)
    session[TOKEN_FP] = sessions.token_fingerprint(db, user.id)
    session[SESSION_SECRET] = secret


def project_counts(
    session: Session, db: sqlite_utils.Database, own_done: int, clock: Clock = time.monotonic
) -> tuple[int, int]:
    """(pool entries, pool entries labelled by anyone) for the progress line.

    Counting every label takes tens of milliseconds on a large project, too slow for every
    key press: the count is taken at most every ``PROJECT_REFRESH`` seconds, and in between
    the annotator's own new labels are added to it (a second copy of an overlap item counts
    once more until the next count).
    """
    cached = session.get(PROJECT)
    if cached is None or clock() - cached[0] > PROJECT_REFRESH or own_done < cached[3]:
        size, labelled = labels.pool_progress(db)
        session[PROJECT] = (clock(), size, labelled, own_done)
        return size, labelled
    _, size, labelled, done_then = cached
    return size, min(size, labelled + own_done - done_then)


def check_token(session: Session, db: sqlite_utils.Database, annotator_id: int) -> None:
    """Refuse an action of a browser signed in with an access token that has since been
    replaced. Button callbacks run before the page checks who is signed in, so each action
    checks for itself.

    A session without a fingerprint never passes :func:`signed_in`, so it never drew the
    buttons whose callbacks call this; such a session (a test's plain dict) is let through.

    Raises:
        StoreError: the token this session signed in with is no longer the annotator's.
    """
    if TOKEN_FP in session and session[TOKEN_FP] != sessions.token_fingerprint(db, annotator_id):
        raise StoreError("a new access token was issued for you: sign in with the new one")


def highlighting(db: sqlite_utils.Database, annotator_id: int) -> bool:
    """Whether this annotator wants the query's words marked in chunks (their saved choice)."""
    return bool(sessions.preference(db, annotator_id, "highlight"))


def current_item(
    session: Session, db: sqlite_utils.Database, annotator_id: int, clock: Clock = time.monotonic
) -> Item | None:
    """The item to show: the one already on screen, else the annotator's next one.

    Starts the on-screen clock when an item is shown for the first time; reruns of the same
    item (typing a note, opening the rubric) keep it running. An item whose hold lapsed while
    on screen stays there: the label the annotator is about to give is still recorded.
    """
    shown = session.get(CURRENT)
    item: Item | None = None
    if shown is not None:
        try:
            item = labels.get_item(db, annotator_id, *shown, allow_lapsed=True)
        except StoreError:
            item = None  # unassigned meanwhile (e.g. by an admin): move on
    if item is None:
        item = scheduling.next_item(db, annotator_id)
    if item is None:
        _forget_item(session)
        return None
    if (item.query_id, item.doc_id) != shown or SHOWN_AT not in session:
        _show(session, annotator_id, item, clock)
    return item


def label(
    session: Session,
    db: sqlite_utils.Database,
    annotator_id: int,
    query_id: str,
    doc_id: str,
    relevance: int,
    clock: Clock = time.monotonic,
) -> int | None:
    """Commit one grade for the item on screen, then move on to the next item.

    ``query_id``/``doc_id`` are those the key's button was drawn with. A key that arrives
    after the item left the screen (a double tap, faster than the next item appeared) is
    dropped with a message: it must neither re-grade the item just done nor grade one the
    annotator has not seen. Returns the new row's id, or None when the key was dropped.
    """
    if not _on_screen(session, db, annotator_id, query_id, doc_id, clock):
        return None
    note = str(session.get(NOTE) or "").strip()
    press = Pending(annotator_id, query_id, doc_id, relevance, _seconds(session, clock), note)
    row_id = _save_or_keep(session, db, press)
    _forget_item(session)
    return row_id


def skip(
    session: Session,
    db: sqlite_utils.Database,
    annotator_id: int,
    query_id: str,
    doc_id: str,
    clock: Clock = time.monotonic,
) -> None:
    """Record a skip for the item on screen and move on (dropped like ``label`` if stale)."""
    if not _on_screen(session, db, annotator_id, query_id, doc_id, clock):
        return
    note = str(session.get(NOTE) or "").strip()
    _save_or_keep(session, db, Pending(annotator_id, query_id, doc_id, None, _seconds(session, clock), note))
    _forget_item(session)
    session.setdefault(FLASH, "Skipped.")


def _write(db: sqlite_utils.Database, press: Pending) -> int | None:
    if press.relevance is None:
        labels.record_skip(db, press.annotator_id, press.query_id, press.doc_id, press.seconds, press.note)
        return None
    return labels.record_judgment(
        db, press.annotator_id, press.query_id, press.doc_id, press.relevance, press.seconds, press.note
    )


def _save_or_keep(session: Session, db: sqlite_utils.Database, press: Pending) -> int | None:
    """Write ``press`` now, or keep it in the session's queue when the project is busy.

    Presses kept earlier go first, so labels reach the database in the order they were
    pressed; while any are waiting, a new one joins the end of the queue.
    """
    queue: list[Pending] = session.setdefault(PENDING, [])
    if not queue:
        try:
            return _write(db, press)
        except StoreBusy:
            pass
    queue.append(press)
    session[FLASH] = BUSY_MESSAGE
    return None


def pending(session: Session) -> int:
    """How many key presses wait for the project to be free."""
    return len(session.get(PENDING) or [])


def flush_pending(session: Session, db: sqlite_utils.Database) -> int:
    """Write the kept key presses, oldest first, until done or the project is busy again.

    Each write is its own transaction and leaves the queue only once committed, so a press
    is written once: never lost, never twice. A press the store refuses for good (the
    annotator deactivated meanwhile, the item taken away) is dropped with a message.

    Returns:
        How many presses still wait.
    """
    queue: list[Pending] = session.get(PENDING) or []
    while queue:
        try:
            _write(db, queue[0])
        except StoreBusy:
            break
        except StoreError as exc:
            session[FLASH] = f"Not saved: {exc}"
        queue.pop(0)
    if not queue:
        session.pop(PENDING, None)
    return len(queue)


def back(
    session: Session,
    db: sqlite_utils.Database,
    annotator_id: int,
    query_id: str,
    doc_id: str,
    clock: Clock = time.monotonic,
) -> bool:
    """Show the item before (query_id, doc_id) again so its label can be changed."""
    if not _on_screen(session, db, annotator_id, query_id, doc_id, clock):
        return False
    previous = labels.previous_item(db, annotator_id, query_id, doc_id)
    if previous is None:
        session[FLASH] = "There is no earlier item to go back to."
        return False
    _keep_draft(session, annotator_id, query_id, doc_id)
    _show(session, annotator_id, previous, clock)
    return True


def key_handled(session: Session) -> int:
    """Count one item key (grade, verdict, back or skip) handled by the server; return the count.

    The page shows the count at the end of every run (``labeler.app``), and the browser holds
    the keys pressed after an item key until the page shows that key handled: see
    ``labeler.app._KEY_GUARD`` for why.
    """
    session[KEYS_HANDLED] = int(session.get(KEYS_HANDLED) or 0) + 1
    return session[KEYS_HANDLED]


def keys_handled(session: Session) -> int:
    """How many item keys this session has handled so far."""
    return int(session.get(KEYS_HANDLED) or 0)


def pop_flash(session: Session) -> str | None:
    """The one-time message left by the last action, if any (and forget it)."""
    return session.pop(FLASH, None)


def _show(session: Session, annotator_id: int, item: Item, clock: Clock) -> None:
    session[CURRENT] = (item.query_id, item.doc_id)
    session[SHOWN_AT] = clock()
    session[SHOWN_LABEL] = (item.relevance, item.note)
    # One note field for every item keeps the page layout still; it starts from the
    # item's own latest note (or this annotator's unsaved draft of it), so a note never
    # follows the annotator to the next item, nor reaches anyone else.
    session[NOTE] = session.get(DRAFTS, {}).pop((annotator_id, item.query_id, item.doc_id), item.note)


def _keep_draft(session: Session, annotator_id: int, query_id: str, doc_id: str) -> None:
    """Keep a note typed on the item on screen, if it differs from the saved one, as a draft
    that comes back the next time the item is shown to this annotator."""
    typed = str(session.get(NOTE) or "")
    if typed.strip() and typed != session.get(SHOWN_LABEL, (None, ""))[1]:
        session.setdefault(DRAFTS, {})[(annotator_id, query_id, doc_id)] = typed


def _forget_item(session: Session) -> None:
    session.pop(CURRENT, None)
    session.pop(SHOWN_AT, None)
    session.pop(SHOWN_LABEL, None)
    session.pop(NOTE, None)


def _on_screen(
    session: Session, db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str, clock: Clock
) -> bool:
    """Whether a key drawn for (query_id, doc_id) may act: the item is the one on screen and
    nothing was recorded on it since it was shown; otherwise leave a message and refuse.

    The database check matters because a key pressed while the page is being redrawn can
    reach the server with the session as it was before the previous key was handled; the
    database never goes back, so one showing of an item takes one label at most.

    When the item is still on screen but was labelled or skipped elsewhere (another tab of
    the same annotator), it is shown afresh, typed note kept, so the next key acts.

    Raises:
        StoreError: the item is no longer assigned to this annotator at all.
    """
    check_token(session, db, annotator_id)
    if session.get(CURRENT) != (query_id, doc_id):
        session[FLASH] = "That key came before the next item was on screen, so nothing was saved."
        return False
    stored = labels.get_item(db, annotator_id, query_id, doc_id, allow_lapsed=True)
    if (stored.relevance, stored.note) == session.get(SHOWN_LABEL):
        return True
    _keep_draft(session, annotator_id, query_id, doc_id)
    shown_at = session.get(SHOWN_AT)
    _show(session, annotator_id, stored, clock)
    if shown_at is not None:  # the item never left the screen: its time runs from the first render
        session[SHOWN_AT] = shown_at
    session[FLASH] = (
        "Your label on this item changed since it was shown (in another window?), so that key "
        "saved nothing. The item now shows your latest label; press the key again."
    )
    return False


def _seconds(session: Session, clock: Clock) -> float | None:
    """Seconds the item on screen has been there, or None if the session lost the time."""
    if SHOWN_AT not in session:
        return None
    return round(max(0.0, clock() - session[SHOWN_AT]), 3)

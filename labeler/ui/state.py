"""Session-state keys of the labelling app, and the signed-in session built on them.

Every key the app keeps in ``st.session_state`` is named here, so no page invents its own.
The functions below take the session as a plain ``MutableMapping`` and never import
Streamlit, so a test drives them with a dict. The keyboard flow of the task pages (which
item is on screen, since when, what a key press does) is ``labeler.ui.flow``.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, MutableMapping
from typing import Any

import sqlite_utils

from labeler.store import StoreBusy, StoreError, access, labels, sessions
from labeler.store.corpus import database_file
from labeler.store.errors import StoreReadOnly
from labeler.store.holds import release_holds
from labeler.store.settings import enabled_tasks, get_settings
from labeler.store.vocabulary import TASKS, Annotator

#: Environment variable holding the project database path (set by ``goldpool serve``).
DB_ENV_VAR = "GOLDPOOL_DB"

#: Cookie holding the browser's session secret (``labeler.store.sessions``); never the token.
COOKIE = "goldpool_session"

# Keys of st.session_state. Widget keys are the ones a test drives.
DB = "gp_db"  # (path, thread id, sqlite_utils.Database): one connection per session and script thread
USER = "gp_user"  # the signed-in Annotator
LOGIN_ERROR = "gp_login_error"  # message of the last refused sign-in
SIGN_IN_NOTICE = "gp_sign_in_notice"  # why this sign-in is not kept (a read-only or busy project)
TOKEN_INPUT = "gp_token"  # widget: the "Access token" password field
LOGIN_SUBMIT = "gp_login"  # widget: the sign-in button
LOGOUT = "gp_logout"  # widget: the sign-out button
FLASH = "gp_flash"  # one-line message shown once on the next render
RUBRIC_TEXT = "gp_rubric_text"  # widget: the rubric editor
RUBRIC_SAVE = "gp_rubric_save"  # widget: save the rubric
TASKS_INPUT = "gp_tasks"  # widget: the admin's choice of task pages annotators see
TASKS_SAVE = "gp_tasks_save"  # widget: save that choice
PENDING = "gp_pending"  # [flow.Pending, ...]: key presses kept while the project was busy, oldest first
TOKEN_FP = "gp_token_fp"  # fingerprint of the access token the user signed in with
SESSION_SECRET = "gp_session_secret"  # secret of this browser's kept sign-in (sessions table)
COOKIE_CLEAR = "gp_cookie_clear"  # set at sign-out: the next render clears the cookie
HIGHLIGHT = "gp_highlight"  # widget: the annotator's "mark query words" switch
ISSUED = "gp_issued"  # (name, token) just issued on the Annotators page, shown once
NEW_NAME = "gp_new_name"  # widget: name of the annotator to add
NEW_ROLE = "gp_new_role"  # widget: their role
ADD_SUBMIT = "gp_add_annotator"  # widget: add them
PROJECT = "gp_project"  # (clock, work size, work labelled, own labels then, sample or None): the project figure
KEYS_HANDLED = "gp_keys_handled"  # how many item keys (grade, verdict, back, skip) this session handled
REFUSED = "gp_refused"  # set when an action was refused because this sign-in had ended elsewhere
OPEN_TASKS = "gp_open_tasks"  # the tasks open to annotators, read once per run (read_open_tasks)

#: Seconds between two full counts of the project's labelled pool entries for one session.
PROJECT_REFRESH = 30.0

Session = MutableMapping[str, Any]
Clock = Callable[[], float]

#: Wrong tokens one client may send in a row for one annotator before it must wait (see :func:`sign_in`).
FREE_ATTEMPTS = 3
#: Wrong tokens one client may send in a row, whichever annotators they name, before it must wait.
CLIENT_FREE_ATTEMPTS = 10
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

#: Shown on the sign-in form of a tab whose kept sign-in ended elsewhere: signed out in another
#: tab or window of the browser (they share it), or past its hours.
ENDED_ELSEWHERE = (
    "This sign-in has ended: you signed out in another tab or window of this browser, or it "
    "lasted its hours. Sign in again to go on."
)
#: Added to it when the tab's last key press (or click) was refused for that reason.
KEY_NOT_SAVED = "Your last key press was not saved, nor the note typed with it."

#: Parts of a task page's flow that belong to the item on screen (``task_key``): its
#: identity, the clock reading when it was first rendered, its (answer, note) then, the note
#: field.
ITEM_PARTS = ("current", "shown_at", "shown_mark", "note")


def task_key(task: str, part: str) -> str:
    """Session-state key of one part of a task page's flow (``labeler.ui.flow``).

    Each task page keeps its own item on screen, clock, note and drafts, so moving between
    pages never carries an item or a note across. ``part`` is one of :data:`ITEM_PARTS`,
    ``drafts`` ({(annotator_id, item identity): note} typed, not saved, item left meanwhile),
    or the widgets ``back`` (the `u` button) and ``skip`` (the `s` button).
    """
    return f"gp_{task}_{part}"


def choice_key(task: str, choice: object) -> str:
    """Widget key of a task page's button (and keyboard shortcut) for one choice."""
    return f"gp_{task}_choice_{choice}"


def grade_key(relevance: int) -> str:
    """Widget key of the relevance page's button (and keyboard shortcut) for one grade."""
    return choice_key("relevance", relevance)


# The relevance page's flow keys, named for the view and tests that use them often.
CURRENT = task_key("relevance", "current")  # (query_id, doc_id) of the item on screen
NOTE = task_key("relevance", "note")  # widget: the note field
DRAFTS = task_key("relevance", "drafts")
BACK = task_key("relevance", "back")
SKIP = task_key("relevance", "skip")


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
    session: Session, db: sqlite_utils.Database, token: str, clock: Clock = time.monotonic, *, client: str = ""
) -> Annotator | None:
    """Check ``token``; on success keep the annotator in the session, else keep an error.

    A successful sign-in also opens a kept sign-in (``labeler.store.sessions``) whose secret
    the app keeps in the browser's cookie (``SESSION_SECRET``), so a reload or a link typed
    in the address bar finds the annotator signed in.

    A check can cost the server a slow hash (a token stored with scrypt), so wrong tokens make
    their sender wait. The count is kept by the server, not in the browser session, so
    neither a reload nor another tab starts it afresh: per ``client`` (the address the app
    sees, :func:`client_address`) and annotator the token names (its ``gp<id>`` part),
    ``FREE_ATTEMPTS`` wrong tokens in a row are let through, then sign-in is refused, without
    any check, for ``FIRST_WAIT`` seconds, twice as long after each further wrong token (at most
    ``LONGEST_WAIT``); per client whatever the token names, ``CLIENT_FREE_ATTEMPTS``. Keyed by
    both, a client behind a proxy that makes every client look alike locks out nobody else with
    a typo, and tokens naming ever new ids still meet the client's count. A right token clears
    both counts. Nothing sleeps: other sessions are served meanwhile.
    """
    at = clock()
    keys = _throttle_keys(db, client, token)
    with _FAILURES_LOCK:
        until = max(_FAILURES.get(key, (0, 0.0))[1] for key, _ in keys)
    if until > at:
        session[LOGIN_ERROR] = _wait_message(until - at)
        return None
    user = access.authenticate(db, token.strip()) if token.strip() else None
    if user is None:
        session[LOGIN_ERROR] = "That access token was not recognised. Check it and try again."
        if token.strip():
            until = _count_failure(keys, at)
            if until > at:
                session[LOGIN_ERROR] += " " + _wait_message(until - at)
        return None
    with _FAILURES_LOCK:
        for key, _ in keys:
            _FAILURES.pop(key, None)
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


def client_address(ip_address: str | None) -> str:
    """Who the wrong-token count of :func:`sign_in` is kept for: the address Streamlit gives
    (``st.context.ip_address``), or ``local`` when it gives none (a browser on this machine).

    Behind a reverse proxy the address is the proxy's, unless the server trusts that proxy's
    ``X-Forwarded-For``: Streamlit's server (uvicorn) does so for a proxy connecting from
    127.0.0.1 or ::1 (the README's nginx on the same machine), or from the addresses listed in
    the ``FORWARDED_ALLOW_IPS`` environment variable, and then gives the client's address as
    that proxy forwarded it. From anywhere else the header is ignored, so a remote client
    cannot choose its own address (a program on this machine can, as it could open the
    database itself).

    >>> client_address(None), client_address("203.0.113.7")
    ('local', '203.0.113.7')
    """
    return ip_address.strip() if isinstance(ip_address, str) and ip_address.strip() else "local"


_TOKEN_ID = re.compile(r"\s*gp(\d{1,12})\.")
#: Wrong-token counts: (database file, client, ``gp<id>`` named or ``*`` for the client as a
#: whole) -> (wrong tokens in a row, clock reading until which sign-in waits).
_FAILURES: dict[tuple[str, str, str], tuple[int, float]] = {}
_FAILURES_LOCK = threading.Lock()
#: Counts kept at most; beyond it, those not making anyone wait are forgotten first.
_FAILURES_KEPT = 100_000


def _throttle_keys(db: sqlite_utils.Database, client: str, token: str) -> list[tuple[tuple[str, str, str], int]]:
    """The counts a token from ``client`` meets, each with the wrong tokens it lets through."""
    where = str(database_file(db))
    named = _TOKEN_ID.match(token)
    target = f"gp{int(named[1])}" if named else "?"
    return [((where, client, target), FREE_ATTEMPTS), ((where, client, "*"), CLIENT_FREE_ATTEMPTS)]


def _count_failure(keys: list[tuple[tuple[str, str, str], int]], at: float) -> float:
    """Count one wrong token in each of ``keys``; return until when sign-in now waits."""
    longest = 0.0
    with _FAILURES_LOCK:
        if len(_FAILURES) >= _FAILURES_KEPT:
            for key in [k for k, (_, until) in _FAILURES.items() if until <= at]:
                del _FAILURES[key]
        for key, free in keys:
            failures, until = _FAILURES.get(key, (0, 0.0))
            failures += 1
            if failures >= free:
                until = at + min(FIRST_WAIT * 2 ** (failures - free), LONGEST_WAIT)
            _FAILURES[key] = (failures, until)
            longest = max(longest, until)
    return longest


def _wait_message(seconds: float) -> str:
    return f"Too many wrong access tokens from this address: try again in {math.ceil(seconds)} s."


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
    session.pop(COOKIE_CLEAR, None)
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
        release_holds(db, user.id)
    session.pop(TOKEN_FP, None)
    session.pop(SIGN_IN_NOTICE, None)
    session.pop(FLASH, None)  # a message of this sign-in is not for whoever signs in next
    session.pop(REFUSED, None)
    session[COOKIE_CLEAR] = True
    forget_tasks(session)


def forget_tasks(session: Session) -> None:
    """Forget every task page's item on screen and unsaved notes (at sign-in and sign-out)."""
    for task in TASKS:
        for part in (*ITEM_PARTS, "drafts"):
            session.pop(task_key(task, part), None)


def signed_in(session: Session, db: sqlite_utils.Database) -> Annotator | None:
    """The signed-in annotator, re-read from the database on every run.

    Re-reading means a deactivation, a role change or a new access token takes effect at
    the next click, not at the next sign-in.
    """
    user = session.get(USER)
    if user is None:
        return None
    fresh = access.annotator_by_id(db, user.id)
    if fresh is None or not fresh.active:
        sign_out(session)
        session[LOGIN_ERROR] = "This access token has been deactivated."
        return None
    if session.get(TOKEN_FP) != sessions.token_fingerprint(db, user.id):
        sign_out(session)
        session[LOGIN_ERROR] = "A new access token was issued for you: sign in with the new one."
        return None
    if not _sign_in_stands(session, db):
        refused = session.pop(REFUSED, False)
        sign_out(session)
        # The cookie is this browser's, and may already hold a newer sign-in of another tab.
        session.pop(COOKIE_CLEAR, None)
        session[LOGIN_ERROR] = ENDED_ELSEWHERE + (" " + KEY_NOT_SAVED if refused else "")
        return None
    session[USER] = fresh
    return fresh


def _sign_in_stands(session: Session, db: sqlite_utils.Database) -> bool:
    """Whether this session's kept sign-in still stands (``sessions.session_open``). A session
    without one (signed in while the project could not keep it, or a test's plain dict) has
    nothing another tab could end, and stands."""
    secret = session.get(SESSION_SECRET)
    return not secret or sessions.session_open(db, secret)


def keep_after_new_token(session: Session, db: sqlite_utils.Database, user: Annotator) -> None:
    """Keep the signed-in user signed in after they gave themselves a new token (they hold it):
    a new kept sign-in replaces the ones the new token ended."""
    secret = sessions.open_session(db, user)
    session[TOKEN_FP] = sessions.token_fingerprint(db, user.id)
    session[SESSION_SECRET] = secret


def read_open_tasks(session: Session, db: sqlite_utils.Database) -> tuple[str, ...]:
    """Read the tasks open to annotators for this run and keep them in the session, where the
    page and the item it fetches find them (:func:`open_tasks`). The app calls it once at the
    start of every signed-in run, so one run reads them once, and no run sees another's."""
    session[OPEN_TASKS] = enabled_tasks(db)
    return session[OPEN_TASKS]


def open_tasks(session: Session, db: sqlite_utils.Database) -> tuple[str, ...]:
    """The tasks open to annotators: as read for this run (:func:`read_open_tasks`), or read
    now when this run has not read them."""
    kept = session.get(OPEN_TASKS)
    return enabled_tasks(db) if kept is None else kept


def project_counts(
    session: Session, db: sqlite_utils.Database, own_done: int, clock: Clock = time.monotonic
) -> tuple[int, int]:
    """(pool entries, pool entries labelled by anyone) for the progress line.

    The figures are read at most every ``PROJECT_REFRESH`` seconds per served project (every
    session of the process shares them; counting a designed sample's labels reads the whole
    sample), and in between the annotator's own new labels are added to them (a second copy
    of an overlap item counts once more until the next count).
    """
    cached = session.get(PROJECT)
    if cached is None or clock() - cached[0] > PROJECT_REFRESH or own_done < cached[3]:
        at, size, labelled, sample = _pool_counts(db, clock)
        session[PROJECT] = (at, size, labelled, own_done, sample)
        return size, labelled
    _, size, labelled, done_then, _ = cached
    return size, min(size, labelled + own_done - done_then)


def project_sample(session: Session) -> str | None:
    """The designed sample the last :func:`project_counts` counted (None: the whole pool), so
    the progress line names the work its figures are of, with no read of its own."""
    cached = session.get(PROJECT)
    return None if cached is None else cached[4]


_POOL_COUNTS: dict[str, tuple[float, int, int, str | None]] = {}  # database file: (clock reading, size, labelled, sample)
_POOL_COUNTS_LOCK = threading.Lock()


def _pool_counts(db: sqlite_utils.Database, clock: Clock) -> tuple[float, int, int, str | None]:
    """(clock reading, size, labelled, sample) of the project's last count if it is at most
    ``PROJECT_REFRESH`` seconds old, else of a new count, kept for the other sessions. The
    work counted is the designed sample when one is handed out (``labels.pool_progress``)."""
    key = str(database_file(db))
    with _POOL_COUNTS_LOCK:  # held while counting: sessions arriving meanwhile take that count
        shared = _POOL_COUNTS.get(key)
        at = clock()
        if shared is None or at - shared[0] > PROJECT_REFRESH or at < shared[0]:
            shared = _POOL_COUNTS[key] = (at, *labels.pool_progress(db), get_settings(db).sample)
    return shared


def check_token(session: Session, db: sqlite_utils.Database, annotator_id: int) -> None:
    """Refuse an action of a browser signed in with an access token that has since been
    replaced, or whose kept sign-in has ended (signed out in another tab of the browser, or
    expired). Button callbacks run before the page checks who is signed in, so each action
    checks for itself; the run that follows shows the sign-in form, saying that the action
    was not saved.

    A session without a fingerprint never passes :func:`signed_in`, so it never drew the
    buttons whose callbacks call this; such a session (a test's plain dict) is let through.

    Raises:
        StoreError: the token this session signed in with is no longer the annotator's, or
            its kept sign-in ended.
    """
    if TOKEN_FP in session and session[TOKEN_FP] != sessions.token_fingerprint(db, annotator_id):
        raise StoreError("a new access token was issued for you: sign in with the new one")
    if not _sign_in_stands(session, db):
        session[REFUSED] = True
        raise StoreError("this sign-in has ended (signed out in another tab?): sign in again")


def highlighting(db: sqlite_utils.Database, annotator_id: int) -> bool:
    """Whether this annotator wants the query's words marked in chunks (their saved choice)."""
    return bool(sessions.preference(db, annotator_id, "highlight"))


def key_handled(session: Session) -> int:
    """Count one item key (grade, verdict, back or skip) handled by the server; return the count.

    The page shows the count at the end of every run (``labeler.app``), and the browser holds
    the keys pressed after an item key until the page shows that key handled: see
    ``labeler.ui.key_guard`` for why.
    """
    session[KEYS_HANDLED] = int(session.get(KEYS_HANDLED) or 0) + 1
    return session[KEYS_HANDLED]


def keys_handled(session: Session) -> int:
    """How many item keys this session has handled so far."""
    return int(session.get(KEYS_HANDLED) or 0)


def pop_flash(session: Session) -> str | None:
    """The one-time message left by the last action, if any (and forget it)."""
    return session.pop(FLASH, None)

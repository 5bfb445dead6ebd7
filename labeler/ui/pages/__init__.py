"""Pages of the labelling app: each module exposes ``render(db, user)``.

Pages only call store functions and draw the result; the keyboard flow of the task pages
lives in ``labeler.ui.flow``. Admin pages check the role themselves, so reaching one by its address is
refused even though the navigation never offers it to an annotator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import sqlite_utils
import streamlit as st

from labeler.ui import flow, state
from labeler.store import StoreError
from labeler.store.vocabulary import Annotator

if TYPE_CHECKING:
    from streamlit.delta_generator import DeltaGenerator

ADMIN_REFUSAL = "This page is for admins. Your access token does not have the admin role."


def admin_only(user: Annotator | None) -> bool:
    """True for an admin; otherwise show the refusal and return False."""
    if user is not None and user.role == "admin":
        return True
    st.error(ADMIN_REFUSAL)
    return False


def on_item_key(action: Callable[..., object], *args: object) -> None:
    """Handler of an item key (grade, verdict, back, skip): ``action(session, *args)``.

    The key is counted first (the page's key guard waits for the count, ``labeler.app``). A
    refused write (token deactivated meanwhile, item reassigned) becomes a message on the
    next render instead of a traceback; nothing was written.
    """
    state.key_handled(st.session_state)
    try:
        action(st.session_state, *args)
    except StoreError as exc:
        st.session_state[state.FLASH] = f"Not saved: {exc}"


#: Shown when a page itself meets a busy project (it needed to write, e.g. a new batch).
BUSY_NOTICE = "The project is busy (another program is writing to it); this page tries again by itself."

#: Seconds between two attempts to save key presses kept while the project is busy.
RETRY_EVERY = 1.0


@st.fragment(run_every=RETRY_EVERY)
def busy_wait(db: sqlite_utils.Database) -> None:
    """Say that key presses are kept, and save them as soon as the project is free.

    A task page draws this instead of its item while presses wait (``flow.pending``). It runs
    again every ``RETRY_EVERY`` seconds on its own; once every kept press is saved, the whole
    page is drawn again and work goes on with the next item.
    """
    session = st.session_state
    if session.get(state.FLASH) == flow.BUSY_MESSAGE:
        session.pop(state.FLASH)  # the notice below says it; no toast on top
    # The notice is drawn before the attempt, then updated after it: an attempt waits up to
    # the busy timeout for the lock, and a run that draws only at its end can be replaced by
    # the next timed run before it draws anything, leaving the page blank while presses wait.
    notice = st.empty()
    _busy_notice(notice, flow.pending(session))
    if flow.flush_pending(session, db) == 0:
        st.rerun()
    _busy_notice(notice, flow.pending(session))


def _busy_notice(notice: DeltaGenerator, waiting: int) -> None:
    kept = f" {waiting} key press{'es' if waiting != 1 else ''} waiting." if waiting else ""
    notice.info(flow.BUSY_MESSAGE + kept, icon="⏳")

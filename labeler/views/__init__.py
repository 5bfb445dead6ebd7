"""Pages of the labelling app: each module exposes ``render(db, user)``.

Pages only call store functions and draw the result; the labelling flow lives in
``labeler.state``. Admin pages check the role themselves, so reaching one by its address is
refused even though the navigation never offers it to an annotator.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from labeler import state
from labeler.store import StoreError
from labeler.store.labels import Annotator

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

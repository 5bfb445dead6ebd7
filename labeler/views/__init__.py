"""Pages of the labelling app: each module exposes ``render(db, user)``.

Pages only call store functions and draw the result; the labelling flow lives in
``labeler.state``. Admin pages check the role themselves, so reaching one by its address is
refused even though the navigation never offers it to an annotator.
"""

from __future__ import annotations

import streamlit as st

from labeler.store.labels import Annotator

ADMIN_REFUSAL = "This page is for admins. Your access token does not have the admin role."


def admin_only(user: Annotator | None) -> bool:
    """True for an admin; otherwise show the refusal and return False."""
    if user is not None and user.role == "admin":
        return True
    st.error(ADMIN_REFUSAL)
    return False

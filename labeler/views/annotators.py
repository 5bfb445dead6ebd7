"""Admin page: the annotator list, with activate/deactivate.

Tokens are created on the command line (``goldpool add-annotator``), where the one-time
token can be copied once and is never shown again.
"""

from __future__ import annotations

import sqlite_utils
import streamlit as st

from labeler.highlight import markdown_escape
from labeler import state
from labeler.views import admin_only
from labeler.store import StoreError
from labeler.store import labels
from labeler.store.labels import Annotator


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """List every annotator with a switch that activates or deactivates their token."""
    if not admin_only(user):
        return
    st.title("Annotators")
    flash = state.pop_flash(st.session_state)
    if flash:
        st.warning(flash)
    st.caption("A deactivated token stops working at its holder's next click; labels are kept.")
    for annotator in labels.list_annotators(db, caller=user):
        name, role, active = st.columns([3, 1, 1])
        name.markdown(f"**{markdown_escape(annotator.name)}**")
        role.write(annotator.role)
        active.toggle(
            "Active",
            value=annotator.active,
            key=state.active_key(annotator.id),
            # An admin cannot lock themselves out from here.
            disabled=annotator.id == user.id,
            on_change=_on_toggle,
            args=(db, annotator.id, user),
        )
    st.caption("Add people with `goldpool add-annotator DB NAME [--role admin]`.")


def _on_toggle(db: sqlite_utils.Database, annotator_id: int, user: Annotator) -> None:
    try:
        labels.set_active(db, annotator_id, bool(st.session_state[state.active_key(annotator_id)]), caller=user)
    except StoreError as exc:
        st.session_state[state.FLASH] = f"Not changed: {exc}"

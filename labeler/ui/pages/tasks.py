"""Admin page "Tasks": which task pages annotators see (the ``tasks`` setting).

The same setting as ``goldpool label-settings DB tasks=relevance,pairwise``; the store checks
the caller is an admin again when it is saved.
"""

from __future__ import annotations

import sqlite_utils
import streamlit as st

from labeler.store import StoreError, labels
from labeler.store.settings import get_settings
from labeler.store.vocabulary import TASKS, Annotator
from labeler.ui import state
from labeler.ui.pages import admin_only


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """A multiselect of the tasks annotators see, and a save button."""
    if not admin_only(user):
        st.stop()
    st.title("Tasks")
    flash = state.pop_flash(st.session_state)
    if flash:
        st.success(flash)
    chosen = get_settings(db).tasks
    st.caption("Annotators see only the pages of the tasks chosen here; the sidebar lists them. "
               + ("Nothing chosen yet: every task the project has items for is open." if chosen is None else ""))
    picked = st.multiselect("Task pages annotators see", TASKS, default=list(state.open_tasks(st.session_state, db)), key=state.TASKS_INPUT)
    if st.button("Save", key=state.TASKS_SAVE, type="primary"):
        try:
            saved = labels.set_settings(db, {"tasks": picked}, caller=user)
        except StoreError as exc:
            st.error(f"Not saved: {exc}")
        else:
            st.session_state[state.FLASH] = f"Annotators now see: {', '.join(saved.tasks or ())}."
            st.rerun()  # the sidebar lists the pages anew

"""Admin page: the rubric annotators see, editable and versioned by content hash.

Every label records the hash of the rubric current when it was made, so an edit starts a
new version rather than silently changing what earlier labels meant.
"""

from __future__ import annotations

import sqlite_utils
import streamlit as st

from labeler.ui import state
from labeler.text import safe_markdown
from labeler.ui.pages import admin_only
from labeler.store import StoreError
from labeler.store import rubric
from labeler.store.vocabulary import Annotator


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Show the current rubric and save an edited one as a new version."""
    if not admin_only(user):
        return
    st.title("Rubric")
    current = rubric.current_rubric(db)
    st.caption(f"Current version **{current.hash}**, saved {current.created_at}")
    text = st.text_area("Rubric (Markdown)", value=current.text, height=320, key=state.RUBRIC_TEXT)
    if st.button("Save as new version", key=state.RUBRIC_SAVE, type="primary"):
        try:
            saved = rubric.set_rubric(db, text, caller=user)
        except StoreError as exc:
            st.error(str(exc))
            return
        if saved.hash == current.hash:
            st.info("The text is unchanged; the version stays the same.")
        else:
            st.success(f"Saved as version {saved.hash}. New labels record it from now on.")
    with st.expander("Preview"):
        st.markdown(safe_markdown(text))  # images become links: the preview fetches nothing

"""Admin page: the adjudication queue of items whose current labels disagree.

The admin sees every label and note on the item (annotators never do) and records a final
grade, stored as its own row: the annotators' labels stay as they were.
"""

from __future__ import annotations


import pandas as pd
import sqlite_utils
import streamlit as st

from calibration.formatting import markdown_escape
from labeler.ui import state
from labeler.text import chunk_html, query_html
from labeler.ui.pages import admin_only
from labeler.store import StoreError
from labeler.store import review
from labeler.store.vocabulary import GRADES
from labeler.store.review import Disagreement
from labeler.store.vocabulary import Annotator

#: Items drawn at once; the queue shrinks as grades are recorded.
PAGE_SIZE = 20


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """List disagreements, oldest query first, each with a form for the final grade."""
    if not admin_only(user):
        return
    st.title("Adjudicate")
    flash = state.pop_flash(st.session_state)
    if flash:
        st.info(flash)
    queue = review.disagreements(db, caller=user)
    if not queue:
        st.info("No disagreements are waiting.")
    else:
        st.caption(f"{len(queue)} {'item disagrees' if len(queue) == 1 else 'items disagree'}; showing the first {min(len(queue), PAGE_SIZE)}.")
    for item in queue[:PAGE_SIZE]:
        _item(db, user, item)
    settled = review.adjudications(db, caller=user)
    if settled:
        with st.expander(f"Adjudicated items ({len(settled)})"):
            st.dataframe(
                pd.DataFrame([{"query_id": a.query_id, "doc_id": a.doc_id, "final": a.relevance, "by": a.admin,
                               "note": a.note, "at": a.at} for a in settled]),
                hide_index=True,
            )


def _item(db: sqlite_utils.Database, user: Annotator, item: Disagreement) -> None:
    prefix = state.adjudication_key(item.query_id, item.doc_id)
    with st.container(border=True):
        st.caption(f"{markdown_escape(item.query_id)} / {markdown_escape(item.doc_id)}")
        # Corpus and query text are untrusted: escaped before they become HTML.
        st.html(f"<div>{query_html(item.query_text)}</div>")
        chunk = chunk_html(item.doc_title, item.doc_text, item.query_text)
        st.html(f'<div class="gp-chunk" style="white-space:pre-wrap">{chunk}</div>')
        st.dataframe(
            pd.DataFrame([{"annotator": name, "grade": grade, "note": note} for name, grade, note in item.labels]),
            hide_index=True,
        )
        with st.form(prefix):
            st.radio(
                "Final grade",
                list(GRADES),
                format_func=lambda g: f"{g} · {GRADES[g]}",
                horizontal=True,
                index=None,
                key=f"{prefix}:grade",
            )
            st.text_input("Note", key=f"{prefix}:note")
            st.form_submit_button(
                "Record final grade",
                key=f"{prefix}:save",
                on_click=_on_record,
                args=(db, user, item.query_id, item.doc_id),
            )


def _on_record(db: sqlite_utils.Database, user: Annotator, query_id: str, doc_id: str) -> None:
    prefix = state.adjudication_key(query_id, doc_id)
    grade = st.session_state.get(f"{prefix}:grade")
    if grade is None:
        st.session_state[state.FLASH] = f"{query_id} / {doc_id}: choose a grade first; nothing was recorded."
        return
    try:
        state.check_token(st.session_state, db, user.id)
        review.record_adjudication(
            db, query_id, doc_id, int(grade), st.session_state.get(f"{prefix}:note", ""), caller=user
        )
    except StoreError as exc:
        st.session_state[state.FLASH] = f"Not recorded: {exc}"
        return
    st.session_state[state.FLASH] = f"{query_id} / {doc_id}: final grade {grade} recorded."

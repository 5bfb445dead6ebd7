"""The labelling page: one (query, chunk) at a time, keyboard first.

Keys ``0``-``3`` label and advance, ``u`` goes back, ``s`` skips. They are Streamlit's own
button shortcuts (``st.button(shortcut=...)``), whose handler ignores a key without Ctrl, Alt
or Cmd while focus is in a text field, so typing a note never fires a label. The annotator
sees the query, the chunk and their own work only: no retriever, rank, score, priority or
anyone else's label. The layout is the same for every item (messages are toasts), because a
button that moves on the page re-binds its key and can miss a press meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils
import streamlit as st

from labeler import state
from labeler.highlight import chunk_html, query_html
from labeler.query_fields import query_fields_html
from labeler.store import StoreError
from labeler.store import labels
from labeler.grades import GRADE_HELP, GRADES
from labeler.store.labels import Annotator, Item

_BOX = "border:1px solid #ddd;border-radius:6px;padding:0.75rem 1rem;white-space:pre-wrap;"


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current item, or a thank-you when no work is left."""
    session = st.session_state
    if state.pending(session):
        busy_wait(db)
        return
    item = state.current_item(session, db, user.id)
    flash = state.pop_flash(session)
    if flash:  # a toast, not an element: the page layout must not move between items
        st.toast(flash)
    overall = labels.progress(db, user.id, item.query_id if item else None)
    if item is None:
        st.progress(1.0, text=f"Labelled {overall.done} of {overall.assigned}")
        st.success("Nothing left to label. Thank you!")
        return
    _progress(overall, item)
    _texts(item)
    st.text_input(
        "Note (optional)",
        key=state.NOTE,
        placeholder="Type a note, press Tab to leave the field, then a grade key",
        max_chars=2000,
    )
    _grade_buttons(db, user, item)
    _other_keys(db, user, item)


#: Shown when the page itself meets a busy project (it needed to write, e.g. a new batch).
BUSY_NOTICE = "The project is busy (another program is writing to it); this page tries again by itself."

#: Seconds between two attempts to save key presses kept while the project is busy.
RETRY_EVERY = 1.0


@st.fragment(run_every=RETRY_EVERY)
def busy_wait(db: sqlite_utils.Database) -> None:
    """Say that key presses are kept, and save them as soon as the project is free.

    Runs again every ``RETRY_EVERY`` seconds on its own; once every kept press is saved, the
    whole page is drawn again and labelling goes on with the next item.
    """
    session = st.session_state
    if session.get(state.FLASH) == state.BUSY_MESSAGE:
        session.pop(state.FLASH)  # the notice below says it; no toast on top
    if state.flush_pending(session, db) == 0:
        st.rerun()
    waiting = state.pending(session)
    kept = f" {waiting} key press{'es' if waiting != 1 else ''} waiting." if waiting else ""
    st.info(state.BUSY_MESSAGE + kept, icon="⏳")


def _progress(overall: labels.Progress, item: Item) -> None:
    assigned = max(overall.assigned, 1)
    st.progress(min(overall.done / assigned, 1.0), text=f"Labelled {overall.done} of {overall.assigned}")
    st.progress(
        min(item.position / max(item.batch_size, 1), 1.0),
        text=f"This query: item {item.position} of {item.batch_size} · {overall.query_done} labelled",
    )


def _texts(item: Item) -> None:
    # Corpus and query text are untrusted: everything is escaped before it becomes HTML.
    st.html(
        f'<div class="gp-query" style="font-size:1.15rem;margin-bottom:0.25rem">{query_html(item.query_text)}</div>'
        + query_fields_html(item.query_meta)
    )
    st.html(f'<div class="gp-chunk" style="{_BOX}">{chunk_html(item.doc_title, item.doc_text, item.query_text)}</div>')
    # Always present, so the buttons below never move (a moved button re-binds its key).
    mine = "not labelled yet" if item.relevance is None else f"{item.relevance} · {GRADES[item.relevance]}"
    st.caption(f"Your label: {mine}")


def _grade_buttons(db: sqlite_utils.Database, user: Annotator, item: Item) -> None:
    for column, (grade, name) in zip(st.columns(len(GRADES)), GRADES.items(), strict=True):
        column.button(
            f"{grade} · {name}",
            key=state.grade_key(grade),
            shortcut=str(grade),
            help=GRADE_HELP[grade],
            type="primary" if item.relevance == grade else "secondary",
            width="stretch",
            on_click=_on_label,
            args=(db, user.id, item.query_id, item.doc_id, grade),
        )
    st.caption(" · ".join(f"**{g}** {meaning}" for g, meaning in GRADE_HELP.items()))


def _other_keys(db: sqlite_utils.Database, user: Annotator, item: Item) -> None:
    back, skip, rubric = st.columns(3)
    back.button("Back", key=state.BACK, shortcut="u", on_click=_on_back, args=(db, user.id, item.query_id, item.doc_id))
    skip.button("Skip", key=state.SKIP, shortcut="s", on_click=_on_skip, args=(db, user.id, item.query_id, item.doc_id))
    with rubric.popover("Rubric"):
        try:
            current = labels.current_rubric(db)
        except StoreError as exc:
            st.warning(str(exc))
        else:
            st.markdown(current.text)
            st.caption(f"Rubric version {current.hash}")


def _on_label(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str, grade: int) -> None:
    _safely(state.label, db, annotator_id, query_id, doc_id, grade)


def _on_skip(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str) -> None:
    _safely(state.skip, db, annotator_id, query_id, doc_id)


def _on_back(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str) -> None:
    _safely(state.back, db, annotator_id, query_id, doc_id)


def _safely(action: Callable[..., object], *args: object) -> None:
    # A refused write (token deactivated meanwhile, item reassigned) becomes a message on
    # the next render instead of a traceback; nothing was written.
    try:
        action(st.session_state, *args)
    except StoreError as exc:
        st.session_state[state.FLASH] = f"Not saved: {exc}"

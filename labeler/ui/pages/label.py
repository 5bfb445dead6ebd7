"""The labelling page: one (query, chunk) at a time, keyboard first.

Keys ``0``-``3`` label and advance, ``u`` goes back, ``s`` skips. They are button shortcuts
(``st.button(shortcut=...)``) that the app's key guard (``labeler.ui.key_guard``) presses
itself, one at a time, and only while focus is outside the text fields, so typing a note
never fires a label. Keys and note typing that come while the previous key's run is still
on its way are held in the page and replayed in order once it is drawn, so none is lost or
lands on another item. No other key grades: the guard takes these buttons out of the Tab order, makes Enter
and Space do nothing on them, and lets Tab in the note field drop the focus. The annotator
sees the query, the chunk and their own work only: no retriever, rank, score, priority or
anyone else's label. The layout is the same for every item (messages are toasts), because a
button that moves on the page re-binds its key and can miss a press meanwhile.

Layout (wide): the item on the left, the keys on the right. The item (counter, query with
its fields, chunk) is ONE element, so the browser swaps them together and never shows a
chunk under another item's query (``verdict_page.item_frame`` says why). It is as tall as
the window; the chunk's text scrolls in a box of its own, so the grade buttons stay in view
however long the chunk; the chunk's title above it; its text with whitespace kept, in a
monospace font when it holds code or aligned columns. Query words are marked faintly, and
each annotator can switch that off.
"""

from __future__ import annotations

import html

import sqlite_utils
import streamlit as st

from labeler.ui import flow, state
from labeler.ui.flow import RELEVANCE
from labeler.text import chunk_body_html, preformatted, query_html, safe_markdown
from labeler.ui.query_fields import query_fields_html
from labeler.store import StoreError
from labeler.store import labels, rubric, sessions
from labeler.store.vocabulary import GRADE_HELP, GRADES
from labeler.store.labels import Item
from labeler.store.vocabulary import Annotator
from labeler.ui.pages import busy_wait, on_item_key
from labeler.ui.pages.verdict_page import PAGE_STYLE, counter_html

# Style only (no script): st.html sends it without taking room on the page.
_STYLE = """<style>
.gp-ask { max-height: 30%; }
.gp-chunk { flex: 1 1 0; min-height: 8rem; display: flex; flex-direction: column; border: 1px solid #ddd; border-radius: 6px; }
.gp-title { flex: none; font-weight: 600; padding: 0.5rem 1rem; border-bottom: 1px solid #eee; overflow-wrap: anywhere; }
.gp-body { flex: 1 1 0; min-height: 0; overflow: auto; padding: 0.75rem 1rem;
           white-space: pre-wrap; overflow-wrap: anywhere; line-height: 1.5; }
.gp-body.gp-mono { white-space: pre; overflow-wrap: normal; font-size: 0.88rem;
                   font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace; }
.gp-body mark { background: rgba(250, 204, 21, 0.22); color: inherit; padding: 0; border-radius: 2px; }
</style>"""


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Draw the annotator's current item, or a thank-you when no work is left."""
    session = st.session_state
    if flow.pending(session):
        busy_wait(db)
        return
    item = RELEVANCE.current(session, db, user.id)
    flash = state.pop_flash(session)
    if flash:  # a toast, not an element: the page layout must not move between items
        st.toast(flash)
    overall = labels.progress(db, user.id, item.query_id, item.doc_id) if item else labels.progress(db, user.id)
    project = state.project_counts(session, db, overall.done)
    sample = state.project_sample(session)
    if item is None:
        st.progress(1.0, text=project_line(overall, project, sample))
        st.success("Nothing left to label. Thank you!")
        return
    marks = state.highlighting(db, user.id)
    st.html(PAGE_STYLE + _STYLE)
    st.progress(min(project[1] / max(project[0], 1), 1.0), text=project_line(overall, project, sample))
    text, keys = st.columns([3, 1], gap="medium")
    with text:
        st.html(_frame(overall, item, marks))
    with keys:
        _grade_buttons(db, user, item)
        _other_keys(db, user, item)
        st.text_input(
            "Note (optional)",
            key=state.NOTE,
            placeholder="Type a note, press Tab to leave the field, then a grade key",
            max_chars=2000,
        )
        st.toggle(
            "Mark query words",
            value=marks,
            key=state.HIGHLIGHT,
            on_change=_on_highlight,
            args=(db, user),
        )


def batch_line(overall: labels.Progress, item: Item) -> str:
    """This batch (what one hand-out gave the annotator: up to ``batch_size`` items of one
    query): labelled, and where we are."""
    return (
        f"This batch: {overall.query_done} of {overall.query_total} labelled · "
        f"item {item.position} of {item.batch_size}"
    )


def project_line(overall: labels.Progress, project: tuple[int, int], sample: str | None = None) -> str:
    """The work to do (size, labelled by anyone: the whole pool, or the designed sample when
    one is handed out), and the annotator's own share."""
    size, labelled = project
    share = f" ({labelled / size:.0%})" if size else ""
    what = "sample items" if sample is not None else "pool items"
    return f"Project: {labelled:,} of {size:,} {what} labelled{share} · you: {overall.done:,} labelled"


def _frame(overall: labels.Progress, item: Item, marks: bool) -> str:
    """The item as one HTML block: counter, query with its fields, chunk."""
    # Corpus and query text are untrusted: everything is escaped before it becomes HTML.
    counter = counter_html(batch_line(overall, item), overall.query_done / max(overall.query_total, 1))
    query = (f'<div class="gp-query" style="font-size:1.15rem">{query_html(item.query_text)}</div>'
             + query_fields_html(item.query_meta))
    mono = " gp-mono" if preformatted(item.doc_text) else ""
    title = f'<div class="gp-title">{html.escape(item.doc_title)}</div>' if item.doc_title.strip() else ""
    body = chunk_body_html(item.doc_text, item.query_text, marks)
    chunk = f'<div class="gp-chunk">{title}<div class="gp-body{mono}">{body}</div></div>'
    return f'<div class="gp-frame">{counter}<div class="gp-ask">{query}</div>{chunk}</div>'


def _grade_buttons(db: sqlite_utils.Database, user: Annotator, item: Item) -> None:
    for grade, name in GRADES.items():
        st.button(
            f"{grade} · {name}",
            key=state.grade_key(grade),
            shortcut=str(grade),
            help=GRADE_HELP[grade],
            type="primary" if item.relevance == grade else "secondary",
            width="stretch",
            on_click=on_item_key,
            args=(RELEVANCE.choose, db, user.id, (item.query_id, item.doc_id), grade),
        )
    # Always present, so the buttons never move (a moved button re-binds its key).
    mine = "not labelled yet" if item.relevance is None else f"{item.relevance} · {GRADES[item.relevance]}"
    st.caption(f"Your label: {mine}")


def _other_keys(db: sqlite_utils.Database, user: Annotator, item: Item) -> None:
    # One per row: side by side they get cut off ("B… U") in a narrow window.
    shown = (item.query_id, item.doc_id)
    st.button(
        "Back", key=state.BACK, shortcut="u", width="stretch", on_click=on_item_key,
        args=(RELEVANCE.back, db, user.id, shown),
    )
    st.button(
        "Skip", key=state.SKIP, shortcut="s", width="stretch", on_click=on_item_key,
        args=(RELEVANCE.skip, db, user.id, shown),
    )
    with st.popover("Rubric", width="stretch"):
        try:
            current = rubric.current_rubric(db)
        except StoreError as exc:
            st.warning(str(exc))
        else:
            st.markdown(safe_markdown(current.text))
            st.caption(f"Rubric version {current.hash}")


def _on_highlight(db: sqlite_utils.Database, user: Annotator) -> None:
    try:
        state.check_token(st.session_state, db, user.id)
        sessions.set_preference(db, "highlight", bool(st.session_state[state.HIGHLIGHT]), caller=user)
    except StoreError as exc:
        st.session_state[state.FLASH] = f"Not saved: {exc}"

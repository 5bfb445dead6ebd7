"""Admin page: a question's nuggets, written by an expert who reads its relevant chunks.

Pick a question: its text and its chunks graded at or above the relevance level (by the current
labels, or by a frozen version) stand on the left, every text escaped; its nuggets on the right,
in order, each with its text, importance (vital or okay), the chunks it came from, and buttons
to save an edit, move it up or down, or drop it. Below: a new nugget, a merge of two or more
nuggets into one, and the judge's proposals still pending (``goldpool nuggetize``), each
accepted as proposed, accepted edited, or dropped; what the judge proposed and what people kept
are both stored (:mod:`labeler.store.nugget_proposals`), so ``calibrate --judge`` measures the
nuggetizer. A nugget already labelled or frozen keeps its text (the store refuses the edit, and
the page says why).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sqlite_utils
import streamlit as st

from calibration.formatting import markdown_escape
from labeler.store import StoreError
from labeler.store import nugget_proposals as proposals
from labeler.store import nuggets as store
from labeler.store.versions import list_versions
from labeler.store.vocabulary import RELEVANCE_LEVEL, Annotator
from labeler.ui.pages import admin_only
from labeler.ui.pages.verdict_page import text_box

KEY = "nug_admin_"  # every widget key of the page starts with it
IMPORTANCE = ("vital", "okay")
CURRENT = "current labels"


def _act(action: Callable[[], object], done: str) -> None:
    """Run a store call; say what it did, or why the store refused it (nothing was written)."""
    try:
        action()
    except StoreError as exc:
        st.error(str(exc))
        return
    st.toast(done)
    st.rerun()


def _chunks(db: sqlite_utils.Database, user: Annotator, query_id: str) -> list[store.Chunk]:
    versions = [v.name for v in list_versions(db, caller=user)]
    source = st.selectbox("Grades from", [CURRENT, *reversed(versions)], key=KEY + "source")
    level = st.number_input("Relevance level", 0, 3, RELEVANCE_LEVEL, key=KEY + "level")
    return store.relevant_chunks(db, query_id, int(level), version=None if source == CURRENT else source)


def _nugget_row(db: sqlite_utils.Database, user: Annotator, n: store.Nugget, order: Sequence[str],
                chunk_ids: Sequence[str]) -> None:
    k = f"{KEY}{n.nugget_id}_"
    with st.container(border=True):
        st.caption(f"{n.position}. {markdown_escape(n.nugget_id)} · {markdown_escape(n.origin)}" + (" · text fixed (labelled or frozen)" if n.text_fixed else ""))
        text = st.text_area("Text", n.text, key=k + "text", height=68, disabled=n.text_fixed)
        importance = st.radio("Importance", IMPORTANCE, index=IMPORTANCE.index(n.importance), key=k + "imp",
                              horizontal=True)
        docs = st.multiselect("From chunks", sorted({*chunk_ids, *n.doc_ids}), default=list(n.doc_ids), key=k + "docs")
        save, up, down, drop = st.columns(4)
        if save.button("Save", key=k + "save"):
            _act(lambda: store.edit_nugget(db, n.nugget_id, text=None if n.text_fixed else text, importance=importance,
                                           doc_ids=docs, caller=user), f"Saved {n.nugget_id}")
        i = order.index(n.nugget_id)
        for col, label, j in ((up, "Up", i - 1), (down, "Down", i + 1)):
            if col.button(label, key=k + label.lower(), disabled=not 0 <= j < len(order)):
                moved = list(order)
                moved[i], moved[j] = moved[j], moved[i]
                _act(lambda moved=moved: store.reorder_nuggets(db, n.query_id, moved, caller=user), "Order saved")
        if drop.button("Drop", key=k + "drop"):
            _act(lambda: store.drop_nugget(db, n.nugget_id, caller=user), f"Dropped {n.nugget_id}")


def _new_and_merge(db: sqlite_utils.Database, user: Annotator, query_id: str, found: Sequence[store.Nugget],
                   chunk_ids: Sequence[str]) -> None:
    with st.form(KEY + "new", clear_on_submit=True):
        st.markdown("**New nugget**: one atomic fact a good answer must contain")
        text = st.text_area("Text", key=KEY + "new_text", height=68)
        importance = st.radio("Importance", IMPORTANCE, key=KEY + "new_imp", horizontal=True)
        docs = st.multiselect("From chunks", list(chunk_ids), key=KEY + "new_docs")
        if st.form_submit_button("Add nugget"):
            _act(lambda: store.create_nugget(db, query_id, text, importance, doc_ids=docs, caller=user), "Nugget added")
    if len(found) < 2:
        return
    with st.form(KEY + "merge"):
        st.markdown("**Merge** two or more nuggets into one")
        chosen = st.multiselect("Nuggets", [n.nugget_id for n in found], key=KEY + "merge_ids")
        text = st.text_area("Merged text", key=KEY + "merge_text", height=68)
        importance = st.radio("Importance", IMPORTANCE, key=KEY + "merge_imp", horizontal=True)
        if st.form_submit_button("Merge"):
            _act(lambda: store.merge_nuggets(db, chosen, text, importance, caller=user), "Merged")


def _proposals(db: sqlite_utils.Database, user: Annotator, query_id: str) -> None:
    pending = [p for p in proposals.list_proposals(db, query_id) if p.fate == "pending"]
    if not pending:
        return
    st.subheader(f"Proposed by a judge ({len(pending)} pending)")
    for p in pending:
        k = f"{KEY}p{p.proposal_id}_"
        with st.container(border=True):
            st.caption(f"Proposal {p.n} of judge {markdown_escape(p.judge)}")
            text = st.text_area("Text", p.text, key=k + "text", height=68)
            importance = st.radio("Importance", IMPORTANCE, index=IMPORTANCE.index(p.importance), key=k + "imp",
                                  horizontal=True)
            accept, drop = st.columns(2)
            if accept.button("Accept", key=k + "accept"):
                _act(lambda: proposals.accept_proposal(db, p.proposal_id, text=None if text == p.text else text,
                                                       importance=importance, caller=user), "Accepted")
            if drop.button("Drop", key=k + "drop"):
                _act(lambda: proposals.drop_proposal(db, p.proposal_id, caller=user), "Dropped")


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """The nugget editor of one question, for admins."""
    if not admin_only(user):
        return
    st.title("Nuggets")
    questions = store.nugget_questions(db)
    if not questions:
        st.info("No question in the project yet: import queries first.")
        return
    counts = {q: (t, n) for q, t, n in questions}
    query_id = st.selectbox("Question", list(counts), key=KEY + "query",
                            format_func=lambda q: f"{q} · {counts[q][1]} nuggets · {counts[q][0][:80]}")
    read, write = st.columns([1, 1], gap="large")
    with read:
        text_box(counts[query_id][0], "gp-question", "Question")
        chunks = _chunks(db, user, query_id)
        st.caption(f"{len(chunks)} relevant chunk{'s' if len(chunks) != 1 else ''}, best grade first")
        with st.container(height=520):
            for c in chunks:
                text_box(c.text, "gp-context", f"{c.doc_id} · grade {c.relevance}" + (f" · {c.title}" if c.title else ""))
    with write:
        found = store.list_nuggets(db, query_id)
        ids = [c.doc_id for c in chunks]
        for n in found:
            _nugget_row(db, user, n, [x.nugget_id for x in found], ids)
        _new_and_merge(db, user, query_id, found, ids)
        _proposals(db, user, query_id)

"""Admin page "Judges": the judge calibration service's report, several judges side by side.

A thin layer over ``labeler.judges.report``: the leaderboard (``board``), then per judge and
task the same Markdown as ``goldpool calibrate --judge`` (``task_markdown``), the confusion
matrix, and every disagreement as an expander that opens its item.
"""

from __future__ import annotations

from html import escape

import sqlite_utils
import streamlit as st

from calibration.formatting import markdown_escape
from calibration.report_judges import board, task_markdown
from labeler.judges.report import judge_report, task_dict
from labeler.store import corpus
from labeler.store.vocabulary import Annotator
from labeler.store.verdicts import get_item, judges
from labeler.ui.pages import admin_only
from labeler.ui.pages.verdict_page import text_box

#: Disagreements listed per judge and task (the rest are in ``goldpool calibrate --judge --json``).
MAX_DISAGREEMENTS = 50
N_BOOT = 1000


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Leaderboard of every judge in the project, then each judge's tasks in detail."""
    if not admin_only(user):
        st.stop()
    st.title("Judges")
    names = judges(db, caller=user)
    if not names:
        st.info("No judge has verdicts in this project yet: `goldpool run-judge` or `goldpool import-verdicts --judge`.")
        return
    report = judge_report(db, names, caller=user, n_boot=N_BOOT, seed=0)
    header, rows = board(report)
    # A plain table (not a canvas grid): every cell is text, and it prints and screenshots as seen.
    st.table({column: [row[i] for row in rows] for i, column in enumerate(header)})
    st.caption(f"Kappa is quadratic for relevance, unweighted otherwise. Intervals: 95% cluster bootstrap over queries "
               f"(the question, for faithfulness and pairwise items), {N_BOOT} resamples; rates: Wilson.")
    for name, tasks in report.results.items():
        for task, result in tasks.items():
            st.subheader(f"{markdown_escape(name)}: {task}")
            st.markdown("\n".join(task_markdown(report, name, task, max_disagreements=0)))
            _disagreements(db, task_dict(result)["disagreements"])


def _disagreements(db: sqlite_utils.Database, found: list[dict]) -> None:
    queries = dict(corpus.pool_queries(db)) if any("query_id" in x for x in found) else {}
    st.markdown(f"**{len(found)} disagreements**" + (f" (first {MAX_DISAGREEMENTS})" if len(found) > MAX_DISAGREEMENTS else ""))
    for x in found[:MAX_DISAGREEMENTS]:
        where = x.get("item_id") or f"{x['query_id']} / {x['doc_id']}"
        with st.expander(f"{markdown_escape(str(where))}: {markdown_escape(x['annotator'])} {x['human']}, judge {x['judge']}"):
            if "item_id" in x:
                _verdict_item(db, x["item_id"])
            else:
                _pool_entry(db, queries, x["query_id"], x["doc_id"])


def _verdict_item(db: sqlite_utils.Database, item_id: str) -> None:
    item = get_item(db, item_id)
    text_box(item.question, "gp-question", "Question")
    for n, context in enumerate(item.contexts, start=1):
        text_box(context, "gp-context", f"Context {n}")
    if item.context:
        text_box(item.context, "gp-context", "Context")
    if item.kind == "faithfulness":
        text_box(item.response or "", "gp-response", "Response")
        return
    left, right = st.columns(2)
    with left:
        text_box(item.response_a or "", "gp-left", f"Response A ({item.model_a or 'model not given'})")
    with right:
        text_box(item.response_b or "", "gp-right", f"Response B ({item.model_b or 'model not given'})")


def _pool_entry(db: sqlite_utils.Database, queries: dict[str, str], query_id: str, doc_id: str) -> None:
    title, text = corpus.documents_by_id(db, [doc_id]).get(doc_id, ("", ""))
    text_box(queries.get(query_id, ""), "gp-question", f"Query {query_id}")
    st.html(f'<div style="font-size:0.8rem;color:#666">Chunk {escape(doc_id)}</div>')
    text_box(f"{title}\n\n{text}" if title else text, "gp-context")

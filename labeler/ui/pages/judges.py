"""Admin page "Judges": the judge calibration service's report, several judges side by side.

A thin layer over ``labeler.judges.report``: the leaderboard (``calibration.report_judges.board``), then per judge and
task the same Markdown as ``goldpool calibrate --judge`` (``task_markdown``), the confusion
matrix, and the items where the judge and people disagree (``goldpool disagreements``: people's
unanimous items first), each an expander that opens its texts.
"""

from __future__ import annotations

import sqlite_utils
import streamlit as st

from calibration.formatting import markdown_escape
from calibration.report_judges import board, task_markdown
from labeler.judges.disagreements import disagreements
from labeler.judges.report import judge_report
from labeler.store.vocabulary import Annotator
from labeler.store.verdicts import judges
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
            _disagreements(db, user, name, task)


def _disagreements(db: sqlite_utils.Database, user: Annotator, name: str, task: str) -> None:
    found = disagreements(db, name, task, caller=user)
    st.markdown(f"**{len(found)} disagreements**" + (f" (first {MAX_DISAGREEMENTS})" if len(found) > MAX_DISAGREEMENTS else "")
                + (" — people unanimous first" if found else ""))
    for d in found[:MAX_DISAGREEMENTS]:
        people = ", ".join(f"{markdown_escape(who)} {label}" for who, label in d.people.items())
        with st.expander(f"{markdown_escape(d.item)}: {people}, judge {d.judge}"):
            st.caption("people unanimous" if d.unanimous else "people split")
            for label, text in d.texts.items():
                text_box(text, _BOX.get(label.split("_")[0], "gp-context"), label.replace("_", " ").capitalize())


#: The box style of each kind of text.
_BOX = {"query": "gp-question", "question": "gp-question", "response": "gp-response", "claim": "gp-response"}

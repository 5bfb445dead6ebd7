"""Admin page: the calibration report of the project (the same one ``goldpool calibrate`` prints)."""

from __future__ import annotations

import sqlite_utils
import streamlit as st

from calibration import project_report, to_html, to_markdown
from calibration.report_html import confusion_svg, intervals_svg, mdd_svg
from labeler.store.verdicts import task_verdict_rows
from labeler.store.vocabulary import GRADES
from labeler.ui.pages import admin_only
from labeler.store.labels import latest_judgments
from labeler.store.vocabulary import Annotator

#: Widget key of the HTML download button.
DOWNLOAD_KEY = "calibration-download-html"


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Show agreement, per-annotator agreement, distributions and what the set can resolve."""
    if not admin_only(user):
        st.stop()
    st.title("Calibration")
    report = project_report(latest_judgments(db, caller=user), grades=tuple(GRADES),
                            verdicts=task_verdict_rows(db, caller=user))
    st.markdown(to_markdown(report).split("\n", 1)[1])
    if report.overlap is not None:
        shown = [report.overlap.get("kappa_quadratic")] + ([report.alpha_ordinal] if report.alpha_ordinal else [])
        st.html(intervals_svg(shown + [report.overlap.get("agreement"), report.overlap.get("majority_baseline")]))
        confusion = report.overlap.confusion
        st.html(confusion_svg(confusion.labels, confusion.table, "rows: first annotator", "columns: second annotator"))
    if report.power is not None:
        st.html(mdd_svg(report.power.curve, report.power.n))
    st.download_button(
        "Download the report (HTML, works offline)",
        data=to_html(report),
        file_name="calibration-report.html",
        mime="text/html",
        key=DOWNLOAD_KEY,
    )

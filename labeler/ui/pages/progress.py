"""Admin page: progress per annotator and per query, and agreement on the overlap.

The agreement table renders the calibration report (``calibration.project_report``, the one
``goldpool calibrate`` prints): raw agreement beside quadratic-weighted kappa (raw agreement
alone hides chance) on the items two annotators both labelled, every pair pooled and then
pair by pair, each with its 95% interval and n. Intervals resample queries, not single items.

The tables of annotators, tasks and queries read counts the store keeps as it writes; the two
sections that read every label are drawn on request once a project has more than
``ON_REQUEST`` relevance labels.
"""

from __future__ import annotations

import pandas as pd
import sqlite_utils
import streamlit as st

from calibration import (
    CalibrationError,
    Estimate,
    ProjectReport,
    format_estimate,
    project_report,
)
from calibration.report import few_queries_warning
from labeler.retrieval.adaptive import query_status, stop_line
from labeler.store import labels, review
from labeler.store.vocabulary import GRADES, Annotator
from labeler.ui.pages import admin_only

#: What the table shows for a statistic that is undefined (every label the same grade).
UNDEFINED = "undefined (one grade only)"

#: What a table shows for a figure that does not exist yet (no label, no time measured).
MISSING = "—"

#: Above this many relevance labels, the sections that read every label (the relevant found per
#: query, the agreement on the overlap) are computed when the admin asks, not on every visit:
#: the tables above them come from counts the store keeps and cost the same at any size.
ON_REQUEST = 20_000


def _figure(value: float | None) -> str:
    # Text throughout: a column mixing numbers and "—" cannot be shown as a table.
    return MISSING if value is None else f"{value:.1f}"


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Show progress tables and agreement statistics."""
    if not admin_only(user):
        return
    st.title("Progress")
    report = review.progress_report(db, caller=user)
    st.subheader("Annotators")
    st.dataframe(_annotator_table(report), hide_index=True)
    st.subheader("Tasks")
    # A static table, apart from the interactive ones: a handful of rows, one per task.
    st.table(_task_table(report))
    st.caption(
        "Every label counts, made here or imported. Overlap done: items labelled by at least as many "
        "people as the overlap asks for (the sample agreement is measured on)."
    )
    st.subheader("Queries")
    st.dataframe(_query_table(report), hide_index=True)
    relevance = next(t for t in report.tasks if t.task == "relevance")
    n_labels = sum(n for _, n in relevance.per_annotator)
    _on_request(db, user, large=n_labels > ON_REQUEST)


@st.fragment
def _on_request(db: sqlite_utils.Database, user: Annotator, *, large: bool) -> None:
    """The sections that read every relevance label: drawn at once on a small project, on request
    on a large one (a toggle each; toggling reruns this fragment only)."""
    st.subheader("Relevant found")
    if not large or st.toggle("Estimate the relevant found per labelled query", key="progress_relevant_found"):
        _relevant_found(db, user)
    st.subheader("Agreement on the overlap")
    if large and not st.toggle("Compute the agreement on the overlap", key="progress_agreement"):
        return
    try:
        report = project_report(labels.latest_judgments(db, caller=user), grades=tuple(GRADES))
    except CalibrationError as exc:
        st.warning(str(exc))
        return
    _agreement(report)


def _relevant_found(db: sqlite_utils.Database, user: Annotator) -> None:
    """Per query with labels: the stopping rule's share of relevant chunks found, and its call."""
    statuses = [s for s in query_status(db, caller=user, labelled_only=True) if s.estimate.judged]
    if not statuses:
        st.info("No query has labels yet.")
        return
    st.text("\n".join(stop_line(s) for s in statuses))
    st.caption(
        "Estimated share of each query's relevant chunks found so far, within the candidate lists, "
        "with its interval at the stopping confidence. Once the 'sample' rule has judged part of its "
        "random check sample, the interval is the sample's, which holds whatever chose the judgments; "
        "before that it is the quantile model's. Under 'active' the model counts too many relevant "
        "chunks still unfound, so its interval says only how low the share may be: its upper end is 100."
    )


def _annotator_table(report: review.ProgressReport) -> pd.DataFrame:
    """One row per annotator: relevance labels done and assigned, and the verdicts of every
    verdict task that has items."""
    verdict_tasks = [t for t in report.tasks if t.task != "relevance" and (t.items or t.labelled)]
    done = {t.task: dict(t.per_annotator) for t in verdict_tasks}
    columns = ["annotator", "role", "active", "done", "assigned", *(t.task for t in verdict_tasks),
               "labels/hour", "median s/label"]
    return pd.DataFrame(
        [
            {
                "annotator": a.name,
                "role": a.role,
                "active": a.active,
                "done": a.done,
                "assigned": a.assigned,
                **{task: counts.get(a.name, 0) for task, counts in done.items()},
                "labels/hour": _figure(a.labels_per_hour),
                "median s/label": _figure(a.median_seconds),
            }
            for a in report.annotators
        ],
        columns=columns,
    )


def _task_table(report: review.ProgressReport) -> pd.DataFrame:
    return pd.DataFrame(
        [{"task": t.task, "items": t.items, "labelled": t.labelled, f"overlap done (≥{t.overlap_k})": t.overlap_done,
          "per annotator": ", ".join(f"{name} {n:,}" for name, n in t.per_annotator if n) or MISSING}
         for t in report.tasks],
    ).set_index("task")


def _query_table(report: review.ProgressReport) -> pd.DataFrame:
    return pd.DataFrame(
        [{"query_id": q.query_id, "done": q.done, "assigned": q.assigned, "pool": q.pool_size} for q in report.queries],
        columns=["query_id", "done", "assigned", "pool"],
    )


def _agreement(report: ProjectReport) -> None:
    """The calibration report's agreement: every pair pooled, then each pair of annotators."""
    if report.overlap is None:
        st.info("No item has labels from two annotators yet.")
        return
    overlap = report.overlap
    rows = [_row("all pairs", overlap.n, overlap.get("agreement"), overlap.get("kappa_quadratic"))]
    rows += [_row(f"{p.annotator_a} & {p.annotator_b}", p.n, p.agreement, p.kappa_quadratic) for p in report.per_pair]
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    st.caption(
        "95% intervals by bootstrap over queries (labels within a query are not independent); "
        "no interval while the overlap comes from a single query."
    )
    warning = few_queries_warning(overlap.n_boot, overlap.n_groups)
    if warning:
        st.warning(warning)


def _row(annotators: str, n: int, agreement: Estimate, kappa: Estimate) -> dict[str, object]:
    return {
        "annotators": annotators,
        "n": n,
        "raw agreement": format_estimate(agreement, undefined=UNDEFINED),
        "kappa (quadratic)": format_estimate(kappa, undefined=UNDEFINED),
    }

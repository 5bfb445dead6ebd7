"""Admin page: progress per annotator and per query, and agreement on the overlap.

Agreement is computed on the items two annotators both labelled: raw agreement beside
quadratic-weighted kappa (raw agreement alone hides chance), each with its 95% interval and
n. Items are grouped by query, so the interval resamples queries, not single items.
"""

from __future__ import annotations

import math
from collections import defaultdict

import pandas as pd
import sqlite_utils
import streamlit as st

from labeler.views import admin_only
from labeler.store import labels
from labeler.store.labels import Annotator, OverlapLabel

from calibration import CalibrationError, Estimate, cohen_kappa, raw_agreement

GRADE_VALUES = sorted(labels.GRADES)


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Show progress tables and agreement statistics."""
    if not admin_only(user):
        return
    st.title("Progress")
    report = labels.progress_report(db, caller=user)
    st.subheader("Annotators")
    st.dataframe(_annotator_table(report), hide_index=True)
    st.subheader("Queries")
    st.dataframe(_query_table(report), hide_index=True)
    st.subheader("Agreement on the overlap")
    _agreement(labels.overlap_labels(db, caller=user))


def _annotator_table(report: labels.ProgressReport) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "annotator": a.name,
                "role": a.role,
                "active": a.active,
                "done": a.done,
                "assigned": a.assigned,
                "labels/hour": None if a.labels_per_hour is None else round(a.labels_per_hour, 1),
                "median s/label": None if a.median_seconds is None else round(a.median_seconds, 1),
            }
            for a in report.annotators
        ],
        columns=["annotator", "role", "active", "done", "assigned", "labels/hour", "median s/label"],
    )


def _query_table(report: labels.ProgressReport) -> pd.DataFrame:
    return pd.DataFrame(
        [{"query_id": q.query_id, "done": q.done, "assigned": q.assigned, "pool": q.pool_size} for q in report.queries],
        columns=["query_id", "done", "assigned", "pool"],
    )


def _agreement(pairs: list[OverlapLabel]) -> None:
    if not pairs:
        st.info("No item has labels from two annotators yet.")
        return
    by_pair: dict[tuple[str, str], list[OverlapLabel]] = defaultdict(list)
    for pair in pairs:
        by_pair[(pair.annotator_a, pair.annotator_b)].append(pair)
    rows = [{"annotators": "all pairs", **_statistics(pairs)}]
    rows += [
        {"annotators": f"{a} & {b}", **_statistics(group)}
        for (a, b), group in sorted(by_pair.items())
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    st.caption(
        "95% intervals by bootstrap over queries (labels within a query are not independent); "
        "no interval while the overlap comes from a single query."
    )


def _statistics(pairs: list[OverlapLabel]) -> dict[str, object]:
    a = [p.relevance_a for p in pairs]
    b = [p.relevance_b for p in pairs]
    queries = [p.query_id for p in pairs]
    try:
        raw = raw_agreement(a, b, labels=GRADE_VALUES, groups=queries)
        kappa = cohen_kappa(a, b, weights="quadratic", labels=GRADE_VALUES, groups=queries)
    except CalibrationError as exc:
        return {"n": len(pairs), "raw agreement": str(exc), "kappa (quadratic)": ""}
    return {"n": len(pairs), "raw agreement": _format(raw), "kappa (quadratic)": _format(kappa)}


def _format(estimate: Estimate) -> str:
    if math.isnan(estimate.value):
        return "undefined (one grade only)"
    if math.isnan(estimate.low):
        return f"{estimate.value:.3f}"
    return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]"

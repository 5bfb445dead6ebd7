"""Admin page "Golden set": versions and their manifests, freeze, diff, downloads of each export.

A thin layer over :mod:`labeler.retrieval.golden_set`; the store checks the caller's admin role again. Every
text that came from a user (version names, notes, ids) is shown through widgets that escape it.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import pandas as pd
import sqlite_utils
import streamlit as st

from labeler.retrieval import golden_set
from labeler.store import StoreError
from labeler.store import versions as store
from labeler.store.vocabulary import Annotator
from labeler.ui.pages import admin_only


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """Versions, the freeze form, a diff between two versions, and export downloads."""
    if not admin_only(user):
        return
    st.title("Golden set")
    versions = store.list_versions(db, caller=user)
    _versions(versions)
    _freeze_form(db, user)
    if len(versions) >= 2:
        _diff(db, user, [v.name for v in versions])
    if versions:
        _downloads(db, user, [v.name for v in versions])


def _versions(versions: list[store.Version]) -> None:
    st.subheader("Versions")
    if not versions:
        st.info("No version frozen yet.")
        return
    rows = [
        {"version": v.name, "frozen at": v.created_at, "rule": v.rule, "items": v.n_rows,
         "queries": v.manifest.get("counts", {}).get("queries"), "content hash": v.content_hash[:12],
         "parent": v.parent or "", "note": v.manifest.get("note", "")}
        for v in versions
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    chosen = st.selectbox("Manifest of", [v.name for v in versions], index=len(versions) - 1)
    st.json(next(v for v in versions if v.name == chosen).manifest, expanded=False)


def _freeze_form(db: sqlite_utils.Database, user: Annotator) -> None:
    st.subheader("Freeze a new version")
    with st.form("freeze"):
        name = st.text_input("Version name", max_chars=100)
        rule = st.selectbox("Rule (an adjudicated grade always wins)", ["majority", "median", "dawid-skene"])
        allow_ties = st.checkbox("Allow tied majorities (they take the lower grade)")
        note = st.text_input("Note", max_chars=500)
        submitted = st.form_submit_button("Freeze")
    if not submitted:
        return
    try:
        result = golden_set.freeze(db, name, rule=rule, note=note, allow_ties=allow_ties, caller=user)
    except (StoreError, ValueError) as exc:  # CalibrationError is a ValueError
        st.error(str(exc))
        return
    if result.created:
        st.success(f"Froze {result.version.name}: {result.version.n_rows} items, hash {result.version.content_hash[:12]}.")
    else:
        st.info(f"Nothing changed: {result.version.name} already holds exactly these grades.")


def _diff(db: sqlite_utils.Database, user: Annotator, names: list[str]) -> None:
    st.subheader("Difference between two versions")
    left, right = st.columns(2)
    old = left.selectbox("From", names, index=len(names) - 2)
    new = right.selectbox("To", names, index=len(names) - 1)
    d = golden_set.diff(db, old, new, caller=user)
    st.write(f"{len(d.added)} added, {len(d.removed)} removed, {len(d.regraded)} regraded")
    if d.changes:
        st.dataframe(pd.DataFrame([{"from grade": a, "to grade": b, "items": n} for (a, b), n in d.changes.items()]),
                     hide_index=True)
    rows = ([{"change": "added", "query_id": q, "doc_id": doc, "old": None, "new": g} for q, doc, g in d.added]
            + [{"change": "removed", "query_id": q, "doc_id": doc, "old": g, "new": None} for q, doc, g in d.removed]
            + [{"change": "regraded", "query_id": q, "doc_id": doc, "old": a, "new": b} for q, doc, a, b in d.regraded])
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True)


def _downloads(db: sqlite_utils.Database, user: Annotator, names: list[str]) -> None:
    st.subheader("Export")
    name = st.selectbox("Version to export", names, index=len(names) - 1, key="export_version")
    fmt = st.selectbox("Format", list(golden_set.FORMATS), key="export_format")
    if not st.button("Prepare download"):
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"golden-{name}-{fmt}"
        written = golden_set.export(db, name, [fmt], out, caller=user)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in written:
                archive.write(path, f"{out.name}/{path.relative_to(out)}")
    st.download_button(f"Download {name} ({fmt}, zip)", buffer.getvalue(), file_name=f"golden-{name}-{fmt}.zip",
                       mime="application/zip")

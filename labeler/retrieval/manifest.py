"""A golden-set version's manifest: what it was frozen from, and the manifest.json of an export.

The manifest records the aggregation (rule, ties, adjudicated and single-label items), the
pool's sources and builds, the counts per grade and at the relevance level, the annotators,
their agreement with intervals, the rubric hashes and the goldpool version. A pool build is
shown as :func:`shareable_build` gives it: nothing of the machine that built the pool.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version as package_version
from typing import Any

import sqlite_utils

from calibration.aggregate import Aggregation
from calibration.summary import project_report
from labeler.store import versions as store
from labeler.store.nuggets import Nugget, nuggets_hash
from labeler.store.schema import now
from labeler.store.versions import GoldenRow, RawLabel, Version
from labeler.store.vocabulary import GRADES, Caller
from pooling.dense import model_name, model_package


def goldpool_version() -> str:
    """The installed goldpool's version, ``unknown`` when it is not installed."""
    try:
        return package_version("goldpool")
    except PackageNotFoundError:
        return "unknown"


def agreement(labels: Sequence[Any]) -> dict[str, Any]:
    """Inter-annotator agreement on the items labelled more than once, with intervals."""
    report = project_report(labels, grades=tuple(GRADES))
    out: dict[str, Any] = {"items_with_two_or_more_labels": report.n_overlap_items}
    if report.overlap is not None:
        out["kappa_quadratic"] = report.overlap.get("kappa_quadratic").as_dict()
    if report.alpha_ordinal is not None:
        out["alpha_ordinal"] = report.alpha_ordinal.as_dict()
    return out


def shareable_build(build: dict[str, Any]) -> dict[str, Any]:
    """A pool build's parameters as a manifest shows them, with nothing of the machine that
    built the pool: the dense model named by what it is (``model``: its name,
    ``model_package``: the package it ships in, ``model_identity``: a hash of its
    configuration files and the sizes of its weights, :func:`pooling.dense.model_identity`),
    never by its path; an imported qrels file by its file name."""
    shown = dict(build)
    if isinstance(shown.get("path"), str):
        shown["path"] = shown["path"].replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    model = shown.get("model")
    if model:
        if "model_package" not in shown:  # a build recorded before packages were: look it up here
            shown["model_package"] = model_package(model)
        shown["model"] = model_name(model)
    return shown


def relevant_counts(rows: Sequence[Any], relevance_level: int) -> dict[str, int]:
    """``{"relevance_level", "relevant_items", "queries_with_relevant"}``: the items graded at
    or above ``relevance_level`` and the queries holding one (the others are left out of
    ``eval``'s means)."""
    relevant = [r for r in rows if r.relevance >= relevance_level]
    return {"relevance_level": relevance_level, "relevant_items": len(relevant),
            "queries_with_relevant": len({r.query_id for r in relevant})}


def version_manifest(
    db: sqlite_utils.Database, rule: str, note: str, allow_ties: bool, labels: Sequence[RawLabel], agg: Aggregation,
    rows: Sequence[GoldenRow], *, caller: Caller, relevance_level: int,
) -> dict[str, Any]:
    """The manifest a version is frozen with (its counts at ``relevance_level``)."""
    builds = store.pool_builds(db, caller=caller)
    per_grade = Counter(r.relevance for r in rows)
    return {
        "rule": rule,
        "allow_ties": allow_ties,
        "ties": {"count": len(agg.ties), "resolved_to": "lower grade" if agg.ties else None,
                 "items": [list(t) for t in agg.ties]},
        "single_label_items": len(agg.single),
        "adjudicated_items": len(agg.adjudicated),
        "pool": {
            "sources": sorted({s for b in builds for s in b.get("sources", [])}),
            "builds": [shareable_build(b) for b in builds],
        },
        "counts": {
            "queries": len({r.query_id for r in rows}),
            "items": len(rows),
            "labels": len(labels),
            "per_grade": {str(g): per_grade.get(g, 0) for g in GRADES},
            **relevant_counts(rows, relevance_level),
        },
        "annotators": sorted({lab.annotator for lab in labels}),
        "annotator_weights": agg.weights or None,
        "agreement": agreement(labels),
        "rubric_hashes": sorted({lab.rubric_hash for lab in labels if lab.rubric_hash}),
        "goldpool_version": goldpool_version(),
        "created_at": now(),
        "note": note,
    }


def export_manifest(version: Version, relevant: dict[str, int], files: dict[str, str]) -> dict[str, Any]:
    """The manifest.json of an export: the version's manifest with its name and content hash,
    its counts at the export's relevance level (``relevant``: :func:`relevant_counts`), and
    ``files`` (path -> sha256)."""
    manifest = {**version.manifest, "content_hash": version.content_hash, "name": version.name,
                "counts": {**version.manifest.get("counts", {}), **relevant}, "files": files}
    if isinstance(manifest.get("pool"), dict):  # a version frozen with the model's path in it
        pool = manifest["pool"]
        manifest["pool"] = {**pool, "builds": [shareable_build(b) for b in pool.get("builds", [])]}
    return manifest


def nuggets_manifest(nuggets: Sequence[Nugget]) -> dict[str, Any]:
    """What a version's manifest says of the nuggets frozen with it: counts and their hash."""
    return {"n": len(nuggets), "queries": len({n.query_id for n in nuggets}),
            "vital": sum(n.importance == "vital" for n in nuggets), "hash": nuggets_hash(nuggets)}

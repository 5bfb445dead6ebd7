"""The golden set: freeze labels into a named version, export it, compare versions, score runs.

This is the service layer between the store (``labeler.store.versions``: SQL only) and the
libraries (``calibration`` for aggregation, metrics and comparison; ``pooling`` for files and
capture-recapture). Every function that reads or writes the project takes a required keyword
``caller`` (``OWNER`` from the command line, the signed-in admin in the app).

The **content hash** of a version is the sha256 of its aggregated rows only, one UTF-8 line
``query_id<TAB>doc_id<TAB>relevance<LF>`` per item, sorted: the same grades give the same hash
wherever they were made, whatever the raw labels, notes or times behind them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import sqlite_utils

from labeler.store.corpus import Recorded
from labeler.store.versions import GoldenRow, Version
from labeler.store.errors import StoreError
from labeler.store.nuggets import list_nuggets, nuggets_hash, version_nuggets
from labeler.store.schema import now
from labeler.store.vocabulary import GRADES, RELEVANCE_LEVEL, Caller

if TYPE_CHECKING:
    from pooling.types import PoolEntry

FORMATS = ("trec", "jsonl", "parquet", "beir")


def content_hash(rows: Iterable[tuple[str, str, int]]) -> str:
    """sha256 over the sorted ``query_id\\tdoc_id\\trelevance`` lines.

    >>> content_hash([("q2", "d", 0), ("q1", "d", 3)]) == content_hash([("q1", "d", 3), ("q2", "d", 0)])
    True
    """
    digest = hashlib.sha256()
    for q, d, r in sorted((str(q), str(d), int(r)) for q, d, r in rows):
        digest.update(f"{q}\t{d}\t{r}\n".encode())
    return digest.hexdigest()


def matches_hash(version: Version, rows: Iterable[tuple[Any, Any, Any]]) -> bool:
    """Whether ``rows`` (query_id, doc_id, relevance) still give ``version``'s content hash."""
    try:
        return content_hash(rows) == version.content_hash
    except (TypeError, ValueError):  # a grade that is not a number: rows written by another tool
        return False


def _altered(version: Version) -> StoreError:
    return StoreError(
        f"golden version {version.name!r}: its rows no longer match its content hash "
        f"{version.content_hash[:12]}; the project was changed outside goldpool, so this version "
        "cannot be trusted (restore the project from a backup)")


def verified_rows(db: sqlite_utils.Database, name: str, *, caller: Caller) -> tuple[Version, list[GoldenRow]]:
    """Version ``name`` and its rows, once their content hash is recomputed and found equal to
    the one stored when it was frozen.

    Raises:
        StoreError: no such version, or its rows were altered (by a tool other than goldpool).
    """
    from labeler.store import versions as store

    version = store.get_version(db, name, caller=caller)
    try:
        rows = store.version_rows(db, name, caller=caller)
    except (TypeError, ValueError) as exc:  # a stored value no goldpool write produces
        raise _altered(version) from exc
    if not matches_hash(version, ((r.query_id, r.doc_id, r.relevance) for r in rows)):
        raise _altered(version)
    return version, rows


def altered_versions(db: sqlite_utils.Database, *, caller: Caller) -> list[str]:
    """Names of the stored versions whose rows no longer give their content hash."""
    from labeler.store import versions as store

    grades = store.version_grades(db, caller=caller)
    return [v.name for v in store.list_versions(db, caller=caller) if not matches_hash(v, grades.get(v.name, []))]


@dataclass(frozen=True, slots=True)
class FreezeResult:
    """What ``freeze`` did: the version (new, or the unchanged latest one) and what it decided."""

    version: Version
    created: bool
    ties: tuple[tuple[str, str], ...] = ()
    single: int = 0
    adjudicated: int = 0
    weights: dict[str, float] = field(default_factory=dict)


def _goldpool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("goldpool")
    except PackageNotFoundError:
        return "unknown"


def _agreement(labels: Sequence[Any]) -> dict[str, Any]:
    """Inter-annotator agreement on the items labelled more than once, with intervals."""
    from calibration.report import project_report

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
        from pooling.dense import model_name, model_package

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


def _manifest(db, rule, note, allow_ties, labels, agg, rows, *, caller, relevance_level: int) -> dict[str, Any]:
    from labeler.store import versions as store

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
        "agreement": _agreement(labels),
        "rubric_hashes": sorted({lab.rubric_hash for lab in labels if lab.rubric_hash}),
        "goldpool_version": _goldpool_version(),
        "created_at": now(),
        "note": note,
    }


def freeze(
    db: sqlite_utils.Database,
    name: str,
    *,
    rule: str = "majority",
    note: str = "",
    allow_ties: bool = False,
    caller: Caller,
    relevance_level: int = RELEVANCE_LEVEL,
) -> FreezeResult:
    """Aggregate every labelled item into one grade and store the result as version ``name``.

    An adjudicated grade always wins; otherwise ``rule`` (majority, median, dawid-skene).
    Nothing is stored when the grades equal the latest version's (``created`` False). The
    manifest's relevant counts are at ``relevance_level``, which it records.

    Raises:
        StoreError: no labels, a taken or bad name, not an admin.
        CalibrationError: majority ties without ``allow_ties``, an unknown rule.
    """
    from calibration.aggregate import aggregate
    from labeler.store import versions as store

    labels = store.current_labels(db, caller=caller)
    adjudicated = store.current_adjudications(db, caller=caller)
    if not labels and not adjudicated:
        raise StoreError("nothing to freeze: no item has a label yet")
    by_item: dict[tuple[str, str], dict[str, int]] = {}
    raw: dict[tuple[str, str], list[tuple[str, int, str]]] = {}
    for lab in labels:
        by_item.setdefault((lab.query_id, lab.doc_id), {})[lab.annotator] = lab.relevance
        raw.setdefault((lab.query_id, lab.doc_id), []).append((lab.annotator, lab.relevance, lab.at))
    agg = aggregate(by_item, rule, adjudicated=adjudicated, allow_ties=allow_ties)
    sources = store.pool_sources(db, caller=caller)
    rows = [
        GoldenRow(q, d, g, tuple(raw.get((q, d), ())), (q, d) in adjudicated,
                  agg.posteriors.get((q, d)), sources.get((q, d), {}))
        for (q, d), g in sorted(agg.grades.items())
    ]
    digest = content_hash((r.query_id, r.doc_id, r.relevance) for r in rows)
    manifest = _manifest(db, rule, note, allow_ties, labels, agg, rows, caller=caller, relevance_level=relevance_level)
    nuggets = list_nuggets(db)
    if nuggets:  # the questions' nuggets are frozen with the grades
        manifest["nuggets"] = {"n": len(nuggets), "queries": len({n.query_id for n in nuggets}),
                               "vital": sum(n.importance == "vital" for n in nuggets), "hash": nuggets_hash(nuggets)}
    version, created = store.save_version(db, name, rule, digest, manifest, rows, caller=caller, nuggets=nuggets)
    return FreezeResult(version, created, agg.ties, len(agg.single), len(agg.adjudicated), agg.weights)


@dataclass(frozen=True, slots=True)
class VersionDiff:
    """Items added, removed and regraded from version ``old`` to ``new``."""

    old: str
    new: str
    added: tuple[tuple[str, str, int], ...]
    removed: tuple[tuple[str, str, int], ...]
    regraded: tuple[tuple[str, str, int, int], ...]  # query_id, doc_id, old grade, new grade
    changes: dict[tuple[int, int], int]  # (old grade, new grade) -> items

    def per_query(self) -> dict[str, tuple[int, int, int]]:
        """query_id -> (items added, removed, regraded), for the queries that changed, sorted."""
        counts: dict[str, list[int]] = {}
        for column, items in enumerate((self.added, self.removed, self.regraded)):
            for item in items:
                counts.setdefault(item[0], [0, 0, 0])[column] += 1
        return {q: (a, r, g) for q, (a, r, g) in sorted(counts.items())}

    def by_grade(self) -> tuple[dict[int, int], dict[int, int]]:
        """(grade -> items added with it, grade -> items removed that had it), grades sorted."""
        added = Counter(g for _, _, g in self.added)
        removed = Counter(g for _, _, g in self.removed)
        return dict(sorted(added.items())), dict(sorted(removed.items()))


def diff(db: sqlite_utils.Database, old: str, new: str, *, caller: Caller) -> VersionDiff:
    """What changed between two versions.

    Raises:
        StoreError: either version does not exist, or was altered (:func:`verified_rows`).
    """
    a = {(r.query_id, r.doc_id): r.relevance for r in verified_rows(db, old, caller=caller)[1]}
    b = {(r.query_id, r.doc_id): r.relevance for r in verified_rows(db, new, caller=caller)[1]}
    added = tuple((q, d, b[(q, d)]) for q, d in sorted(b.keys() - a.keys()))
    removed = tuple((q, d, a[(q, d)]) for q, d in sorted(a.keys() - b.keys()))
    regraded = tuple((q, d, a[(q, d)], b[(q, d)]) for q, d in sorted(a.keys() & b.keys()) if a[(q, d)] != b[(q, d)])
    changes = Counter((x, y) for _, _, x, y in regraded)
    return VersionDiff(old, new, added, removed, regraded, dict(sorted(changes.items())))


@dataclass(frozen=True, slots=True)
class ImportedJudgments:
    """What ``import_judgments`` did (see :class:`labeler.store.versions.LabelImport`)."""

    path: str
    annotator: str
    added: int
    unchanged: int
    pooled: int
    created_annotator: bool


def import_judgments(db: sqlite_utils.Database, path: str | Path, annotator: str, *, caller: Caller) -> ImportedJudgments:
    """Bring a TREC qrels file in as ``annotator``'s labels (grades 0-3).

    Raises:
        PoolingError: a malformed qrels line (file, line, field).
        StoreError: an unknown query or document, a grade outside 0-3; nothing is written.
    """
    from labeler.store import versions as store
    from pooling.pool import rrf_priority
    from pooling.qrels import qrels_lines

    path = Path(path)
    entries = list(qrels_lines(path))  # every line checked (fields, integers, duplicates) first
    result = store.import_labels(db, str(path), entries, annotator, caller=caller, priority=rrf_priority)
    return ImportedJudgments(str(path), result.annotator, result.added, result.unchanged, result.pooled,
                             result.created_annotator)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _records(rows: Sequence[GoldenRow], queries: dict[str, str], docs: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    return [
        {
            "query_id": r.query_id,
            "doc_id": r.doc_id,
            "relevance": r.relevance,
            "labels": [{"annotator": a, "relevance": g, "at": at} for a, g, at in r.labels],
            "adjudicated": r.adjudicated,
            "posterior": None if r.posterior is None else {str(k): v for k, v in sorted(r.posterior.items())},
            "sources": r.sources,
            "query_text": queries.get(r.query_id, ""),
            "doc_title": docs.get(r.doc_id, ("", ""))[0],
            "doc_text": docs.get(r.doc_id, ("", ""))[1],
        }
        for r in rows
    ]


def _write_trec(out: Path, rows: Sequence[GoldenRow], **_: Any) -> list[Path]:
    path = out / "qrels.txt"
    path.write_text("".join(f"{r.query_id} 0 {r.doc_id} {r.relevance}\n" for r in rows), encoding="utf-8")
    return [path]


def _write_jsonl(out: Path, rows: Sequence[GoldenRow], records: list[dict[str, Any]], **_: Any) -> list[Path]:
    path = out / "golden.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
    return [path]


def _write_parquet(out: Path, rows: Sequence[GoldenRow], records: list[dict[str, Any]], **_: Any) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # sources and posterior have keys that vary by row: they are JSON text in Parquet.
    flat = [{**r, "sources": json.dumps(r["sources"], sort_keys=True),
             "posterior": None if r["posterior"] is None else json.dumps(r["posterior"])} for r in records]
    schema = pa.schema([
        ("query_id", pa.string()), ("doc_id", pa.string()), ("relevance", pa.int64()),
        ("labels", pa.list_(pa.struct([("annotator", pa.string()), ("relevance", pa.int64()), ("at", pa.string())]))),
        ("adjudicated", pa.bool_()), ("posterior", pa.string()), ("sources", pa.string()),
        ("query_text", pa.string()), ("doc_title", pa.string()), ("doc_text", pa.string()),
    ])
    path = out / "golden.parquet"
    pq.write_table(pa.Table.from_pylist(flat, schema=schema), path)
    return [path]


def _write_beir(
    out: Path, rows: Sequence[GoldenRow], queries: dict[str, str], all_docs: dict[str, tuple[str, str]], **_: Any
) -> list[Path]:
    (out / "qrels").mkdir(exist_ok=True)
    corpus, qfile, qrels = out / "corpus.jsonl", out / "queries.jsonl", out / "qrels" / "test.tsv"
    with corpus.open("w", encoding="utf-8") as handle:
        for doc_id, (title, text) in all_docs.items():
            handle.write(json.dumps({"_id": doc_id, "title": title, "text": text}, ensure_ascii=False) + "\n")
    with qfile.open("w", encoding="utf-8") as handle:
        for query_id, text in queries.items():
            handle.write(json.dumps({"_id": query_id, "text": text}, ensure_ascii=False) + "\n")
    qrels.write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{r.query_id}\t{r.doc_id}\t{r.relevance}\n" for r in rows),
        encoding="utf-8",
    )
    return [corpus, qfile, qrels]


_WRITERS = {"trec": _write_trec, "jsonl": _write_jsonl, "parquet": _write_parquet, "beir": _write_beir}


def _num(x: Any) -> str:
    from calibration.formatting import fixed

    return fixed(x, 3, missing="n/a")


# Shell commands that recompute the content hash from an export (the README shows the same).
_HASH_COMMANDS = (
    "awk -v OFS='\\t' '{print $1, $3, $4}' qrels.txt | LC_ALL=C sort | sha256sum   # --format trec",
    "tail -n +2 qrels/test.tsv | LC_ALL=C sort | sha256sum                        # --format beir",
)


def dataset_card(version: Version, formats: Sequence[str], relevant: dict[str, int] | None = None) -> str:
    """The README.md written beside an export: counts, histogram, rubric, agreement, pooling.

    ``relevant`` (:func:`relevant_counts`) gives the relevant counts and the level they are
    at; without it, the manifest's own.
    """
    m = version.manifest
    counts = m.get("counts", {})
    relevant = relevant if relevant is not None else {k: counts[k] for k in ("relevance_level", "relevant_items",
                                                                           "queries_with_relevant") if k in counts}
    per_grade = counts.get("per_grade", {})
    total = max(1, sum(per_grade.values()))
    lines = [
        f"# Golden set {version.name}",
        "",
        f"Content hash: `{version.content_hash}`, the sha256 (lowercase hex) of the UTF-8 text with one "
        "line per item: query_id, a tab, doc_id, a tab, the grade as one digit and a line feed (the last "
        "line ends in one too), the lines sorted by their bytes. Recompute it with:",
        "",
        "```sh",
        *([c for c in _HASH_COMMANDS if c.endswith(tuple(f"--format {f}" for f in formats))] or _HASH_COMMANDS),
        "```",
        "",
        f"Frozen {version.created_at} with goldpool {m.get('goldpool_version')}; parent version: "
        f"{version.parent or 'none'}. Note: {m.get('note') or '(none)'}",
        "",
        f"{counts.get('queries', 0)} queries, {counts.get('items', 0)} judged (query, chunk) items, "
        f"{counts.get('labels', 0)} labels from {len(m.get('annotators', []))} annotator(s).",
        "",
        "| grade | meaning | items | share |",
        "|---|---|---|---|",
    ]
    for g, meaning in GRADES.items():
        n = per_grade.get(str(g), 0)
        lines.append(f"| {g} | {meaning} | {n} | {n / total:.1%} |")
    if "relevance_level" in relevant:
        level = relevant["relevance_level"]
        lines += ["", f"Relevance level {level} (grade >= {level} counts as relevant, as trec_eval's `-l {level}`): "
                      f"{relevant['relevant_items']} relevant items"
                      + (f" in {relevant['queries_with_relevant']} queries" if "queries_with_relevant" in relevant else "")
                      + ". Score runs at the same level: `goldpool eval --relevance-level "
                      f"{level}` (trec_eval `-l {level}`)."]
    ties = m.get("ties", {})
    lines += [
        "",
        f"Aggregation: `{version.rule}`; an adjudicated grade always wins ({m.get('adjudicated_items', 0)} items). "
        f"Items with a single label: {m.get('single_label_items', 0)}. Tied majorities: {ties.get('count', 0)}"
        + (" (resolved to the lower grade)." if ties.get("count") else "."),
        f"Rubric hash(es): {', '.join(m.get('rubric_hashes') or []) or 'none recorded'}.",
        "",
        "Agreement between annotators on items labelled more than once:",
    ]
    agreement = m.get("agreement", {})
    for key in ("kappa_quadratic", "alpha_ordinal"):
        e = agreement.get(key)
        if e:
            lines.append(f"- {key}: {_num(e.get('value'))} [{_num(e.get('low'))}, {_num(e.get('high'))}], n={e.get('n')}")
    if not any(agreement.get(k) for k in ("kappa_quadratic", "alpha_ordinal")):
        lines.append("- no item was labelled by two annotators: agreement unknown.")
    pool = m.get("pool", {})
    lines += [
        "",
        f"Pooling: sources {', '.join(pool.get('sources', [])) or 'none'}; builds:",
    ]
    for build in pool.get("builds", []):
        build = shareable_build(build)
        shown = {k: build[k] for k in ("bm25_depth", "dense_depth", "run_depth", "model", "model_package",
                                       "model_identity", "source", "added") if build.get(k) is not None}
        lines.append(f"- {build.get('at')}: {json.dumps(shown, sort_keys=True)}")
    lines += [
        "",
        "Unjudged is not irrelevant: score a run with `goldpool eval` and read Judged@k beside it.",
        f"Files: {', '.join(formats)} (see manifest.json for their sha256).",
        "",
    ]
    return "\n".join(lines)


def export(
    db: sqlite_utils.Database, name: str, formats: Sequence[str], out: str | Path, *, caller: Caller,
    overwrite: bool = False, relevance_level: int = RELEVANCE_LEVEL,
) -> list[Path]:
    """Write version ``name`` in ``formats`` into folder ``out``, with manifest.json and README.md
    (and nuggets.jsonl, the nuggets frozen with the version, when it froze any).

    The relevant counts of the card and of manifest.json's ``counts`` are recomputed at
    ``relevance_level``, which both record.

    The version's rows are checked against its content hash first. Every file is written
    into a new folder inside a private temporary folder beside ``out`` (manifest.json last)
    and the folder is moved into place only when complete (:func:`pooling.files.replace_folder`):
    whatever happens meanwhile, a ``kill -9`` included, ``out`` holds either the previous
    export whole or the new one whole, never a half-written file under its final name; a
    previous export is replaced whole, so no stale file stays beside the new manifest.

    ``out`` may be missing, empty, or a previous export of this project (its manifest names
    a version of this project with the same content hash and freezing time, and it holds
    only the files that manifest lists, none of them a link); anything else is refused unless
    ``overwrite``, and ``out`` itself being a symbolic link is always refused.

    Raises:
        StoreError: no such version or an altered one, an unknown format, an unusable folder,
            or a folder holding something else than a previous export (without ``overwrite``).
    """
    from labeler.store import versions as store
    from pooling.files import UnsafeTarget, check_folder, replace_folder

    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise StoreError(f"format {', '.join(unknown) or '(none)'}: choose from {', '.join(FORMATS)}")
    version, rows = verified_rows(db, name, caller=caller)
    out = Path(out)
    if not out.parent.is_dir():
        raise StoreError(f"{out.parent}: directory does not exist")
    try:
        check_folder(out)
    except UnsafeTarget as exc:
        raise StoreError(str(exc)) from exc
    if not overwrite:
        _refuse_foreign_folder(db, out, caller=caller)
    chosen = list(dict.fromkeys(formats))
    query_ids = {r.query_id for r in rows}
    queries, docs = store.texts(db, query_ids, None if "beir" in chosen else {r.doc_id for r in rows}, caller=caller)
    records = _records(rows, queries, docs) if {"jsonl", "parquet"} & set(chosen) else []
    relevant = relevant_counts(rows, relevance_level)
    nuggets = version_nuggets(db, name)
    written: list[str] = []

    def build(folder: Path) -> None:
        paths: list[Path] = []
        for fmt in chosen:
            paths += _WRITERS[fmt](folder, rows, records=records, queries=queries, all_docs=docs)
        if nuggets:  # the nuggets frozen with the version, one JSON object a line
            paths.append(folder / "nuggets.jsonl")
            paths[-1].write_text("".join(json.dumps({"nugget_id": n.nugget_id, "query_id": n.query_id, "text": n.text,
                                                     "importance": n.importance, "position": n.position,
                                                     "doc_ids": list(n.doc_ids)}, ensure_ascii=False) + "\n"
                                         for n in nuggets), encoding="utf-8")
        card = folder / "README.md"
        card.write_text(dataset_card(version, chosen, relevant), encoding="utf-8")
        paths.append(card)
        manifest = {**version.manifest, "content_hash": version.content_hash, "name": version.name,
                    "counts": {**version.manifest.get("counts", {}), **relevant},
                    "files": {str(p.relative_to(folder)): _sha256(p) for p in paths}}
        if isinstance(manifest.get("pool"), dict):  # a version frozen with the model's path in it
            pool = manifest["pool"]
            manifest["pool"] = {**pool, "builds": [shareable_build(b) for b in pool.get("builds", [])]}
        path = folder / "manifest.json"
        path.write_text(json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
        written.extend(str(p.relative_to(folder)) for p in [*paths, path])

    try:
        replace_folder(out, build)
    except UnsafeTarget as exc:
        raise StoreError(str(exc)) from exc
    except OSError as exc:
        raise StoreError(f"{out}: cannot write the export ({exc.strerror or exc})") from exc
    return [out / p for p in written]


def _refuse_foreign_folder(db: sqlite_utils.Database, out: Path, *, caller: Caller) -> None:
    """Refuse a non-empty ``out`` that is not a previous export of this project."""
    if not out.is_dir():
        return
    found = sorted(
        os.path.relpath(os.path.join(top, entry), out)
        for top, dirs, files in os.walk(out)  # links to folders are listed, not followed
        for entry in [*files, *(d for d in dirs if os.path.islink(os.path.join(top, d)))]
    )
    if not found:
        return
    reason = _foreign(db, out, set(found), caller=caller)
    if reason:
        raise StoreError(f"{out}: is not empty and is not a previous goldpool export of this project ({reason}); "
                         "give --overwrite to replace it whole, or choose another folder")


def _foreign(db: sqlite_utils.Database, out: Path, found: set[str], *, caller: Caller) -> str:
    """Why folder ``out`` (holding the files ``found``) is not a previous export of this
    project, or '' when it is one."""
    from labeler.store import versions as store

    links = sorted(name for name in found if (out / name).is_symlink())
    if links:  # goldpool never writes a link: someone else put it there
        return f"it holds a symbolic link, {links[0]}"
    manifest_path = out / "manifest.json"
    if not manifest_path.is_file():
        return "no manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        listed = set(manifest["files"]) | {"manifest.json"}
        name, digest = manifest["name"], manifest["content_hash"]
    except (OSError, ValueError, KeyError, TypeError):
        return "manifest.json is not a goldpool manifest"
    try:
        version = store.get_version(db, str(name), caller=caller)
    except StoreError:
        return f"it holds version {name!r}, which this project does not have"
    if version.content_hash != digest or version.manifest.get("created_at") != manifest.get("created_at"):
        return f"its version {name!r} is not this project's"
    extra = sorted(found - listed)
    if extra:
        return f"files not in its manifest: {', '.join(extra[:3])}{', ...' if len(extra) > 3 else ''}"
    return ""


@dataclass(frozen=True, slots=True)
class Golden:
    """Qrels to score runs against, and where they came from."""

    qrels: dict[str, dict[str, int]]
    label: str  # ``DB@VERSION`` or the qrels path
    content_hash: str | None


def load_golden(spec: str, *, caller: Caller) -> Golden:
    """``DB@VERSION`` (a frozen version), a folder ``goldpool export`` wrote (its ``qrels.txt``),
    or the path of a TREC qrels file.

    Raises:
        StoreError: a database without that version; a folder without qrels.txt, or whose
            qrels.txt is not the one its manifest lists. PoolingError: a bad qrels file.
    """
    from labeler.project import parse_golden
    from labeler.store import connect
    from pooling.qrels import read_qrels

    base, version = parse_golden(spec)
    if version is not None:
        db = connect(base)
        try:
            found, rows = verified_rows(db, version, caller=caller)
        finally:
            db.close()
        qrels: dict[str, dict[str, int]] = {}
        for r in rows:
            qrels.setdefault(r.query_id, {})[r.doc_id] = r.relevance
        return Golden(qrels, spec, found.content_hash)
    if Path(spec).is_dir():
        return _exported_golden(Path(spec))
    return Golden(read_qrels(spec), spec, None)


def _exported_golden(folder: Path) -> Golden:
    """The qrels of an export folder, checked against its manifest when it has one: a frozen
    set edited after its export is refused rather than scored."""
    from pooling.qrels import read_qrels

    qrels_path = folder / "qrels.txt"
    if not qrels_path.is_file():
        raise StoreError(f"{folder}: no qrels.txt in this folder; export the version with --format trec (or all)")
    manifest_path = folder / "manifest.json"
    recorded = None
    if not manifest_path.is_file():
        # Without its manifest a folder's qrels cannot be checked against what was frozen: a
        # deleted manifest must not turn the check off. The qrels file itself is plain qrels.
        raise StoreError(f"{folder}: no manifest.json, so this folder's qrels cannot be checked against the version "
                         f"it was exported from; export the version again, or give the qrels file itself "
                         f"({qrels_path}) to score it as plain qrels, with no content hash")
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            listed = manifest["files"].get("qrels.txt")
            recorded = manifest.get("content_hash")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise StoreError(f"{manifest_path}: not a goldpool manifest (no files listed)") from None
        if listed is not None and listed != _sha256(qrels_path):
            raise StoreError(f"{qrels_path}: its sha256 is not the one manifest.json lists; the export was changed "
                             "after it was written (export the version again)")
    qrels = read_qrels(qrels_path)
    if recorded is not None and content_hash(
            (q, d, r) for q, docs in qrels.items() for d, r in docs.items()) != recorded:
        raise StoreError(f"{qrels_path}: its grades do not give the content hash manifest.json records "
                         f"({str(recorded)[:12]}); the export was changed after it was written")
    return Golden(qrels, str(folder), recorded)


def run_names(paths: Sequence[str | Path]) -> list[str]:
    """A short name per run file: its file name, or its path when two file names collide."""
    names = [Path(p).name for p in paths]
    return [n if names.count(n) == 1 else str(p) for n, p in zip(names, paths, strict=True)]


def evaluate_runs(
    golden: Golden, paths: Sequence[str | Path], metrics: Sequence[str], *, relevance_level: int = RELEVANCE_LEVEL
) -> dict[str, Any]:
    """Score every run file against the golden set: run name -> :class:`calibration.metrics.RunScores`,
    a grade at or above ``relevance_level`` counting as relevant."""
    from calibration.metrics import check_scoring, evaluate_many, parse_metrics
    from pooling.ranked_runs import read_ranked_run

    ranked = {name: read_ranked_run(p) for name, p in zip(run_names(paths), paths, strict=True)}
    check_scoring(golden.qrels, ranked, parse_metrics(metrics, relevance_level), relevance_level, label=golden.label)
    return evaluate_many(golden.qrels, ranked, metrics, relevance_level=relevance_level)


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Runs scored against one golden set: ``runs`` is :func:`evaluate_runs`' result (at least one run)."""

    golden: Golden
    runs: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """``{"golden", "content_hash", "runs": {RUN: scores}}``, and the first run's scores
        (``metrics``, ``per_query``, ``excluded``, ``missing``, ``unknown``, ``scored``,
        ``relevance_level``) with its name (``run``) at the top level too: the same keys for one
        run and for many."""
        runs = {name: scores.as_dict() for name, scores in self.runs.items()}
        first = next(iter(runs))
        return {**runs[first], "run": first, "golden": self.golden.label, "content_hash": self.golden.content_hash,
                "runs": runs}


def add_run(db: sqlite_utils.Database, path: str | Path, name: str, depth: int, *, caller: Caller):
    """Import a run and add its unjudged top-``depth`` to the pool (they join the labelling queue).

    Raises:
        PoolingError: a bad run file, unknown ids. StoreError: a bad depth, not an admin.
    """
    from labeler.retrieval.build import import_run, pool_plan
    from labeler.store import versions as store
    from labeler.store.access import require_admin

    require_admin(db, caller)
    if depth < 1:
        raise StoreError(f"depth {depth}: give 1 or more")
    imported = import_run(db, path, name)

    def plan(ranking: dict[str, list[str]], recorded: Recorded) -> tuple[list[PoolEntry], list[PoolEntry]]:
        return pool_plan({name: ranking})(recorded)

    return imported, store.extend_pool(db, name, depth, caller=caller, plan=plan)


#: The pool source of chunks found by looking for an answer's words (``goldpool diagnose``).
ANSWER_SEARCH = "answer-search"
#: Sources that are no sample of what a retriever finds: imported qrels, and chunks searched
#: for because they hold a known answer. Capture-recapture leaves them out.
TARGETED_SOURCES = ("qrels", ANSWER_SEARCH)


def found_by_source(
    rows: Sequence[GoldenRow], *, exclude: Sequence[str] = TARGETED_SOURCES, relevance_level: int = RELEVANCE_LEVEL
) -> dict[str, dict[str, set[str]]]:
    """query_id -> source -> relevant doc_ids (grade >= ``relevance_level``) that source put in the pool."""
    found: dict[str, dict[str, set[str]]] = {}
    for r in rows:
        if r.relevance < relevance_level:
            continue
        by_source = found.setdefault(r.query_id, {})
        for source in r.sources:
            if source not in exclude:
                by_source.setdefault(source, set()).add(r.doc_id)
    return found


class VersionCompleteness(NamedTuple):
    """A version's rows and the capture-recapture estimate over them (:class:`pooling.completeness.Completeness`)."""

    version: str
    rows: list[GoldenRow]
    estimate: Any
    relevance_level: int = RELEVANCE_LEVEL

    def as_dict(self) -> dict[str, Any]:
        """``version``, ``relevance_level`` and the estimate's keys."""
        return {"version": self.version, "relevance_level": self.relevance_level, **self.estimate.as_dict()}


def completeness(
    db: sqlite_utils.Database, version: str | None, *, caller: Caller, relevance_level: int = RELEVANCE_LEVEL
) -> VersionCompleteness:
    """Capture-recapture estimate of the relevant chunks the pool missed, for a version
    (default: the latest), a chunk graded at or above ``relevance_level`` counting as relevant.
    Items that joined only through imported qrels or an answer search are not a source.

    Raises:
        StoreError: no version at all, no such version, or an altered one (:func:`verified_rows`).
        PoolingError: fewer than two sources.
    """
    from labeler.store import versions as store
    from pooling.completeness import completeness as estimate

    if version is None:
        latest = store.latest_version(db, caller=caller)
        if latest is None:
            raise StoreError("no golden version yet: freeze one first (goldpool freeze DB --version NAME)")
        version = latest.name
    rows = verified_rows(db, version, caller=caller)[1]
    return VersionCompleteness(version, rows, estimate(found_by_source(rows, relevance_level=relevance_level)),
                               relevance_level)


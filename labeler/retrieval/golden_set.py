"""The golden set: freeze labels into a named version, export it, compare versions, score runs.

This is the service layer between the store (``labeler.store.versions``: SQL only) and the
libraries (``calibration`` for aggregation, metrics and comparison; ``pooling`` for files and
capture-recapture). Every function that reads or writes the project takes a required keyword
``caller`` (``OWNER`` from the command line, the signed-in admin in the app). A version's
manifest is made in :mod:`labeler.retrieval.manifest`; an export's files, its folder checks
and its dataset card in :mod:`labeler.retrieval.export_folder` and
:mod:`labeler.retrieval.dataset_card`.

The **content hash** of a version is the sha256 of its aggregated rows only, one UTF-8 line
``query_id<TAB>doc_id<TAB>relevance<LF>`` per item, sorted: the same grades give the same hash
wherever they were made, whatever the raw labels, notes or times behind them.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import sqlite_utils

from calibration.aggregate import aggregate
from calibration.metrics import check_scoring, evaluate_many, parse_metrics
from labeler.project import parse_golden
from labeler.retrieval.dataset_card import dataset_card
from labeler.retrieval.export_folder import (FORMATS, check_export_target, export_records, file_sha256,
                                             write_formats, write_nuggets)
from labeler.retrieval.manifest import export_manifest, nuggets_manifest, relevant_counts, version_manifest
from labeler.store import versions as store
from labeler.store.connection import connect
from labeler.store.errors import StoreError
from labeler.store.nuggets import list_nuggets, version_nuggets
from labeler.store.versions import GoldenRow, Version
from labeler.store.vocabulary import RELEVANCE_LEVEL, Caller
from pooling.completeness import completeness as capture_recapture
from pooling.files import UnsafeTarget, replace_folder
from pooling.pool import rrf_priority
from pooling.qrels import qrels_lines, read_qrels
from pooling.ranked_runs import read_ranked_run


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
    manifest = version_manifest(db, rule, note, allow_ties, labels, agg, rows, caller=caller,
                                relevance_level=relevance_level)
    nuggets = list_nuggets(db)
    if nuggets:  # the questions' nuggets are frozen with the grades
        manifest["nuggets"] = nuggets_manifest(nuggets)
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
    path = Path(path)
    entries = list(qrels_lines(path))  # every line checked (fields, integers, duplicates) first
    result = store.import_labels(db, str(path), entries, annotator, caller=caller, priority=rrf_priority)
    return ImportedJudgments(str(path), result.annotator, result.added, result.unchanged, result.pooled,
                             result.created_annotator)


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
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise StoreError(f"format {', '.join(unknown) or '(none)'}: choose from {', '.join(FORMATS)}")
    version, rows = verified_rows(db, name, caller=caller)
    out = Path(out)
    check_export_target(db, out, overwrite=overwrite, caller=caller)
    chosen = list(dict.fromkeys(formats))
    query_ids = {r.query_id for r in rows}
    queries, docs = store.texts(db, query_ids, None if "beir" in chosen else {r.doc_id for r in rows}, caller=caller)
    records = export_records(rows, queries, docs) if {"jsonl", "parquet"} & set(chosen) else []
    relevant = relevant_counts(rows, relevance_level)
    nuggets = version_nuggets(db, name)
    written: list[str] = []

    def build(folder: Path) -> None:
        paths = write_formats(folder, chosen, rows, records=records, queries=queries, docs=docs)
        if nuggets:  # the nuggets frozen with the version
            paths.append(write_nuggets(folder, nuggets))
        card = folder / "README.md"
        card.write_text(dataset_card(version, chosen, relevant), encoding="utf-8")
        paths.append(card)
        manifest = export_manifest(version, relevant, {str(p.relative_to(folder)): file_sha256(p) for p in paths})
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
        if listed is not None and listed != file_sha256(qrels_path):
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
    if version is None:
        latest = store.latest_version(db, caller=caller)
        if latest is None:
            raise StoreError("no golden version yet: freeze one first (goldpool freeze DB --version NAME)")
        version = latest.name
    rows = verified_rows(db, version, caller=caller)[1]
    return VersionCompleteness(version, rows, capture_recapture(found_by_source(rows, relevance_level=relevance_level)),
                               relevance_level)


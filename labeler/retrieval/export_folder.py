"""The folder an export writes: one writer per format, the sha256 of each file, and the check
that the folder it replaces is empty or a previous export of this project.

:func:`labeler.retrieval.golden_set.export` builds the folder whole in a private temporary
folder and moves it into place (:func:`pooling.files.replace_folder`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlite_utils

from labeler.store import versions as store
from labeler.store.errors import StoreError
from labeler.store.nuggets import Nugget
from labeler.store.versions import GoldenRow
from labeler.store.vocabulary import Caller
from pooling.files import UnsafeTarget, check_folder

FORMATS = ("trec", "jsonl", "parquet", "beir")


def file_sha256(path: Path) -> str:
    """The sha256 (hex) of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_records(rows: Sequence[GoldenRow], queries: dict[str, str], docs: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """One record per item, as golden.jsonl and golden.parquet hold it: grade, labels,
    provenance and the texts."""
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


def write_formats(folder: Path, formats: Sequence[str], rows: Sequence[GoldenRow], *, records: list[dict[str, Any]],
                  queries: dict[str, str], docs: dict[str, tuple[str, str]]) -> list[Path]:
    """Write the files of each format into ``folder``; the paths written, in order."""
    paths: list[Path] = []
    for fmt in formats:
        paths += _WRITERS[fmt](folder, rows, records=records, queries=queries, all_docs=docs)
    return paths


def write_nuggets(folder: Path, nuggets: Sequence[Nugget]) -> Path:
    """Write ``nuggets.jsonl`` (one JSON object a line, in the version's order) into ``folder``."""
    path = folder / "nuggets.jsonl"
    path.write_text("".join(json.dumps({"nugget_id": n.nugget_id, "query_id": n.query_id, "text": n.text,
                                        "importance": n.importance, "position": n.position,
                                        "doc_ids": list(n.doc_ids)}, ensure_ascii=False) + "\n"
                            for n in nuggets), encoding="utf-8")
    return path


def check_export_target(db: sqlite_utils.Database, out: Path, *, overwrite: bool, caller: Caller) -> None:
    """Refuse a folder ``out`` an export may not replace: in no existing folder, a link or
    holding one (:func:`pooling.files.check_folder`), or, unless ``overwrite``, holding
    something else than a previous export of this project.

    Raises:
        StoreError: why ``out`` is refused.
    """
    if not out.parent.is_dir():
        raise StoreError(f"{out.parent}: directory does not exist")
    try:
        check_folder(out)
    except UnsafeTarget as exc:
        raise StoreError(str(exc)) from exc
    if not overwrite:
        _refuse_foreign_folder(db, out, caller=caller)


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

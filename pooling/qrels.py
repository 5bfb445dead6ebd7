"""Label files: TREC qrels, JSONL, CSV or TSV of (query_id, doc_id, relevance), keyed and joined.

The one reader of label files (human qrels, a judge's verdicts): ``goldpool agree`` reads
files here and hands the joined label vectors to ``calibration``, which never opens a file.
Lines, encodings (UTF-8, a leading byte-order mark dropped) and the JSONL/CSV/TSV syntax come
from the same primitives as the corpus and query readers (``pooling.lines``,
``pooling.readers.read_records``, ``pooling.trec.read_columns``), so a file that one reader accepts the other accepts too.

The format follows the file name: ``.jsonl``/``.ndjson``/``.json`` JSONL, ``.csv`` CSV,
``.tsv``/``.tab`` tab-separated (both with a header row), ``.parquet``/``.pq`` Parquet; any
other name is TREC qrels, ``query_id iteration doc_id relevance`` separated by whitespace.
Every problem raises :class:`~pooling.PoolingError` naming the file, the line and the field.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pooling import PoolingError
from pooling.readers import _SUFFIXES, read_records
from pooling.trec import read_columns

LabelFormat = Literal["auto", "trec", "jsonl", "csv", "tsv", "parquet"]
Key = tuple[str, ...]
Label = int | float

#: The key of a TREC qrels line, and the default key of the other formats.
QRELS_KEY: tuple[str, str] = ("query_id", "doc_id")


@dataclass(frozen=True, slots=True)
class LabelFile:
    """The labels of one file: key (e.g. query_id, doc_id) -> numeric label."""

    path: str
    key_fields: tuple[str, ...]
    labels: dict[Key, Label]


@dataclass(frozen=True, slots=True)
class JoinedLabels:
    """Labels of two (or three) files on the keys they all share, in sorted key order.

    ``a`` is the reference (e.g. human qrels), ``b`` the labels compared with it (e.g. a judge),
    ``c`` an optional second reference (a second human: the ceiling). ``n_joined`` counts the
    keys A and B share (before a ceiling narrows them), ``only_a``/``only_b`` those of one only.
    """

    keys: tuple[Key, ...]
    a: tuple[Label, ...]
    b: tuple[Label, ...]
    c: tuple[Label, ...] | None
    only_a: int
    only_b: int
    n_joined: int

    @property
    def groups(self) -> tuple[str, ...]:
        """The first key field of each item (the query_id): the unit of the cluster bootstrap."""
        return tuple(k[0] for k in self.keys)

    def counts(self) -> dict[str, int]:
        """``n`` (joined on A and B), ``only_a``, ``only_b``: the JSON keys of ``goldpool agree``."""
        return {"n": self.n_joined, "only_a": self.only_a, "only_b": self.only_b}


def detect_label_format(path: str | Path) -> Literal["trec", "jsonl", "csv", "tsv", "parquet"]:
    """The format of a label file from its name; TREC qrels when the name says nothing.

    >>> detect_label_format("judge.jsonl"), detect_label_format("human.tsv"), detect_label_format("qrels.txt")
    ('jsonl', 'tsv', 'trec')
    """
    fmt = _SUFFIXES.get(Path(path).suffix.lower())
    return "trec" if fmt is None or fmt == "trec" else fmt


def _number(value: object, path: Path, line: int, field: str) -> Label:
    if isinstance(value, bool):
        return int(value)
    try:
        number = float(value) if isinstance(value, int | float) else float(str(value).strip())
    except ValueError:
        raise PoolingError(f"{value!r} is not a number", path=path, line=line, field=field) from None
    if not math.isfinite(number):
        raise PoolingError(f"{value!r} is not a finite number", path=path, line=line, field=field)
    return int(number) if number.is_integer() else number


def _trec_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, fields in read_columns(path, "query_id iteration doc_id relevance"):
        yield line, {"query_id": fields[0], "doc_id": fields[2], "relevance": fields[3]}


def _checked_columns(rows: Iterator[tuple[int, dict[str, Any]]], path: Path, needed: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Refuse a CSV/TSV file whose header lacks a needed column, at line 1."""
    for number, (line, row) in enumerate(rows):
        if number == 0:
            missing = [f for f in needed if f not in row]
            if missing:
                raise PoolingError(f"no column {missing[0]!r} (columns: {', '.join(row)})", path=path, line=1)
        yield line, row


def qrels_lines(path: str | Path) -> Iterator[tuple[int, str, str, int]]:
    """Yield ``(line, query_id, doc_id, relevance)`` of a TREC qrels file with integer grades.

    The reader of qrels for run scoring and for ``import-judgments``: the same TREC columns
    as :func:`read_labels` reads, but grades must be integers (trec_eval's) and a
    (query_id, doc_id) may appear once.

    Raises:
        PoolingError: a missing file, a line without 4 fields, a grade that is not an integer,
            or the same (query_id, doc_id) twice; the message names file, line and field.
    """
    p = Path(path)
    if not p.is_file():
        raise PoolingError("no such qrels file", path=p)
    first_line: dict[tuple[str, str], int] = {}
    for line, fields in read_columns(p, "query_id iteration doc_id relevance"):
        query_id, _, doc_id, grade = fields
        try:
            relevance = int(grade)
        except ValueError:
            raise PoolingError(f"{grade!r} is not an integer", path=p, line=line, field="relevance") from None
        if (query_id, doc_id) in first_line:
            raise PoolingError(
                f"doc_id {doc_id!r} judged twice for query {query_id!r} (first on line {first_line[query_id, doc_id]})",
                path=p, line=line, field="doc_id",
            )
        first_line[query_id, doc_id] = line
        yield line, query_id, doc_id, relevance
    if not first_line:
        raise PoolingError("no judgments in the qrels file", path=p)


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """A TREC qrels file as query_id -> doc_id -> relevance (see :func:`qrels_lines`)."""
    qrels: dict[str, dict[str, int]] = {}
    for _, query_id, doc_id, relevance in qrels_lines(path):
        qrels.setdefault(query_id, {})[doc_id] = relevance
    return qrels


def read_labels(
    path: str | Path,
    *,
    fmt: LabelFormat = "auto",
    keys: Sequence[str] = QRELS_KEY,
    label: str = "relevance",
) -> LabelFile:
    """Read one numeric label per key from a TREC qrels, JSONL, CSV, TSV or Parquet file.

    TREC qrels lines are ``query_id iteration doc_id relevance``; their key is always
    (query_id, doc_id). The other formats use the ``keys`` fields and the ``label`` field.

    Raises:
        PoolingError: missing file, a malformed line, a missing or non-numeric field, or a key
            given twice; the message names the file, the line and the field.
    """
    p = Path(path)
    if not p.is_file():
        raise PoolingError("no such file", path=p)
    kind = detect_label_format(p) if fmt == "auto" else fmt
    key_fields = QRELS_KEY if kind == "trec" else tuple(keys)
    label_field = "relevance" if kind == "trec" else label
    if kind == "trec":
        rows = _trec_rows(p)
    else:
        rows = read_records(p, kind)
        if kind in ("csv", "tsv"):
            rows = _checked_columns(rows, p, [*key_fields, label_field])
    labels: dict[Key, Label] = {}
    first_line: dict[Key, int] = {}
    for line, row in rows:
        for field in (*key_fields, label_field):
            if row.get(field) in (None, ""):
                raise PoolingError("missing", path=p, line=line, field=field)
        key = tuple(str(row[f]) for f in key_fields)
        if key in labels:
            raise PoolingError(
                f"key {key} already given on line {first_line[key]}", path=p, line=line, field=", ".join(key_fields)
            )
        labels[key] = _number(row[label_field], p, line, label_field)
        first_line[key] = line
    if not labels:
        raise PoolingError("no labels in the file", path=p)
    return LabelFile(str(p), key_fields, labels)


def join_labels(a: LabelFile, b: LabelFile, ceiling: LabelFile | None = None) -> JoinedLabels:
    """The items A and B both label (and, with ``ceiling``, C too), as aligned label vectors.

    Raises:
        PoolingError: the files are keyed by a different number of fields, or share no key.
    """
    for other in (b, ceiling):
        if other is not None and len(a.key_fields) != len(other.key_fields):
            raise PoolingError(
                f"keyed by {', '.join(a.key_fields)} but {other.path} by {', '.join(other.key_fields)}", path=a.path
            )
    shared = sorted(a.labels.keys() & b.labels.keys())
    if not shared:
        raise PoolingError(f"{a.path} and {b.path} share no key: nothing to compare")
    n_joined = len(shared)
    if ceiling is not None:
        shared = [k for k in shared if k in ceiling.labels]
        if not shared:
            raise PoolingError(f"{ceiling.path} shares no key with both {a.path} and {b.path}")
    return JoinedLabels(
        tuple(shared),
        tuple(a.labels[k] for k in shared),
        tuple(b.labels[k] for k in shared),
        None if ceiling is None else tuple(ceiling.labels[k] for k in shared),
        len(a.labels) - n_joined,
        len(b.labels) - n_joined,
        n_joined,
    )

"""Label files to compare: TREC qrels, JSONL or CSV, keyed by (query_id, doc_id) by default.

A problem in a file is reported with the file, the line and the field, e.g.
``judge.jsonl:12: field 'relevance': 'high' is not a number``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from calibration import CalibrationError

Format = Literal["auto", "trec", "jsonl", "csv"]
Key = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LabelFile:
    """The labels of one file: key (e.g. query_id, doc_id) -> numeric label."""

    path: str
    key_fields: tuple[str, ...]
    labels: dict[Key, int | float]


@dataclass(frozen=True, slots=True)
class JoinedLabels:
    """Two files' labels on the keys they share, in sorted key order."""

    keys: tuple[Key, ...]
    a: tuple[int | float, ...]
    b: tuple[int | float, ...]
    only_a: int
    only_b: int

    @property
    def groups(self) -> tuple[str, ...]:
        """The first key field of each item (the query_id): the unit of the cluster bootstrap."""
        return tuple(k[0] for k in self.keys)


def _number(value: object, where: str, field: str) -> int | float:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        number = float(value)
    else:
        try:
            number = float(str(value).strip())
        except ValueError:
            raise CalibrationError(f"{where}: field {field!r}: {value!r} is not a number") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise CalibrationError(f"{where}: field {field!r}: {value!r} is not a finite number")
    return int(number) if number.is_integer() else number


def _lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 file, ends kept; a line that is not UTF-8 is refused by number."""
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CalibrationError(
                    f"{path}:{line_no}: not valid UTF-8 (byte {exc.start + 1} of the line); re-save the file as UTF-8"
                ) from None


def _trec_rows(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    for line_no, line in enumerate(_lines(path), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise CalibrationError(
                f"{path}:{line_no}: expected 4 fields 'query_id iteration doc_id relevance', got {len(fields)}"
            )
        yield line_no, {"query_id": fields[0], "doc_id": fields[2], "relevance": fields[3]}


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    for line_no, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CalibrationError(f"{path}:{line_no}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise CalibrationError(f"{path}:{line_no}: expected a JSON object per line")
        yield line_no, row


def _csv_rows(path: Path, needed: Sequence[str]) -> Iterator[tuple[int, dict[str, object]]]:
    reader = csv.DictReader(_lines(path))
    missing = [f for f in needed if f not in (reader.fieldnames or [])]
    if missing:
        raise CalibrationError(f"{path}:1: no column {missing[0]!r} (columns: {', '.join(reader.fieldnames or [])})")
    for row in reader:
        yield reader.line_num, row


def detect_format(path: Path) -> Literal["trec", "jsonl", "csv"]:
    """``jsonl`` for .jsonl/.json, ``csv`` for .csv, TREC qrels otherwise."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    return "csv" if suffix == ".csv" else "trec"


def read_labels(
    path: str | Path,
    *,
    fmt: Format = "auto",
    keys: Sequence[str] = ("query_id", "doc_id"),
    label: str = "relevance",
) -> LabelFile:
    """Read one label per key from a TREC qrels, JSONL or CSV file.

    TREC qrels lines are ``query_id iteration doc_id relevance``; their key is always
    (query_id, doc_id). JSONL and CSV use the ``keys`` fields and the ``label`` field.

    Raises:
        CalibrationError: missing file, a malformed line, a missing or non-numeric field, or a
            key given twice; the message names the file, the line and the field.
    """
    p = Path(path)
    if not p.is_file():
        raise CalibrationError(f"{p}: no such file")
    kind = detect_format(p) if fmt == "auto" else fmt
    key_fields = ("query_id", "doc_id") if kind == "trec" else tuple(keys)
    label_field = "relevance" if kind == "trec" else label
    if kind == "trec":
        rows = _trec_rows(p)
    elif kind == "jsonl":
        rows = _jsonl_rows(p)
    else:
        rows = _csv_rows(p, [*key_fields, label_field])
    labels: dict[Key, int | float] = {}
    first_line: dict[Key, int] = {}
    for line_no, row in rows:
        where = f"{p}:{line_no}"
        for field in (*key_fields, label_field):
            if row.get(field) in (None, ""):
                raise CalibrationError(f"{where}: field {field!r} is missing")
        key = tuple(str(row[f]) for f in key_fields)
        if key in labels:
            raise CalibrationError(f"{where}: fields {', '.join(key_fields)}: key {key} already given on line {first_line[key]}")
        labels[key] = _number(row[label_field], where, label_field)
        first_line[key] = line_no
    if not labels:
        raise CalibrationError(f"{p}: no labels in the file")
    return LabelFile(str(p), key_fields, labels)


def join_labels(a: LabelFile, b: LabelFile) -> JoinedLabels:
    """The items both files label, and how many only one of them does."""
    if len(a.key_fields) != len(b.key_fields):
        raise CalibrationError(
            f"{a.path} is keyed by {', '.join(a.key_fields)} but {b.path} by {', '.join(b.key_fields)}"
        )
    shared = sorted(a.labels.keys() & b.labels.keys())
    if not shared:
        raise CalibrationError(f"{a.path} and {b.path} share no key: nothing to compare")
    return JoinedLabels(
        tuple(shared),
        tuple(a.labels[k] for k in shared),
        tuple(b.labels[k] for k in shared),
        len(a.labels) - len(shared),
        len(b.labels) - len(shared),
    )

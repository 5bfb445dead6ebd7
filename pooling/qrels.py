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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pooling import PoolingError, shown
from pooling.chars import check_id
from pooling.readers import _SUFFIXES, read_records
from pooling.trec import read_columns

LabelFormat = Literal["auto", "trec", "jsonl", "csv", "tsv", "parquet"]
Key = tuple[str, ...]
Label = int | float

#: The key of a TREC qrels line, and the default key of the other formats.
QRELS_KEY: tuple[str, str] = ("query_id", "doc_id")


@dataclass(frozen=True, slots=True)
class LabelFile:
    """The labels of one file (or of one rater in it): key (e.g. query_id, doc_id) -> label.

    ``lines`` gives the line each label was read from; ``rater`` names the annotator of a
    goldpool judgments export the labels belong to (``adjudicated`` for the final grades), or
    is None for a file of one rater.
    """

    path: str
    key_fields: tuple[str, ...]
    labels: dict[Key, Label]
    lines: dict[Key, int] = field(default_factory=dict)
    rater: str | None = None

    @property
    def name(self) -> str:
        """The file, with the rater in brackets when the file holds several."""
        return self.path if self.rater is None else f"{self.path} [{self.rater}]"


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
        raise PoolingError(f"{shown(value)} is not a number", path=path, line=line, field=field) from None
    if not math.isfinite(number):
        raise PoolingError(f"{shown(value)} is not a finite number", path=path, line=line, field=field)
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
                raise PoolingError(f"no column {shown(missing[0])} (columns: {', '.join(row)})", path=path, line=1)
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
        check_id(query_id, p, line, "query_id")
        check_id(doc_id, p, line, "doc_id")
        try:
            relevance = int(grade)
        except ValueError:
            raise PoolingError(f"{shown(grade)} is not an integer", path=p, line=line, field="relevance") from None
        if (query_id, doc_id) in first_line:
            raise PoolingError(
                f"doc_id {shown(doc_id)} judged twice for query {shown(query_id)} (first on line {first_line[query_id, doc_id]})",
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


def _rows(p: Path, kind: str, key_fields: tuple[str, ...], label_field: str) -> Iterator[tuple[int, dict[str, Any]]]:
    if kind == "trec":
        return _trec_rows(p)
    rows = read_records(p, kind)  # type: ignore[arg-type]
    if kind in ("csv", "tsv"):
        rows = _checked_columns(rows, p, [*key_fields, label_field])
    return rows


def _key(row: dict[str, Any], key_fields: tuple[str, ...], label_field: str, p: Path, line: int) -> Key:
    for name in (*key_fields, label_field):
        if row.get(name) in (None, ""):
            raise PoolingError("missing", path=p, line=line, field=name)
    return tuple(check_id(str(row[f]), p, line, f, inner_spaces=True) for f in key_fields)


def _on_scale(value: Label, grades: Sequence[int] | None, p: Path, line: int, label_field: str) -> Label:
    if grades is not None and value not in grades:
        scale = ", ".join(str(g) for g in grades)
        raise PoolingError(f"grade {value} is not on the declared scale ({scale})", path=p, line=line, field=label_field)
    return value


def read_labels(
    path: str | Path,
    *,
    fmt: LabelFormat = "auto",
    keys: Sequence[str] = QRELS_KEY,
    label: str = "relevance",
    grades: Sequence[int] | None = None,
) -> LabelFile:
    """Read one numeric label per key from a TREC qrels, JSONL, CSV, TSV or Parquet file.

    TREC qrels lines are ``query_id iteration doc_id relevance``; their key is always
    (query_id, doc_id). The other formats use the ``keys`` fields and the ``label`` field.
    With ``grades`` (the declared scale), any other label is refused.

    Raises:
        PoolingError: missing file, a malformed line, a missing or non-numeric field, an id
            with an invisible character, a key given twice, or a grade off the declared
            scale; the message names the file, the line and the field.
    """
    p = Path(path)
    if not p.is_file():
        raise PoolingError("no such file", path=p)
    kind = detect_label_format(p) if fmt == "auto" else fmt
    key_fields = QRELS_KEY if kind == "trec" else tuple(keys)
    label_field = "relevance" if kind == "trec" else label
    labels: dict[Key, Label] = {}
    first_line: dict[Key, int] = {}
    for line, row in _rows(p, kind, key_fields, label_field):
        key = _key(row, key_fields, label_field, p, line)
        if key in labels:
            hint = " (several annotators in one file: give a goldpool judgments export as A or B, in JSONL)" if "annotator" in row else ""
            raise PoolingError(
                f"key {shown(key)} already given on line {first_line[key]}{hint}", path=p, line=line, field=", ".join(key_fields)
            )
        labels[key] = _on_scale(_number(row[label_field], p, line, label_field), grades, p, line, label_field)
        first_line[key] = line
    if not labels:
        raise PoolingError("no labels in the file", path=p)
    return LabelFile(str(p), key_fields, labels, first_line)


#: The rater of a judgments export that holds each item's final grade (``--adjudicated``).
ADJUDICATED = "adjudicated"


def is_judgments_export(path: str | Path, fmt: LabelFormat = "auto") -> bool:
    """Whether ``path`` is a goldpool ``export-judgments`` file: JSONL whose records name an
    ``annotator`` (several raters in one file, a label's history included)."""
    p = Path(path)
    kind = detect_label_format(p) if fmt == "auto" else fmt
    if kind != "jsonl" or not p.is_file():
        return False
    for _, row in read_records(p, "jsonl"):
        return "annotator" in row
    return False


def read_raters(
    path: str | Path,
    *,
    fmt: LabelFormat = "auto",
    keys: Sequence[str] = QRELS_KEY,
    label: str = "relevance",
    grades: Sequence[int] | None = None,
    annotators: Sequence[str] = (),
    adjudicated: bool = False,
) -> list[LabelFile]:
    """The raters of a label file: one for a plain file, one per annotator for an export.

    A goldpool judgments export holds every label with its history (oldest first); each
    annotator's current label of an item is their last row for it. ``annotators`` keeps only
    the named ones; ``adjudicated`` adds (and, without ``annotators``, keeps only) the rater
    :data:`ADJUDICATED`: each item's final grade, that is its adjudicated grade, or, for an
    item nobody adjudicated, the grade when all its annotators give the same one (an item
    they disagree on and nobody adjudicated has no final grade and is left out).

    Raises:
        PoolingError: as :func:`read_labels`; an unknown annotator; ``adjudicated`` on an
            export without the ``adjudicated`` field.
    """
    if not is_judgments_export(path, fmt):
        return [read_labels(path, fmt=fmt, keys=keys, label=label, grades=grades)]
    p = Path(path)
    current: dict[str, dict[Key, tuple[Label, int]]] = {}
    final: dict[Key, tuple[Label | None, int]] = {}
    has_final = False
    for line, row in read_records(p, "jsonl"):
        key = _key(row, QRELS_KEY, "relevance", p, line)
        who = row.get("annotator")
        if not isinstance(who, str) or not who:
            raise PoolingError("missing", path=p, line=line, field="annotator")
        value = _on_scale(_number(row["relevance"], p, line, "relevance"), grades, p, line, "relevance")
        current.setdefault(who, {})[key] = (value, line)
        has_final = has_final or ADJUDICATED in row
        given = row.get(ADJUDICATED)
        final[key] = (None if given is None else _number(given, p, line, ADJUDICATED), line)
    if not current:
        raise PoolingError("no labels in the file", path=p)
    unknown = [n for n in annotators if n not in current]
    if unknown:
        raise PoolingError(f"no annotator {shown(unknown[0])} in the file (annotators: {', '.join(sorted(current))})", path=p)
    if adjudicated and not has_final:
        raise PoolingError(
            "has no adjudicated grades (field 'adjudicated'); export the judgments again with this goldpool", path=p
        )
    chosen = list(annotators) if annotators or adjudicated else sorted(current)
    raters = [_rater(p, name, current[name]) for name in chosen]
    if adjudicated:
        raters.append(_rater(p, ADJUDICATED, _final_grades(current, final)))
    return raters


def _rater(p: Path, name: str, graded: dict[Key, tuple[Label, int]]) -> LabelFile:
    return LabelFile(str(p), QRELS_KEY, {k: v for k, (v, _) in graded.items()}, {k: n for k, (_, n) in graded.items()}, name)


def _final_grades(
    current: dict[str, dict[Key, tuple[Label, int]]], final: dict[Key, tuple[Label | None, int]]
) -> dict[Key, tuple[Label, int]]:
    grades: dict[Key, tuple[Label, int]] = {}
    for key, (given, line) in final.items():
        if given is not None:
            grades[key] = (given, line)
            continue
        values = {labels[key][0] for labels in current.values() if key in labels}
        if len(values) == 1:
            grades[key] = (values.pop(), line)
    return grades


def rater_pairs(a: Sequence[LabelFile], b: Sequence[LabelFile]) -> list[tuple[LabelFile, LabelFile]]:
    """Every pair of a rater of A with a rater of B; a rater is never paired with itself, and
    when A and B are the same file each pair appears once.

    >>> x, y = (LabelFile("e.jsonl", QRELS_KEY, {}, rater=r) for r in ("x", "y"))
    >>> [(p.rater, q.rater) for p, q in rater_pairs([x, y], [x, y])]
    [('x', 'y')]
    """
    pairs: list[tuple[LabelFile, LabelFile]] = []
    seen: set[frozenset[str]] = set()
    for first in a:
        for second in b:
            names = frozenset((first.name, second.name))
            if len(names) == 2 and names not in seen:
                seen.add(names)
                pairs.append((first, second))
    return pairs


def scale_warnings(a: LabelFile, b: LabelFile, limit: int = 5) -> list[str]:
    """What looks off about the grades of two files when no scale is declared: a negative
    grade, and a grade that only one of the two files uses, each with its lines.

    >>> a = LabelFile("a", QRELS_KEY, {("q", "1"): 1, ("q", "2"): 7}, {("q", "1"): 1, ("q", "2"): 2})
    >>> b = LabelFile("b", QRELS_KEY, {("q", "1"): 1, ("q", "2"): -1}, {("q", "1"): 4, ("q", "2"): 5})
    >>> for w in scale_warnings(a, b): print(w)
    a, line 2: grade 7 appears only in this file, not in b
    b, line 5: grade -1 is negative
    b, line 5: grade -1 appears only in this file, not in a
    """
    warnings: list[str] = []
    for this, other in ((a, b), (b, a)):
        used = set(other.labels.values())
        by_grade: dict[Label, list[int]] = {}
        for key, value in this.labels.items():
            by_grade.setdefault(value, []).append(this.lines.get(key, 0))
        for value in sorted(by_grade):
            where = _lines(this.name, sorted(by_grade[value]), limit)
            if value < 0:
                warnings.append(f"{where}: grade {value} is negative")
            if value not in used:
                warnings.append(f"{where}: grade {value} appears only in this file, not in {other.name}")
    return warnings


def _lines(name: str, numbers: list[int], limit: int) -> str:
    shown = ", ".join(str(n) for n in numbers[:limit])
    more = f" and {len(numbers) - limit} more" if len(numbers) > limit else ""
    return f"{name}, line{'s' if len(numbers) > 1 else ''} {shown}{more}"


def join_labels(a: LabelFile, b: LabelFile, ceiling: LabelFile | None = None) -> JoinedLabels:
    """The items A and B both label (and, with ``ceiling``, C too), as aligned label vectors.

    Raises:
        PoolingError: the files are keyed by a different number of fields, or share no key.
    """
    for other in (b, ceiling):
        if other is not None and len(a.key_fields) != len(other.key_fields):
            raise PoolingError(
                f"keyed by {', '.join(a.key_fields)} but {other.name} by {', '.join(other.key_fields)}", path=a.name
            )
    shared = sorted(a.labels.keys() & b.labels.keys())
    if not shared:
        raise PoolingError(f"{a.name} and {b.name} share no key: nothing to compare")
    n_joined = len(shared)
    if ceiling is not None:
        shared = [k for k in shared if k in ceiling.labels]
        if not shared:
            raise PoolingError(f"{ceiling.name} shares no key with both {a.name} and {b.name}")
    return JoinedLabels(
        tuple(shared),
        tuple(a.labels[k] for k in shared),
        tuple(b.labels[k] for k in shared),
        None if ceiling is None else tuple(ceiling.labels[k] for k in shared),
        len(a.labels) - n_joined,
        len(b.labels) - n_joined,
        n_joined,
    )

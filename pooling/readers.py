"""Streaming, validating readers for corpora and query sets.

Corpus files: JSONL, CSV, TSV or Parquet with ``doc_id`` and ``text`` (optional ``title``;
every other field goes to ``meta``), or TREC ``<DOC><DOCNO>`` SGML. Query files: JSONL, CSV or
TSV with ``query_id`` and ``text``, or TREC ``<top>`` topics. The format follows the file
name (``.jsonl``/``.ndjson``/``.json``, ``.csv``, ``.tsv``/``.tab``, ``.parquet``/``.pq``); any
other name is read as TREC SGML when its first non-blank line starts with ``<``.

Label files (qrels, JSONL, CSV, TSV) are read by ``pooling.qrels`` with the same primitives
(``read_lines``, ``read_records``), so both accept the same encodings and syntax. Verdict
items and verdicts are read by :mod:`pooling.verdict_readers`, a generating system's answers
by :mod:`pooling.answer_readers`, with the same primitives and checks.

Readers yield one record at a time and never hold the file in memory. Every problem raises
:class:`~pooling.PoolingError` naming the file, the 1-based line (the row number, for Parquet)
and the field. Ids must be non-empty and hold only visible characters, texts no NUL
(:mod:`pooling.chars` defines both); a file with no record at all is refused.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pooling import PoolingError, lines, shown, trec
from pooling.chars import check_id, check_text, is_blank
from pooling.lines import over_cap, read_lines
from pooling.types import Document, Query, frozen_meta

Format = Literal["jsonl", "csv", "tsv", "parquet", "trec"]

_SUFFIXES: dict[str, Format] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}

#: The deepest nesting of arrays and objects one JSON line may hold, the record's own object
#: counting as one. Real records nest a few levels (a ``meta`` object holding a list); Python's
#: own JSON reader gives up near 1,000 levels with a RecursionError, and every later step that
#: walks a record (the checks, the JSON written to the project) would too. So a line nested
#: deeper is refused by number, whatever its depth.
JSON_DEPTH_CAP = 100

__all__ = ["Format", "detect_format", "read_corpus", "read_lines", "read_queries", "read_records"]


def detect_format(path: str | Path) -> Format:
    """The format of ``path`` from its suffix, or TREC SGML if its content starts with ``<``."""
    path = Path(path)
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is not None:
        return fmt
    for _, line in read_lines(path):
        if line.strip():
            if line.lstrip().startswith("<"):
                return "trec"
            break
    raise PoolingError(
        "unknown format; name the file .jsonl, .csv, .tsv or .parquet, "
        "or give TREC SGML (<DOC> or <top> blocks)",
        path=path,
    )


def read_corpus(path: str | Path) -> Iterator[Document]:
    """Yield the documents of a corpus file, validated, in file order.

    Raises:
        PoolingError: malformed record, missing or duplicate ``doc_id``, empty ``text``,
            bad encoding; the message names file, line and field.
    """
    path = Path(path)
    fmt = detect_format(path)
    records = trec.read_documents(path) if fmt == "trec" else read_records(path, fmt)
    seen: dict[str, int] = {}
    for line, record in records:
        doc = _document(record, path, line)
        _check_unique(seen, doc.doc_id, "doc_id", path, line)
        yield doc
    if not seen:
        raise PoolingError(_empty("documents", fmt), path=path)


def read_queries(path: str | Path) -> Iterator[Query]:
    """Yield the queries of a query file, validated, in file order.

    Raises:
        PoolingError: as :func:`read_corpus`, for ``query_id`` and ``text``.
    """
    path = Path(path)
    fmt = detect_format(path)
    if fmt == "parquet":
        raise PoolingError("queries are read from JSONL, CSV, TSV or TREC topics", path=path)
    records = trec.read_topics(path) if fmt == "trec" else read_records(path, fmt)
    seen: dict[str, int] = {}
    for line, record in records:
        query = _query(record, path, line)
        _check_unique(seen, query.query_id, "query_id", path, line)
        yield query
    if not seen:
        raise PoolingError(_empty("queries", fmt), path=path)


def _empty(what: str, fmt: Format) -> str:
    header = " (a CSV/TSV file needs rows below its header)" if fmt in ("csv", "tsv") else ""
    return f"empty: no {what} in the file{header}; nothing was imported"


def _check_unique(seen: dict[str, int], key: str, field: str, path: Path, line: int) -> None:
    first = seen.setdefault(key, line)
    if first != line:
        raise PoolingError(
            f"duplicate {field} {shown(key)} (first at line {first}); ids must be unique",
            path=path,
            line=line,
            field=field,
        )


def read_records(path: str | Path, fmt: Format) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, record)`` of a JSONL, CSV, TSV or Parquet file, as the file gives them.

    The shared primitive of every tabular reader (corpora, queries, label files): records are
    not validated beyond their syntax. A CSV/TSV file needs a header row; a row with more or
    fewer fields than the header is refused.

    Raises:
        PoolingError: malformed JSON, CSV or Parquet, or bad encoding (file and line named).
    """
    path = Path(path)
    if fmt == "jsonl":
        return _jsonl(path)
    if fmt == "parquet":
        return _parquet(path)
    return _delimited(path, "," if fmt == "csv" else "\t")


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in read_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if line.count("[") + line.count("{") > JSON_DEPTH_CAP and _depth(record) > JSON_DEPTH_CAP:
                raise RecursionError
        except json.JSONDecodeError as exc:
            raise PoolingError(f"malformed JSON ({exc.msg} at column {exc.colno})", path=path, line=number) from exc
        except RecursionError:
            raise PoolingError(_TOO_DEEP, path=path, line=number) from None
        if not isinstance(record, dict):
            raise PoolingError("expected one JSON object per line", path=path, line=number)
        if "\\u" in line:
            _check_unicode(record, path, number)
        yield number, record


_TOO_DEEP = f"nested deeper than {JSON_DEPTH_CAP} levels of arrays and objects; flatten the record"


def _json_value(text: str) -> Any:
    """``json.loads(text)``, raising RecursionError for a value nested deeper than
    :data:`JSON_DEPTH_CAP` (as Python's reader itself does, near 1,000 levels)."""
    value = json.loads(text)
    if text.count("[") + text.count("{") > JSON_DEPTH_CAP and _depth(value) > JSON_DEPTH_CAP:
        raise RecursionError
    return value


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (0 for a scalar), counted without recursion
    and only as far as one level past :data:`JSON_DEPTH_CAP`.

    >>> _depth({"a": [1, {"b": []}]}), _depth("x")
    (4, 0)
    """
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > JSON_DEPTH_CAP:
            break
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _check_unicode(record: dict[str, Any], path: Path, line: int) -> None:
    """Refuse a lone surrogate escape (``"\\ud800"``): JSON allows it, UTF-8 and SQLite do not."""
    for name, value in record.items():
        try:
            json.dumps([name, value], ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise PoolingError(
                "holds a lone surrogate escape (\\ud800-\\udfff without its pair), which is not valid "
                "Unicode; fix or remove the escape",
                path=path,
                line=line,
                field=name.encode("utf-8", "backslashreplace").decode("utf-8"),
            ) from None


def _delimited(path: Path, delimiter: str) -> Iterator[tuple[int, dict[str, Any]]]:
    cap = lines.LINE_CAP
    csv.field_size_limit(cap)  # a field may hold a whole chunk: the csv module's default is 128 KiB
    record = {"start": 1, "size": 0}  # the record being read: its first line, its characters so far

    def capped() -> Iterator[str]:
        for number, text in read_lines(path):
            if record["size"] == 0:
                record["start"] = number
            record["size"] += len(text)
            if record["size"] > cap:
                raise PoolingError(over_cap("record", cap), path=path, line=record["start"])
            yield text

    reader = csv.reader(capped(), delimiter=delimiter, strict=True)
    start = 1
    try:
        header = next(reader, None)
        if header is None:
            return
        header = [name.strip() for name in header]
        for i, name in enumerate(header):
            if header.index(name) != i:
                raise PoolingError(f"the header names column {shown(name)} twice (columns {header.index(name) + 1} "
                                   f"and {i + 1}); give each column its own name", path=path, line=reader.line_num)
        record["size"] = 0
        start = reader.line_num + 1
        for row in reader:
            record["size"] = 0
            if row:
                if len(row) != len(header):
                    raise PoolingError(
                        f"{len(row)} field{'s' if len(row) != 1 else ''} where the header has {len(header)}",
                        path=path,
                        line=start,
                    )
                yield start, dict(zip(header, row))
            start = reader.line_num + 1
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            opened = _unclosed_quote_line(path, start, delimiter)
            raise PoolingError(
                "a quoted field opens here and is never closed (a missing \" before the end of the file)",
                path=path,
                line=opened,
            ) from exc
        raise PoolingError(f"malformed CSV ({exc})", path=path, line=reader.line_num) from exc


def _unclosed_quote_line(path: Path, start: int, delimiter: str) -> int:
    """The line where the quote left open at the end of the file was opened.

    Reads the file again from ``start`` (the first line of the record that never ended),
    tracking whether each character is inside quotes as the csv module does: a quote opens
    a field only at the field's start, and ``""`` inside a quoted field is a literal quote.
    """
    quoted, at_field_start, opened, pending_quote = False, True, start, False
    for number, text in read_lines(path):
        if number < start:
            continue
        for ch in text:
            if quoted:
                if pending_quote:
                    pending_quote = False
                    if ch == '"':
                        continue
                    quoted = False
                elif ch == '"':
                    pending_quote = True
                    continue
            if not quoted:
                if ch == '"' and at_field_start:
                    quoted, opened = True, number
                at_field_start = ch in (delimiter, "\n", "\r")
    return opened


def _parquet(path: Path, *, lean: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of a Parquet file. ``lean``: small batches read on one thread without buffering
    ahead, for rows holding long texts (answers with their contexts): at 100,000 answers the
    reading process peaks at about 130 MiB less (bench/answers_import.py), no slower."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path, pre_buffer=not lean)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise PoolingError(f"not a readable Parquet file ({exc})", path=path) from exc
    number = 0
    batches = parquet.iter_batches(batch_size=1024, use_threads=False) if lean else parquet.iter_batches(batch_size=8192)
    for batch in batches:
        for record in batch.to_pylist():
            number += 1
            yield number, record


def _json_kind(value: Any) -> str:
    """What a value is called in JSON (the file's terms, not Python's): ``a number``, ``an object``.

    >>> _json_kind(3), _json_kind({}), _json_kind([1]), _json_kind(True)
    ('a number', 'an object', 'an array', 'true or false')
    """
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__} value"


def _identifier(record: dict[str, Any], field: str, path: Path, line: int) -> str:
    value = record.get(field)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if value is None or value == "":
        raise PoolingError(f"missing; every record needs a non-empty {field}", path=path, line=line, field=field)
    if not isinstance(value, str):
        raise PoolingError(f"must be a string, not {_json_kind(value)}", path=path, line=line, field=field)
    return check_id(value, path, line, field)


def _text(record: dict[str, Any], field: str, path: Path, line: int, *, required: bool) -> str:
    value = record.get(field)
    if value is None and not required:
        return ""
    if value is None:
        raise PoolingError(f"missing; every record needs a {field} field", path=path, line=line, field=field)
    if not isinstance(value, str):
        raise PoolingError(f"must be a string, not {_json_kind(value)}", path=path, line=line, field=field)
    check_text(value, path, line, field)
    if required and is_blank(value):
        raise PoolingError("empty; every record needs non-blank text", path=path, line=line, field=field)
    return value


def _meta(record: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    meta = dict(record["meta"]) if isinstance(record.get("meta"), dict) else {}
    meta.update((k, v) for k, v in record.items() if k not in known and k != "meta")
    return meta


def _document(record: dict[str, Any], path: Path, line: int) -> Document:
    doc_id = _identifier(record, "doc_id", path, line)
    text = _text(record, "text", path, line, required=True)
    title = _text(record, "title", path, line, required=False)
    meta = _meta(record, ("doc_id", "text", "title"))
    return Document(doc_id=doc_id, text=text, title=title, meta=frozen_meta(meta), line=line)


def _query(record: dict[str, Any], path: Path, line: int) -> Query:
    query_id = _identifier(record, "query_id", path, line)
    text = _text(record, "text", path, line, required=True)
    meta = _meta(record, ("query_id", "text"))
    return Query(query_id=query_id, text=text, meta=frozen_meta(meta), line=line)

"""Streaming, validating readers for corpora and query sets.

Corpus files: JSONL, CSV, TSV or Parquet with ``doc_id`` and ``text`` (optional ``title``;
every other field goes to ``meta``), or TREC ``<DOC><DOCNO>`` SGML. Query files: JSONL, CSV or
TSV with ``query_id`` and ``text``, or TREC ``<top>`` topics. The format follows the file
name (``.jsonl``/``.ndjson``/``.json``, ``.csv``, ``.tsv``/``.tab``, ``.parquet``/``.pq``); any
other name is read as TREC SGML when its first non-blank line starts with ``<``.

Label files (qrels, JSONL, CSV, TSV) are read by ``pooling.qrels`` with the same primitives
(``read_lines``, ``read_records``), so both accept the same encodings and syntax. Verdict
items (JSONL) and verdicts (JSONL, or TREC qrels for relevance grades) are read here too,
by :func:`read_items` and :func:`read_verdicts`, and a generating system's answers (JSONL or
Parquet, RAGAS's column names accepted) by :func:`read_answers`, with the same checks.

Readers yield one record at a time and never hold the file in memory. Every problem raises
:class:`~pooling.PoolingError` naming the file, the 1-based line (the row number, for Parquet)
and the field. Ids must be non-empty and hold only visible characters, texts no NUL
(:mod:`pooling.chars` defines both); a file with no record at all is refused.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pooling import PoolingError, lines, shown, trec
from pooling.chars import check_id, check_text, is_blank
from pooling.lines import first_bytes, over_cap, read_lines
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

__all__ = ["ANSWER_FIELDS", "ITEM_FIELDS", "Format", "detect_format", "read_corpus", "read_items", "read_lines", "read_queries", "read_records",
           "read_verdicts", "read_answers"]


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


# --- verdict items and verdicts --------------------------------------------------------------

#: The fields of a verdict item of each kind, as a JSONL item file gives them; every other key
#: of a record is kept as metadata.
ITEM_FIELDS: dict[str, tuple[str, ...]] = {
    "faithfulness": ("item_id", "kind", "question", "contexts", "response"),
    "pairwise": ("item_id", "kind", "question", "context", "response_a", "response_b", "model_a", "model_b"),
}
#: Keys never taken into an item's metadata, whatever its kind.
_ITEM_KEYS = frozenset({*ITEM_FIELDS["faithfulness"], *ITEM_FIELDS["pairwise"], "meta"})
_JSONL_SUFFIXES = tuple(suffix for suffix, fmt in _SUFFIXES.items() if fmt == "jsonl")


def read_items(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, item)`` of a JSONL file of faithfulness and pairwise items, validated.

    An item holds every field of its kind (:data:`ITEM_FIELDS`; an absent optional one is None,
    ``contexts`` is ``[]`` for a pairwise item) and ``meta``, a dict of the record's other keys
    (merged into its own ``meta`` object, if it has one). The question must be non-blank; a
    response may be empty, since a model may answer with nothing.

    Raises:
        PoolingError: malformed JSON, a missing or invalid ``item_id`` (see
            :mod:`pooling.chars`), an unknown kind, a missing field, a text holding NUL, the
            same ``item_id`` twice, or no item at all; file, line and field named.
    """
    path = Path(path)
    seen: dict[str, int] = {}
    for line, record in read_records(path, "jsonl"):
        item = _item(record, path, line)
        _check_unique(seen, item["item_id"], "item_id", path, line)
        yield line, item
    if not seen:
        raise PoolingError(_empty("items", "jsonl"), path=path)


def _item(record: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    item_id = _identifier(record, "item_id", path, line)
    kind = record.get("kind")
    if kind not in ITEM_FIELDS:
        raise PoolingError(f"{shown(kind)}: give 'faithfulness' or 'pairwise'", path=path, line=line, field="kind")
    item: dict[str, Any] = {"item_id": item_id, "kind": kind, "question": _text(record, "question", path, line, required=True)}
    if kind == "faithfulness":
        contexts = record.get("contexts")
        if not isinstance(contexts, list) or not contexts:
            raise PoolingError("give a non-empty list of context texts", path=path, line=line, field="contexts")
        for i, text in enumerate(contexts):
            if not isinstance(text, str):
                raise PoolingError(f"element {i} must be a string, not {_json_kind(text)}", path=path, line=line, field="contexts")
            check_text(text, path, line, f"contexts[{i}]")
        item.update(contexts=contexts, context=None, response=_response(record, "response", path, line),
                    response_a=None, response_b=None, model_a=None, model_b=None)
    else:
        item.update(contexts=[], context=_optional_text(record, "context", path, line), response=None,
                    response_a=_response(record, "response_a", path, line),
                    response_b=_response(record, "response_b", path, line),
                    model_a=_optional_text(record, "model_a", path, line),
                    model_b=_optional_text(record, "model_b", path, line))
    meta = dict(record["meta"]) if isinstance(record.get("meta"), dict) else {}
    meta.update((k, v) for k, v in record.items() if k not in _ITEM_KEYS)
    item["meta"] = meta
    return item


def _response(record: dict[str, Any], field: str, path: Path, line: int) -> str:
    """A model's response: required, but may be empty (an empty answer is an answer)."""
    if record.get(field) is None:
        raise PoolingError("missing; give the response text (\"\" for an empty response)", path=path, line=line, field=field)
    return _text(record, field, path, line, required=False)


def _optional_text(record: dict[str, Any], field: str, path: Path, line: int) -> str | None:
    return None if record.get(field) is None else _text(record, field, path, line, required=False)


#: Optional text fields of a verdict record.
_VERDICT_TEXTS = ("note", "at", "prompt_hash", "rubric_hash", "model", "raw")


def read_verdicts(
    path: str | Path, *, per_order: bool = False, task_of: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, record)`` of a verdict file: JSONL, or TREC qrels for relevance grades.

    A record names an ``item_id`` (a faithfulness or pairwise verdict: ``verdict``, ``order``)
    or a ``query_id`` and ``doc_id`` (a relevance grade: ``relevance``); the ids are checked
    as every id is (:mod:`pooling.chars`). Optional texts (``note``, ``at``, ``prompt_hash``,
    ``rubric_hash``, ``model``, ``raw``) must be strings without NUL, ``at`` an ISO 8601 date
    or time; ``seconds`` and ``latency`` non-negative numbers, ``tokens_in`` and
    ``tokens_out`` non-negative integers. Whether a verdict fits its item is for the project
    to say; here a file may give one verdict per item (per item and ``order`` with
    ``per_order``, as a judge asked in both orders does; per item and task with ``task_of``,
    which names the task a record is for when one id carries verdicts of several tasks): the
    same verdict repeated is harmless, two different ones are refused.

    Raises:
        PoolingError: a malformed line, a missing or invalid id, a bad optional field, two
            different verdicts for one item, or no record at all; file, line and field named.
    """
    path = Path(path)
    records = read_records(path, "jsonl") if _is_jsonl(path) else _qrels_records(path)
    given: dict[tuple[Any, ...], tuple[int, Any, Any]] = {}
    for line, record in records:
        checked = _verdict(record, path, line)
        if checked.get("item_id") is not None:
            key: tuple[Any, ...] = (checked["item_id"], checked.get("order") if per_order else None,
                                    None if task_of is None else task_of(checked))
            field, value = "verdict", checked.get("verdict")
            said = value.strip().upper() if isinstance(value, str) else value
        else:
            key = (checked["query_id"], checked["doc_id"])
            field, value = "relevance", checked.get("relevance")
            said = value.strip() if isinstance(value, str) else value
            said = int(said) if isinstance(said, str) and said.isdigit() else said
        first, earlier, written = given.setdefault(key, (line, said, value))
        if earlier != said:
            raise PoolingError(
                f"two different verdicts for one item: {shown(value)} here, {shown(written)} on line {first}; "
                "a file gives one verdict per item",
                path=path, line=line, field=field,
            )
        yield line, checked
    if not given:
        raise PoolingError(_empty("verdicts", "jsonl"), path=path)


def _is_jsonl(path: Path) -> bool:
    if path.suffix.lower() in _JSONL_SUFFIXES:
        return True
    for _, line in read_lines(path):
        if line.strip():
            return line.lstrip().startswith("{")
    return True


def _qrels_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, fields in trec.read_columns(path, "query_id iteration doc_id relevance"):
        grade: object = int(fields[3]) if fields[3].lstrip("-").isdigit() else fields[3]
        yield line, {"query_id": fields[0], "doc_id": fields[2], "relevance": grade}


def _verdict(record: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    checked = dict(record)
    if record.get("item_id") is not None:
        checked["item_id"] = _identifier(record, "item_id", path, line)
    elif record.get("query_id") is None and record.get("doc_id") is None:
        raise PoolingError("missing; a record names an item_id, or a query_id and doc_id", path=path, line=line, field="item_id")
    else:
        checked["query_id"] = _identifier(record, "query_id", path, line)
        checked["doc_id"] = _identifier(record, "doc_id", path, line)
    for field in (*_VERDICT_TEXTS, "order"):
        checked[field] = _optional_text(record, field, path, line)
    if checked["at"] is not None:
        _check_date(checked["at"], path, line)
    for field in ("seconds", "latency"):
        value = record.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0):
            raise PoolingError(f"{shown(value)}: give a non-negative number", path=path, line=line, field=field)
    for field in ("tokens_in", "tokens_out"):
        value = record.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise PoolingError(f"{shown(value)}: give a non-negative integer", path=path, line=line, field=field)
    return checked


def _check_date(value: str, path: Path, line: int) -> None:
    try:
        datetime.fromisoformat(value.strip())
    except ValueError:
        raise PoolingError(
            f"{shown(value)} is not a date; give an ISO 8601 date or time such as 2024-05-01 or 2024-05-01T09:30:00Z",
            path=path, line=line, field="at",
        ) from None


# --- answers of a generating system ----------------------------------------------------------

#: Fields of an answer record, each with the names a file may give it under: goldpool's own
#: name first, then RAGAS's (``user_input``, ``retrieved_contexts``; before RAGAS 0.2
#: ``question``, ``contexts``, ``answer``, ``ground_truth``), so a RAGAS evaluation dataset reads
#: unchanged. Every other key of a record is kept as metadata.
ANSWER_FIELDS: dict[str, tuple[str, ...]] = {
    "answer_id": ("answer_id",),
    "query_id": ("query_id",),
    "question": ("question", "user_input"),
    "response": ("response", "answer"),
    "contexts": ("contexts", "retrieved_contexts"),
    "retrieved_ids": ("retrieved_ids",),
    "reference": ("reference", "ground_truth"),
    "claims": ("claims",),
}
_ANSWER_KEYS = frozenset({name for names in ANSWER_FIELDS.values() for name in names} | {"meta"})
_LIST_FIELDS = ("contexts", "retrieved_ids", "claims")
#: Columns that look like an answer's field but are not read as one: kept as metadata, and
#: named in a warning that says what would be read.
_NEAR_MISSES: dict[str, str] = {
    "ground_truths": "give the reference answer as one text, 'reference' (or 'ground_truth'), for it to be the "
                     "answer's reference",
    "retrieved_context_ids": "name it 'retrieved_ids' if it holds doc_ids of the project's corpus, best first",
    "retrieved_doc_ids": "name it 'retrieved_ids' if it holds doc_ids of the project's corpus, best first",
    "context": "give the contexts as a list of texts, 'contexts' (or 'retrieved_contexts')",
}
_FORMATS = "answers are one JSON object a line (JSONL), a CSV file with a header row, or Parquet"


def answers_format(path: str | Path) -> Literal["jsonl", "csv", "tsv", "parquet"]:
    """The format of an answers file, from its content whatever its name.

    Parquet if it starts with Parquet's magic bytes ``PAR1``; else JSONL if its first non-blank
    character is ``{`` (or it has none); else a table with a header row, TSV if the file is named ``.tsv`` or
    ``.tab`` and CSV otherwise. A file named ``.parquet`` must be Parquet.

    Raises:
        PoolingError: a ``.parquet`` file that is not Parquet; a JSON array.
    """
    path = Path(path)
    if first_bytes(path, 4) == b"PAR1":
        return "parquet"
    if _SUFFIXES.get(path.suffix.lower()) == "parquet":
        raise PoolingError("named .parquet but not a Parquet file (it does not start with PAR1); give the file its "
                           "right name", path=path)
    for number, line in read_lines(path):
        text = line.strip()
        if text:
            if text.startswith("{"):
                return "jsonl"
            if text.startswith("["):
                try:
                    _json_value(text)
                except RecursionError:
                    raise PoolingError(_TOO_DEEP, path=path, line=number) from None
                except json.JSONDecodeError:
                    pass
                raise PoolingError(f"a JSON array; {_FORMATS}", path=path, line=number)
            break
    else:
        return "jsonl"  # nothing but blank lines: refused as empty, in any format
    return "tsv" if _SUFFIXES.get(path.suffix.lower()) == "tsv" else "csv"


def read_answers(path: str | Path, *, warnings: list[str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, answer)`` of a file of a system's answers, validated: JSONL, CSV (or TSV)
    with a header row, or Parquet, told apart by :func:`answers_format`.

    An answer holds every key of :data:`ANSWER_FIELDS` (None when the record does not give
    it) and ``meta``, a dict of the record's other keys (merged into its own ``meta``
    object, if any), and ``fields``: the name the record gave each field under (for error
    messages). A record gives a ``question`` (or ``user_input``), a ``query_id``, or both;
    ``response`` (or ``answer``) is required and may be empty (an abstention). ``contexts``,
    ``retrieved_ids`` and ``claims`` are lists of strings; ids are checked as every id is
    (:mod:`pooling.chars`), and an ``answer_id`` may not hold ``#``, which separates it
    from the number of its claims (``ANSWER_ID#N``). An explicit ``answer_id`` given twice
    is refused. A field given under two of its names must have one value.

    In a CSV file every cell is text: an empty cell is a field not given (an empty
    ``response`` cell is an empty response), and a list is a JSON array or a Python list
    literal of strings, as RAGAS's ``to_csv`` and pandas write one (``['a', 'b']``), read
    without running anything. An unnamed first column (the index pandas writes) is dropped.

    ``warnings``, if given, receives one line per column that looks like an answer's field
    but is kept only as metadata (``Question``, ``ground_truths``...).

    Raises:
        PoolingError: malformed JSON, CSV or Parquet, a missing or invalid field, a field given
            under two names with different values, the same answer_id twice, or no record
            at all; file, line and field named.
    """
    path = Path(path)
    fmt = answers_format(path)
    seen: dict[str, int] = {}
    warned: set[str] = set()
    count = 0
    if fmt == "parquet":
        records = _parquet(path, lean=True)
    elif fmt == "jsonl":
        records = _jsonl(path)
    else:
        delimiter = "," if fmt == "csv" else "\t"
        _check_answer_header(path, delimiter)
        records = _delimited(path, delimiter)
    for line, record in records:
        if fmt in ("csv", "tsv"):
            record = _from_cells(record, path, line)
        answer = _answer(record, path, line)
        if warnings is not None:
            _warn(answer["meta"], line, warned, warnings)
        if answer["answer_id"] is not None:
            _check_unique(seen, answer["answer_id"], "answer_id", path, line)
        count += 1
        yield line, answer
    if not count:
        raise PoolingError(_empty("answers", fmt), path=path)


def _check_answer_header(path: Path, delimiter: str) -> None:
    """Refuse a table whose header row names no field of an answer: not an answers file."""
    for number, line in read_lines(path):
        if line.strip():
            header = {name.strip() for name in next(csv.reader([line], delimiter=delimiter), [])}
            if not _ANSWER_KEYS & header:
                raise PoolingError(f"the header names no field of an answer (question, user_input, query_id, response, "
                                   f"answer...); {_FORMATS}", path=path, line=number)
            return


def _from_cells(record: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    """A CSV row as a record: empty cells of the fields are not given (an empty response is
    ""), list cells read as lists, the pandas index column dropped."""
    record = {k: v for i, (k, v) in enumerate(record.items()) if i or k != ""}
    responded = any(name in record for name in ANSWER_FIELDS["response"])
    for field, names in ANSWER_FIELDS.items():
        for name in names:
            if record.get(name) == "":
                record[name] = None
            elif name in record and field in _LIST_FIELDS:
                record[name] = _list_cell(record[name], name, path, line)
    if responded and all(record.get(name) is None for name in ANSWER_FIELDS["response"]):
        record[ANSWER_FIELDS["response"][0]] = ""
    return record


_LIST_HINT = "give a list of texts: a JSON array [\"a\", \"b\"] or Python's ['a', 'b'], as pandas and RAGAS write it"


def _list_cell(cell: str, name: str, path: Path, line: int) -> list[Any]:
    """The list a CSV cell holds: a JSON array, or a Python list literal of strings (what
    ``str(list)`` writes), read from its syntax tree: nothing in the cell is ever run."""
    text = cell.strip()
    if not text.startswith("["):
        raise PoolingError(_LIST_HINT, path=path, line=line, field=name)
    try:
        value = _json_value(text)
    except RecursionError:
        raise PoolingError(_TOO_DEEP, path=path, line=line, field=name) from None
    except json.JSONDecodeError:
        value = _python_list(text, name, path, line)
    else:
        if not isinstance(value, list):
            raise PoolingError(_LIST_HINT, path=path, line=line, field=name)
    for i, item in enumerate(value):
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise PoolingError("holds a lone surrogate (\\ud800-\\udfff without its pair), which is not valid "
                                   "Unicode; fix or remove the escape", path=path, line=line, field=f"{name}[{i}]") from None
    return value


def _python_list(text: str, name: str, path: Path, line: int) -> list[Any]:
    import ast
    import io
    import tokenize

    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise PoolingError(_LIST_HINT, path=path, line=line, field=name) from None
    if not isinstance(tree.body, ast.List):
        raise PoolingError(_LIST_HINT, path=path, line=line, field=name)
    values: list[Any] = []
    for i, node in enumerate(tree.body.elts):
        if isinstance(node, ast.Constant):
            values.append(node.value)
            continue
        kind = ("an array" if isinstance(node, ast.List | ast.Tuple | ast.Set) else "an object" if isinstance(node, ast.Dict)
                else "Python code (which goldpool never runs)")
        raise PoolingError(f"must be a string, not {kind}", path=path, line=line, field=f"{name}[{i}]")
    try:
        strings = sum(token.type == tokenize.STRING for token in tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):  # pragma: no cover - ast.parse accepted the text
        strings = -1
    if strings != sum(isinstance(v, str) for v in values):
        raise PoolingError("two strings with no comma between them (NumPy prints an array so, and cuts a long one with "
                           "'...'); write the list with commas, as Python's list does", path=path, line=line, field=name)
    return values


def _warn(meta: dict[str, Any], line: int, warned: set[str], warnings: list[str]) -> None:
    for key in meta:
        if key in warned or not isinstance(key, str):
            continue
        canonical = key.strip().lower().replace("-", "_").replace(" ", "_")
        if canonical in _ANSWER_KEYS:
            hint = f"did you mean {canonical!r}? names are case-sensitive"
        elif canonical in _NEAR_MISSES:
            hint = _NEAR_MISSES[canonical]
        else:
            continue
        warned.add(key)
        warnings.append(f"column {shown(key)} (first at line {line}) is kept as metadata: {hint}")


def _aliased(record: dict[str, Any], field: str, path: Path, line: int) -> tuple[str, Any]:
    """The name a record gives ``field`` under and its value (None when absent); two names
    with different values are refused."""
    given = [(name, record[name]) for name in ANSWER_FIELDS[field] if record.get(name) is not None]
    if len(given) > 1 and given[0][1] != given[1][1]:
        raise PoolingError(f"differs from '{given[0][0]}' in the same record; give one of them",
                           path=path, line=line, field=given[1][0])
    return given[0] if given else (ANSWER_FIELDS[field][0], None)


def _text_list(value: Any, name: str, path: Path, line: int, *, ids: bool = False, blank: bool = True) -> list[str]:
    if not isinstance(value, list):
        raise PoolingError(f"must be a list of {'ids' if ids else 'texts'}, not {_json_kind(value)}",
                           path=path, line=line, field=name)
    seen: dict[str, int] = {}
    value = list(value)
    for i, text in enumerate(value):
        where = f"{name}[{i}]"
        if ids and isinstance(text, int) and not isinstance(text, bool):
            value[i] = text = str(text)  # a numeric doc_id, as the corpus readers take it
        if not isinstance(text, str):
            raise PoolingError(f"must be a string, not {_json_kind(text)}", path=path, line=line, field=where)
        if ids:
            if text == "":
                raise PoolingError("empty; give a doc_id of the corpus", path=path, line=line, field=where)
            check_id(text, path, line, where)
            first = seen.setdefault(text, i)
            if first != i:
                raise PoolingError(f"{shown(text)} is also {name}[{first}]; a ranking names each document once",
                                   path=path, line=line, field=where)
        else:
            check_text(text, path, line, where)
            if not blank and is_blank(text):
                raise PoolingError("empty; every claim needs non-blank text", path=path, line=line, field=where)
    return value


def _answer(record: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    answer: dict[str, Any] = {}
    fields: dict[str, str] = {}
    for field in ANSWER_FIELDS:
        fields[field], answer[field] = _aliased(record, field, path, line)
    for field in ("answer_id", "query_id"):
        if answer[field] is not None:
            answer[field] = _identifier({field: answer[field]}, field, path, line)
    if answer["answer_id"] is not None and "#" in answer["answer_id"]:
        raise PoolingError(f"{shown(answer['answer_id'])} holds '#', which separates an answer_id from its claim's "
                           "number (ANSWER_ID#N); choose another id", path=path, line=line, field="answer_id")
    if answer["question"] is not None:
        answer["question"] = _named_text(answer["question"], fields["question"], path, line, required=True)
    elif answer["query_id"] is None:
        raise PoolingError("missing; every answer needs a question (or user_input), or the query_id of a project query",
                           path=path, line=line, field="question")
    if answer["response"] is None:
        raise PoolingError("missing; give the response text (\"\" for an abstention)", path=path, line=line, field="response")
    answer["response"] = _named_text(answer["response"], fields["response"], path, line, required=False)
    if answer["reference"] is not None:
        answer["reference"] = _named_text(answer["reference"], fields["reference"], path, line, required=False)
    for field, ids, blank in (("contexts", False, True), ("retrieved_ids", True, True), ("claims", False, False)):
        if answer[field] is not None:
            answer[field] = _text_list(answer[field], fields[field], path, line, ids=ids, blank=blank)
    given = record.get("meta")
    if isinstance(given, str) and given.lstrip().startswith("{"):  # a CSV cell holding a JSON object
        try:
            given = _json_value(given)
        except (json.JSONDecodeError, RecursionError):
            pass
    meta = dict(given) if isinstance(given, dict) else {} if given is None else {"meta": given}  # never dropped
    meta.update((k, v) for k, v in record.items() if k not in _ANSWER_KEYS)
    answer["meta"] = meta
    answer["fields"] = fields
    return answer


def _named_text(value: Any, name: str, path: Path, line: int, *, required: bool) -> str:
    return _text({name: value}, name, path, line, required=required)

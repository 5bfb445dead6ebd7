"""Streaming, validating readers for verdict items and verdicts.

Verdict items are JSONL (faithfulness and pairwise items, :func:`read_items`); verdicts are
JSONL, or TREC qrels for relevance grades (:func:`read_verdicts`). Both read through
:mod:`pooling.readers`' primitives, so they accept the same encodings and syntax and refuse bad
input the same way: :class:`~pooling.PoolingError` naming the file, the line and the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from pooling import PoolingError, shown, trec
from pooling.chars import check_text
from pooling.lines import read_lines
from pooling.readers import (_SUFFIXES, _check_unique, _empty, _identifier, _json_kind,
                             _text, read_records)

__all__ = ["ITEM_FIELDS", "read_items", "read_verdicts"]


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

    A record names an ``item_id`` (a faithfulness or pairwise verdict: ``verdict``, ``order``),
    an ``answer_id`` and a ``nugget_id`` (whether the answer supports the nugget: ``verdict``),
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
        if checked.get("nugget_id") is not None:  # a nugget's support by an answer
            key = ("nugget", checked["answer_id"], checked["nugget_id"], checked.get("order") if per_order else None)
            field, value = "verdict", checked.get("verdict")
            said = value.strip().upper() if isinstance(value, str) else value
        elif checked.get("item_id") is not None:
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
    if record.get("nugget_id") is not None and record.get("item_id") is None:
        checked["answer_id"] = _identifier(record, "answer_id", path, line)
        checked["nugget_id"] = _identifier(record, "nugget_id", path, line)
    elif record.get("item_id") is not None:
        checked["item_id"] = _identifier(record, "item_id", path, line)
    elif record.get("query_id") is None and record.get("doc_id") is None:
        raise PoolingError("missing; a record names an item_id, an answer_id and nugget_id, or a query_id and doc_id",
                           path=path, line=line, field="item_id")
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

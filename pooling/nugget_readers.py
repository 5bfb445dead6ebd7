"""The streaming, validating reader of a nuggets file (:func:`read_nuggets`).

JSONL, one nugget a line: ``{"query_id", "text", "importance": "vital" | "okay", "nugget_id"?,
"doc_ids"?}`` (importance in any case; ``doc_ids`` the chunks the nugget came from). A nugget
without ``nugget_id`` is ``QUERY_ID/nK``, K its place among the file's nuggets of that query
(1, 2, ... in file order). It reads through :mod:`pooling.readers`' primitives, so it refuses bad
input as every reader does: :class:`~pooling.PoolingError` naming the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pooling import PoolingError, shown
from pooling.chars import check_id
from pooling.readers import (
    _check_unique,
    _empty,
    _identifier,
    _json_kind,
    _text,
    read_records,
)

__all__ = ["IMPORTANCES", "read_nuggets"]

#: How much a nugget matters (TREC 2024 RAG), as a file gives it.
IMPORTANCES = ("vital", "okay")


def read_nuggets(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, nugget)`` of a JSONL nuggets file, validated: ``nugget_id``, ``query_id``,
    ``text`` (stripped), ``importance`` (lower case) and ``doc_ids`` (a list, maybe empty).

    Raises:
        PoolingError: malformed JSON, a missing or invalid id, a blank text, an importance
            other than vital or okay, doc_ids not a list of ids, the same nugget_id twice (given
            or made), or no nugget at all; file, line and field named.
    """
    path = Path(path)
    seen: dict[str, int] = {}
    per_query: dict[str, int] = {}
    for line, record in read_records(path, "jsonl"):
        query_id = _identifier(record, "query_id", path, line)
        per_query[query_id] = per_query.get(query_id, 0) + 1
        given = record.get("nugget_id")
        nugget_id = f"{query_id}/n{per_query[query_id]}" if given is None else _identifier(record, "nugget_id", path, line)
        _check_unique(seen, nugget_id, "nugget_id", path, line)
        yield line, {"nugget_id": nugget_id, "query_id": query_id,
                     "text": _text(record, "text", path, line, required=True).strip(),
                     "importance": _importance(record, path, line), "doc_ids": _doc_ids(record, path, line)}
    if not seen:
        raise PoolingError(_empty("nuggets", "jsonl"), path=path)


def _importance(record: dict[str, Any], path: Path, line: int) -> str:
    value = record.get("importance")
    word = value.strip().lower() if isinstance(value, str) else None
    if word not in IMPORTANCES:
        raise PoolingError(f"{shown(value)}: give \"vital\" or \"okay\"", path=path, line=line, field="importance")
    return word


def _doc_ids(record: dict[str, Any], path: Path, line: int) -> list[str]:
    value = record.get("doc_ids")
    if value is None:
        return []
    if not isinstance(value, list):
        raise PoolingError(f"must be a list of doc_ids, not {_json_kind(value)}", path=path, line=line, field="doc_ids")
    out = []
    for i, doc in enumerate(value):
        if not isinstance(doc, str) or not doc:
            raise PoolingError(f"element {i} must be a non-empty string", path=path, line=line, field="doc_ids")
        out.append(check_id(doc, path, line, f"doc_ids[{i}]"))
    return out

"""TREC formats: ``<DOC>`` SGML corpora, ``<top>`` topics, and run files.

Runs are ranked the way trec_eval ranks them, not by their rank column: score descending,
ties broken by doc_id descending (byte order, as trec_eval's ``strcmp``). trec_eval keeps
scores as 32-bit floats, so two scores equal once rounded to float32 are a tie.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from pooling import PoolingError, shown
from pooling.chars import check_id
from pooling.lines import read_lines
from pooling.types import RunRow, ScoredDoc

_TAG = re.compile(r"<[^>]*>")
_DOCNO = re.compile(r"<DOCNO>(.*?)</DOCNO>", re.IGNORECASE | re.DOTALL)
_TITLE = re.compile(r"<(TITLE|HEADLINE|HEAD)>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
_TOPIC_FIELD = re.compile(r"<(num|title|desc|narr)>", re.IGNORECASE)
_TOPIC_CLOSE = re.compile(r"</(num|title|desc|narr)>", re.IGNORECASE)
_TOPIC_LABEL = re.compile(r"^\s*(Number|Topic|Description|Narrative)\s*:", re.IGNORECASE)


def _clean(markup: str) -> str:
    return " ".join(html.unescape(_TAG.sub(" ", markup)).split())


def _blocks(path: Path, tag: str) -> Iterator[tuple[int, str]]:
    """Yield ``(first_line, inner_text)`` of every ``<tag>...</tag>`` block, streaming."""
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    start, parts = 0, []
    for number, line in read_lines(path):
        stripped = line.strip()
        upper = stripped.upper()
        if start == 0:
            if not stripped:
                continue
            if not upper.startswith(open_tag.upper()):
                raise PoolingError(f"text outside a {open_tag} block", path=path, line=number)
            start, parts, line = number, [], line[line.upper().index(open_tag.upper()) + len(open_tag) :]
        elif upper.startswith(open_tag.upper()):
            raise PoolingError(f"{open_tag} block opened before line {start}'s was closed", path=path, line=number)
        end = line.upper().find(close_tag.upper())
        if end < 0:
            parts.append(line)
            continue
        parts.append(line[:end])
        if line[end + len(close_tag) :].strip():
            raise PoolingError(f"text after {close_tag} on the same line", path=path, line=number)
        yield start, "".join(parts)
        start = 0
    if start:
        raise PoolingError(f"{open_tag} block never closed with {close_tag}", path=path, line=start)


def read_documents(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Records (``doc_id``, ``title``, ``text``) of a TREC ``<DOC>`` file.

    The title is the first ``<TITLE>``, ``<HEADLINE>`` or ``<HEAD>`` element; the text is the
    rest with tags removed, entities decoded and whitespace collapsed.
    """
    for line, inner in _blocks(path, "DOC"):
        docno = _DOCNO.search(inner)
        doc_id = docno.group(1).strip() if docno else None
        body = _DOCNO.sub(" ", inner)
        title_match = _TITLE.search(body)
        title = _clean(title_match.group(2)) if title_match else ""
        if title_match:
            body = body[: title_match.start()] + " " + body[title_match.end() :]
        yield line, {"doc_id": doc_id, "title": title, "text": _clean(body)}


def read_topics(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Records (``query_id``, ``text`` from ``<title>``, ``desc``/``narr`` as meta) of a topics file.

    Handles both closed (``<num>1</num>``) and classic unclosed (``<num> Number: 301``) tags.
    """
    for line, inner in _blocks(path, "top"):
        pieces = _TOPIC_FIELD.split(_TOPIC_CLOSE.sub(" ", inner))
        fields: dict[str, str] = {}
        for name, value in zip(pieces[1::2], pieces[2::2]):
            fields[name.lower()] = " ".join(_TOPIC_LABEL.sub("", html.unescape(value)).split())
        record: dict[str, Any] = {"query_id": fields.get("num") or None, "text": fields.get("title")}
        record.update({k: v for k, v in fields.items() if k in ("desc", "narr") and v})
        yield line, record


def read_columns(path: str | Path, columns: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line, fields)`` of a whitespace-separated file whose lines hold ``columns``.

    ``columns`` names the fields (``"query_id Q0 doc_id rank score tag"``); blank lines are
    skipped; a line with another number of fields is refused, naming file and line.
    """
    expected = len(columns.split())
    for number, line in read_lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != expected:
            raise PoolingError(f"expected {expected} fields ({columns}), found {len(fields)}", path=path, line=number)
        yield number, fields


def read_run(path: str | Path) -> Iterator[RunRow]:
    """Yield the rows of a TREC run file (``query_id Q0 doc_id rank score tag``), validated.

    The rank column is read but not used (see the module docstring).

    Raises:
        PoolingError: wrong number of fields, a rank or score that is not a number, an id
            with an invisible character, the same (query_id, doc_id) twice, or no line at
            all; the message names file, line and field.
    """
    path = Path(path)
    seen: dict[tuple[str, str], int] = {}
    for number, fields in read_columns(path, "query_id Q0 doc_id rank score tag"):
        query_id, _, doc_id, rank, score_text, _ = fields
        check_id(query_id, path, number, "query_id")
        check_id(doc_id, path, number, "doc_id")
        try:
            int(rank)
        except ValueError:
            raise PoolingError(f"{shown(rank)} is not an integer", path=path, line=number, field="rank") from None
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise PoolingError(f"{shown(score_text)} is not a finite number", path=path, line=number, field="score")
        first = seen.setdefault((query_id, doc_id), number)
        if first != number:
            raise PoolingError(
                f"doc_id {shown(doc_id)} listed twice for query {shown(query_id)} (first at line {first})",
                path=path,
                line=number,
                field="doc_id",
            )
        yield RunRow(query_id=query_id, doc_id=doc_id, score=score, line=number)
    if not seen:
        raise PoolingError("empty: no run lines in the file; an empty run is not recorded", path=path)


def rank_run(rows: Iterable[RunRow]) -> dict[str, list[ScoredDoc]]:
    """Rank a run per query as trec_eval does: score descending, then doc_id descending.

    Scores are compared as float32, as trec_eval stores them (``float sim``); the ranked
    documents keep the run's own score.

    >>> rows = [RunRow("q", "a", 1.0, 1), RunRow("q", "b", 1.0, 2), RunRow("q", "c", 2.0, 3)]
    >>> [(d.doc_id, d.rank) for d in rank_run(rows)["q"]]
    [('c', 1), ('b', 2), ('a', 3)]
    """
    by_query: dict[str, list[tuple[float, str, float]]] = {}
    # Scores beyond float32's range become +-inf, a tie among themselves, as in trec_eval.
    with np.errstate(over="ignore"):
        for row in rows:
            key = float(np.float32(row.score))
            by_query.setdefault(row.query_id, []).append((key, row.doc_id, row.score))
    ranked: dict[str, list[ScoredDoc]] = {}
    for query_id, triples in by_query.items():
        # Descending on both keys: reversing the ascending (float32 score, doc_id) order.
        # doc_ids are unique per query (read_run checks), so the raw score never decides.
        triples.sort(reverse=True)
        ranked[query_id] = [
            ScoredDoc(query_id, doc_id, rank, score)
            for rank, (_, doc_id, score) in enumerate(triples, start=1)
        ]
    return ranked

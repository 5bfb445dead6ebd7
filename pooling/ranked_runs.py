"""TREC runs for scoring, ranked as trec_eval ranks them (qrels: :mod:`pooling.qrels`).

``read_ranked_run`` is the fast path of :func:`pooling.trec.read_run` + :func:`rank_run` for
scoring millions of lines: the file is parsed by pandas' C reader and ranked with numpy
(score as float32 descending, then doc_id descending, as trec_eval), and only when something is
wrong does the line-by-line reader run to name the file, the line and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pooling import PoolingError
from pooling.trec import rank_run, read_run


def _located_error(path: Path) -> PoolingError:
    """Run the validating line reader to find and name the first bad line."""
    try:
        for _ in read_run(path):
            pass
    except PoolingError as exc:
        return exc
    return PoolingError("cannot read the run file", path=path)


def read_ranked_run(path: str | Path) -> dict[str, list[str]]:
    """A TREC run (``query_id Q0 doc_id rank score tag``) as query_id -> doc_ids, ranked.

    Ranked as :func:`pooling.trec.rank_run` ranks (trec_eval's order), from the same checks
    as :func:`pooling.trec.read_run`.

    Raises:
        PoolingError: the first bad line, naming file, line and field.
    """
    path = Path(path)
    if not path.is_file():
        raise PoolingError("no such run file", path=path)
    try:
        frame = _parse(path)
    except PoolingError:
        raise
    except Exception:  # noqa: BLE001 - any parser failure: let the line reader name the line
        raise _located_error(path) from None
    if frame is None or not len(frame.scores) or not _printable(frame):
        # An empty or blank file, or an id with a character the fast parsers do not check: the
        # line reader refuses what import-run refuses, naming file, line and field.
        return {q: [d.doc_id for d in docs] for q, docs in rank_run(read_run(path)).items()}
    return _rank(frame)


def _printable(c: _Columns) -> bool:
    """Whether every distinct id is printable (no NUL, zero-width or other invisible character),
    so that :func:`pooling.chars.check_id` would accept each without looking at it again."""
    return all(str(n).isprintable() for n in c.query_names) and all(str(n).isprintable() for n in c.doc_names)


_COLUMNS = ["query_id", "q0", "doc_id", "rank", "score", "tag", "extra"]
_TYPES = {"query_id": str, "q0": str, "doc_id": str, "rank": "int64", "score": "float64", "tag": str, "extra": str}


@dataclass(frozen=True, slots=True)
class _Columns:
    """A parsed run: integer codes for query_id and doc_id, the names they stand for, scores."""

    query_codes: Any
    query_names: Any
    doc_codes: Any
    doc_names: Any
    scores: Any
    path: Path


def _single_spaced(path: Path) -> bool:
    """Whether the first line separates its fields by single spaces (the fast parser's case)."""
    with path.open("rb") as handle:
        first = handle.readline().rstrip(b"\r\n")
    return b"\t" not in first and b"  " not in first and not first.startswith(b" ")


def _arrow_columns(path: Path) -> _Columns:
    """Single-space separated runs through pyarrow's multi-threaded CSV reader (no quoting)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as csv

    types = {"query_id": pa.string(), "q0": pa.string(), "doc_id": pa.string(), "rank": pa.int64(),
             "score": pa.float64(), "tag": pa.string()}
    table = csv.read_csv(
        path,
        read_options=csv.ReadOptions(column_names=list(types)),
        parse_options=csv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False),
        convert_options=csv.ConvertOptions(column_types=types, strings_can_be_null=False, quoted_strings_can_be_null=False),
    )
    if pc.any(pc.equal(table["tag"], "")).as_py():
        raise ValueError("empty field")
    docs = pc.dictionary_encode(table["doc_id"]).combine_chunks()
    queries = pc.dictionary_encode(table["query_id"]).combine_chunks()
    return _Columns(
        queries.indices.to_numpy(zero_copy_only=False), np.asarray(queries.dictionary.to_pylist(), dtype=object),
        docs.indices.to_numpy(zero_copy_only=False), np.asarray(docs.dictionary.to_pylist(), dtype=object),
        table["score"].to_numpy(), path,
    )


def _pandas_columns(path: Path) -> _Columns:
    """Any whitespace between fields (tabs, several spaces), through pandas' C reader."""
    import numpy as np
    import pandas as pd

    frame = pd.read_csv(
        path, sep=r"\s+", header=None, names=_COLUMNS, dtype=_TYPES, engine="c",
        skip_blank_lines=True, na_filter=False, on_bad_lines="error",
    )
    if ((frame["extra"] != "") | (frame["tag"] == "")).any():
        raise _located_error(path)
    doc_codes, doc_names = pd.factorize(frame["doc_id"], sort=False)
    query_codes, query_names = pd.factorize(frame["query_id"], sort=False)
    return _Columns(query_codes, np.asarray(query_names, dtype=object), doc_codes,
                    np.asarray(doc_names, dtype=object), frame["score"].to_numpy(dtype=np.float64), path)


def _parse(path: Path) -> _Columns | None:
    """The run's columns; None for an empty file; raise on bad lines."""
    import numpy as np

    if path.stat().st_size == 0:
        return None
    columns = None
    if _single_spaced(path):
        try:
            columns = _arrow_columns(path)
        except Exception:  # noqa: BLE001 - a tab, a double space or a bad line: the general reader decides
            columns = None
    if columns is None:
        columns = _pandas_columns(path)
    if not np.isfinite(columns.scores).all():
        raise _located_error(path)
    return columns


def _descending_bits(score):
    """uint32 keys whose ascending order is float32 ``score`` descending (-0.0 equal to 0.0)."""
    import numpy as np

    with np.errstate(over="ignore"):
        single = score.astype(np.float32) + np.float32(0.0)  # -0.0 + 0.0 is +0.0
    bits = single.view(np.uint32)
    sortable = np.where(bits & np.uint32(0x80000000), ~bits, bits | np.uint32(0x80000000))
    return np.uint32(0xFFFFFFFF) - sortable


def _rank(c: _Columns) -> dict[str, list[str]]:
    """Per query, doc_ids by float32 score descending, then doc_id descending (byte order).

    One integer sort on (query, score) does the work; only rows whose (query, float32 score)
    is shared are then put in doc_id order, within their tie.
    """
    import numpy as np

    pair = np.sort((c.query_codes.astype(np.uint64) << np.uint64(32)) | c.doc_codes.astype(np.uint64))
    if bool((pair[1:] == pair[:-1]).any()):  # a doc_id twice for one query: let the line reader name it
        raise _located_error(c.path)
    key = (c.query_codes.astype(np.uint64) << np.uint64(32)) | _descending_bits(c.scores).astype(np.uint64)
    # Rows equal on the key are put in doc_id order below, so the sort need not be stable.
    order = np.arange(len(key)) if bool(np.all(key[1:] >= key[:-1])) else np.argsort(key)
    sorted_key = key[order]
    same = sorted_key[1:] == sorted_key[:-1]
    if same.any():
        order = _break_ties(order, same, c.doc_names, c.doc_codes)
    q_sorted = c.query_codes[order]
    docs = c.doc_names[c.doc_codes[order]]
    bounds = np.flatnonzero(q_sorted[1:] != q_sorted[:-1]) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(order)]))
    return {str(c.query_names[q_sorted[s]]): docs[s:e].tolist() for s, e in zip(starts, ends, strict=True)}


def _break_ties(order, same, doc_names, doc_codes):
    """Within each run of equal (query, score) keys, order the rows by doc_id descending."""
    import numpy as np
    import pandas as pd

    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    positions = np.flatnonzero(tied)
    group = np.cumsum(np.concatenate(([True], ~same)))[positions]  # tie id of each tied position
    rows = order[positions]
    codes, _ = pd.factorize(pd.Series(doc_names[doc_codes[rows]]), sort=True)  # code order = code-point = byte order
    within = np.lexsort((-codes, group))
    order = order.copy()
    order[positions] = rows[within]
    return order

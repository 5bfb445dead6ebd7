"""The two files run scoring reads: TREC qrels and TREC runs, ranked as trec_eval ranks them.

``read_ranked_run`` is the fast path of :func:`pooling.trec.read_run` + :func:`rank_run` for
scoring millions of lines: the file is parsed by pandas' C reader and ranked with numpy
(score as float32 descending, then doc_id descending, as trec_eval), and only when something is
wrong does the line-by-line reader run to name the file, the line and the field.
"""

from __future__ import annotations

from pathlib import Path

from pooling import PoolingError
from pooling.readers import read_lines
from pooling.trec import rank_run, read_run


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """TREC qrels (``query_id iteration doc_id relevance``) as query_id -> doc_id -> relevance.

    Raises:
        PoolingError: a missing file, a line without 4 fields, a relevance that is not an
            integer, or the same (query_id, doc_id) twice; the message names file, line, field.
    """
    path = Path(path)
    if not path.is_file():
        raise PoolingError("no such qrels file", path=path)
    qrels: dict[str, dict[str, int]] = {}
    for number, line in read_lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise PoolingError(
                f"expected 4 fields (query_id iteration doc_id relevance), found {len(fields)}", path=path, line=number
            )
        query_id, _, doc_id, grade = fields
        try:
            relevance = int(grade)
        except ValueError:
            raise PoolingError(f"{grade!r} is not an integer", path=path, line=number, field="relevance") from None
        docs = qrels.setdefault(query_id, {})
        if doc_id in docs:
            raise PoolingError(
                f"doc_id {doc_id!r} judged twice for query {query_id!r}", path=path, line=number, field="doc_id"
            )
        docs[doc_id] = relevance
    if not qrels:
        raise PoolingError("no judgments in the qrels file", path=path)
    return qrels


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
    if frame is None:
        return {q: [d.doc_id for d in docs] for q, docs in rank_run(read_run(path)).items()}
    frame.attrs["path"] = str(path)
    return _rank(frame)


def _parse(path: Path):
    """The run as (query_id, doc_id, score) columns; None for an empty file; raise on bad lines."""
    import numpy as np
    import pandas as pd

    if path.stat().st_size == 0:
        return None
    frame = pd.read_csv(
        path, sep=r"\s+", header=None, names=["query_id", "q0", "doc_id", "rank", "score", "tag", "extra"],
        dtype={"query_id": str, "q0": str, "doc_id": str, "rank": "int64", "score": "float64",
                                 "tag": str, "extra": str},
        engine="c", skip_blank_lines=True, na_filter=False, on_bad_lines="error",
    )
    scores = frame["score"].to_numpy()
    if ((frame["extra"] != "") | (frame["tag"] == "")).any() or not np.isfinite(scores).all():
        raise _located_error(path)
    return frame


def _rank(frame) -> dict[str, list[str]]:
    """Per query, doc_ids by float32 score descending, then doc_id descending (byte order)."""
    import numpy as np
    import pandas as pd

    with np.errstate(over="ignore"):
        score = frame["score"].to_numpy().astype(np.float32).astype(np.float64)
    # sort=True: codes follow the doc_ids' code-point order, which is UTF-8 byte order (strcmp).
    doc_codes, doc_names = pd.factorize(frame["doc_id"], sort=True)
    query_codes, query_names = pd.factorize(frame["query_id"], sort=False)
    pair = query_codes.astype(np.int64) * max(len(doc_names), 1) + doc_codes
    if pd.Series(pair).duplicated().any():
        raise _located_error(Path(frame.attrs["path"]))
    # lexsort sorts by the last key first; negating makes score and doc_id descending.
    order = np.lexsort((-doc_codes, -score, query_codes))
    q_sorted = query_codes[order]
    docs = np.asarray(doc_names, dtype=object)[doc_codes[order]]
    bounds = np.flatnonzero(np.diff(q_sorted)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(order)]))
    return {str(query_names[q_sorted[s]]): docs[s:e].tolist() for s, e in zip(starts, ends, strict=True)}

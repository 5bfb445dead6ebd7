"""Label files (pooling.qrels): the same lines, encodings and syntax as the corpus readers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pooling import PoolingError
from pooling.qrels import join_labels, read_labels
from pooling.readers import read_queries

BOM = b"\xef\xbb\xbf"


def test_a_bom_csv_reads_as_labels_and_as_queries_alike(tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_bytes(BOM + b"query_id,doc_id,relevance\nq1,d1,2\nq1,d2,0.5\n")
    queries = tmp_path / "queries.csv"
    queries.write_bytes(BOM + b"query_id,text\nq1,what\n")
    assert read_labels(labels).labels == {("q1", "d1"): 2, ("q1", "d2"): 0.5}
    assert [q.query_id for q in read_queries(queries)] == ["q1"]


def test_formats_follow_the_file_name(tmp_path: Path) -> None:
    (tmp_path / "a.tsv").write_text("query_id\tdoc_id\trelevance\nq1\td1\t3\n")
    (tmp_path / "a.ndjson").write_text(json.dumps({"query_id": "q1", "doc_id": "d1", "relevance": 1}) + "\n")
    (tmp_path / "a.qrels").write_text("q1 0 d1 2\n")
    assert [read_labels(tmp_path / n).labels for n in ("a.tsv", "a.ndjson", "a.qrels")] == [
        {("q1", "d1"): 3}, {("q1", "d1"): 1}, {("q1", "d1"): 2}
    ]


def test_problems_name_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q1", "doc_id": "d1", "relevance": 1}\n{"query_id": "q1", "doc_id": "d2", "relevance": "x"}\n')
    with pytest.raises(PoolingError) as caught:
        read_labels(bad)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(bad), 2, "relevance")


def test_join_with_a_ceiling_keeps_the_items_all_three_label(tmp_path: Path) -> None:
    for name, text in [("a", "q1 0 d1 3\nq1 0 d2 0\nq2 0 d1 1\n"), ("b", "q1 0 d1 2\nq1 0 d2 0\nq3 0 d1 1\n"),
                       ("c", "q1 0 d2 1\n")]:
        (tmp_path / name).write_text(text)
    a, b, c = (read_labels(tmp_path / n) for n in "abc")
    joined = join_labels(a, b, c)
    # A and B share q1/d1 and q1/d2 (one of each file alone); C narrows to q1/d2.
    assert (joined.n_joined, joined.only_a, joined.only_b) == (2, 1, 1)
    assert (joined.keys, joined.a, joined.b, joined.c, joined.groups) == ((("q1", "d2"),), (0,), (0,), (1,), ("q1",))
    (tmp_path / "d").write_text("q2 0 d9 1\n")
    with pytest.raises(PoolingError, match="shares no key with both"):
        join_labels(a, c, read_labels(tmp_path / "d"))
    with pytest.raises(PoolingError, match="share no key: nothing to compare"):
        join_labels(c, read_labels(tmp_path / "d"))

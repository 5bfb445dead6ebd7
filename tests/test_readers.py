"""Readers: every format yields the same records; every kind of bad input names file, line, field."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pooling import PoolingError
from pooling.readers import read_corpus, read_queries
from pooling.trec import rank_run, read_run
from pooling.types import RunRow

DOCS = [
    {"doc_id": "d1", "title": "Lists", "text": "Lists are mutable sequences.", "section": "tutorial"},
    {"doc_id": "d2", "title": "", "text": "Tuples are immutable, \"usually\" heterogeneous.", "section": "ref"},
]


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _as_tuples(path: Path) -> list[tuple]:
    return [(d.doc_id, d.title, d.text, dict(d.meta)) for d in read_corpus(path)]


def test_jsonl_csv_tsv_parquet_give_the_same_documents(tmp_path: Path) -> None:
    expected = [(r["doc_id"], r["title"], r["text"], {"section": r["section"]}) for r in DOCS]
    jsonl = _write_jsonl(tmp_path / "c.jsonl", DOCS)
    csv_path = tmp_path / "c.csv"
    csv_path.write_text(
        'doc_id,title,text,section\nd1,Lists,Lists are mutable sequences.,tutorial\n'
        'd2,,"Tuples are immutable, ""usually"" heterogeneous.",ref\n',
        encoding="utf-8",
    )
    tsv = tmp_path / "c.tsv"
    tsv.write_text(
        'doc_id\ttitle\ttext\tsection\nd1\tLists\tLists are mutable sequences.\ttutorial\n'
        'd2\t\t"Tuples are immutable, ""usually"" heterogeneous."\tref\n',
        encoding="utf-8",
    )
    parquet = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(DOCS), parquet)
    for path in (jsonl, csv_path, tsv, parquet):
        assert _as_tuples(path) == expected, path.name


def test_trec_sgml_documents(tmp_path: Path) -> None:
    path = tmp_path / "docs.trec"
    path.write_text(
        "<DOC>\n<DOCNO> FT-1 </DOCNO>\n<HEADLINE>Rates &amp; bonds</HEADLINE>\n<TEXT>\nRates rose\n"
        "sharply.\n</TEXT>\n</DOC>\n\n<DOC>\n<DOCNO>FT-2</DOCNO>\nplain body\n</DOC>\n",
        encoding="utf-8",
    )
    docs = list(read_corpus(path))
    assert [(d.doc_id, d.title, d.text, d.line) for d in docs] == [
        ("FT-1", "Rates & bonds", "Rates rose sharply.", 1),
        ("FT-2", "", "plain body", 10),
    ]


def test_trec_topics_closed_and_classic(tmp_path: Path) -> None:
    path = tmp_path / "topics.txt"
    path.write_text(
        "<top>\n<num>1</num><title>\nMICROWAVE MEASUREMENT\n</title>\n</top>\n"
        "<top>\n<num> Number: 301\n<title> International Organized Crime\n"
        "<desc> Description:\nIdentify organizations.\n<narr> Narrative:\nA relevant document...\n</top>\n",
        encoding="utf-8",
    )
    queries = list(read_queries(path))
    assert [(q.query_id, q.text, dict(q.meta), q.line) for q in queries] == [
        ("1", "MICROWAVE MEASUREMENT", {}, 1),
        ("301", "International Organized Crime", {"desc": "Identify organizations.", "narr": "A relevant document..."}, 6),
    ]


def test_queries_jsonl_with_integer_ids(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "q.jsonl", [{"query_id": 7, "text": "sort a list", "lang": "en"}])
    assert [(q.query_id, q.text, dict(q.meta)) for q in read_queries(path)] == [("7", "sort a list", {"lang": "en"})]


BAD_CORPORA = [
    # (file content, line, field or None, words the message must contain)
    ('{"doc_id": "a", "text": "x"}\n{"doc_id": "b", "text": \n', 2, None, "malformed JSON"),
    ('{"doc_id": "a", "text": "x"}\n{"text": "no id"}\n', 2, "doc_id", "missing"),
    ('{"doc_id": "a", "text": "x"}\n\n{"doc_id": "a", "text": "y"}\n', 3, "doc_id", "duplicate doc_id 'a' (first at line 1)"),
    ('{"doc_id": "a", "text": "   "}\n', 1, "text", "empty"),
    ('{"doc_id": "a b", "text": "x"}\n', 1, "doc_id", "whitespace"),
    ('{"doc_id": "a", "text": 3}\n', 1, "text", "must be a string"),
    ('["a", "x"]\n', 1, None, "one JSON object per line"),
]


@pytest.mark.parametrize(("content", "line", "field", "words"), BAD_CORPORA)
def test_bad_corpus_names_file_line_and_field(tmp_path: Path, content: str, line: int, field: str | None, words: str) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PoolingError) as caught:
        list(read_corpus(path))
    error = caught.value
    assert (error.path, error.line, error.field) == (str(path), line, field)
    where = f"{path}, line {line}" + (f", field '{field}'" if field else "")
    assert str(error).startswith(where + ": ")
    assert words in str(error)


def test_bad_encoding_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    before = b'{"doc_id": "b", "text": "caf'
    path.write_bytes(b'{"doc_id": "a", "text": "ok"}\n' + before + b'\xe9"}\n')
    byte = len(before) + 1  # the Latin-1 e-acute right after "caf"
    with pytest.raises(PoolingError, match=rf"corpus\.jsonl, line 2: not valid UTF-8 \(byte {byte} of the line\)"):
        list(read_corpus(path))


def test_csv_row_with_wrong_field_count(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text('doc_id,text\na,"multi\nline text"\nb,x,extra\n', encoding="utf-8")
    with pytest.raises(PoolingError, match=r"c\.csv, line 4: 3 fields where the header has 2"):
        list(read_corpus(path))


def test_unclosed_trec_doc(tmp_path: Path) -> None:
    path = tmp_path / "d.trec"
    path.write_text("<DOC>\n<DOCNO>1</DOCNO>\ntext\n</DOC>\n<DOC>\n<DOCNO>2</DOCNO>\n", encoding="utf-8")
    with pytest.raises(PoolingError, match=r"d\.trec, line 5: <DOC> block never closed"):
        list(read_corpus(path))


def test_reader_streams_records_before_a_later_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"doc_id": "a", "text": "x"}\n{"doc_id": "b", "text": "y"}\nnot json\n', encoding="utf-8")
    docs = read_corpus(path)
    assert next(docs).doc_id == "a"
    assert next(docs).doc_id == "b"
    with pytest.raises(PoolingError, match="line 3"):
        next(docs)


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [
        ("q1 Q0 d1 1 2.5", None, "expected 6 fields"),
        ("q1 Q0 d1 one 2.5 tag", "rank", "not an integer"),
        ("q1 Q0 d1 1 nan tag", "score", "not a finite number"),
        ("q1 Q0 d0 1 2.5 tag", "doc_id", "listed twice for query 'q1' (first at line 1)"),
    ],
)
def test_bad_run_line(tmp_path: Path, line: str, field: str | None, words: str) -> None:
    path = tmp_path / "run.trec"
    path.write_text(f"q1 Q0 d0 1 3.0 tag\n{line}\n", encoding="utf-8")
    with pytest.raises(PoolingError) as caught:
        list(read_run(path))
    assert (caught.value.line, caught.value.field) == (2, field)
    assert words in str(caught.value)


def test_rank_run_orders_like_trec_eval() -> None:
    """Cross-check against trec_eval itself (pytrec_eval): with tied scores the larger doc_id
    comes first, whatever the rank column says."""
    import pytrec_eval

    rows = [RunRow("q", "a", 1.0, 1), RunRow("q", "b", 1.0, 2), RunRow("q", "c", 0.5, 3)]
    ranked = rank_run(rows)["q"]
    assert [(d.doc_id, d.rank) for d in ranked] == [("b", 1), ("a", 2), ("c", 3)]
    for relevant in ("a", "b"):
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {relevant: 1}}, {"P_1"})
        p_at_1 = evaluator.evaluate({"q": {r.doc_id: r.score for r in rows}})["q"]["P_1"]
        assert p_at_1 == (1.0 if ranked[0].doc_id == relevant else 0.0)


def _trec_eval_ranks(scores: dict[str, float]) -> dict[str, int]:
    """Each doc_id's rank in trec_eval's own order: 1 / recip_rank with that doc alone relevant."""
    import pytrec_eval

    ranks = {}
    for doc_id in scores:
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {doc_id: 1}}, {"recip_rank"})
        ranks[doc_id] = round(1 / evaluator.evaluate({"q": scores})["q"]["recip_rank"])
    return ranks


@pytest.mark.parametrize(
    ("scores", "order"),
    [
        # Equal in float32 (trec_eval's ``float sim``), unequal as float64: a tie, b first.
        ({"a": 0.834567891, "b": 0.834567890, "c": 0.5}, ["b", "a", "c"]),
        # Apart even in float32: the score decides.
        ({"a": 0.8345679, "b": 0.8345670, "c": 0.5}, ["a", "b", "c"]),
        # Beyond float32's range both become inf: a tie again.
        ({"a": 2e300, "b": 1e300, "c": -1e300}, ["b", "a", "c"]),
    ],
)
def test_rank_run_compares_scores_in_float32_like_trec_eval(scores: dict[str, float], order: list[str]) -> None:
    rows = [RunRow("q", doc_id, score, line) for line, (doc_id, score) in enumerate(scores.items(), start=1)]
    ranked = rank_run(rows)["q"]
    assert [d.doc_id for d in ranked] == order
    assert {d.doc_id: d.rank for d in ranked} == _trec_eval_ranks(scores)
    # The run's own score is kept, only the order uses float32.
    assert {d.doc_id: d.score for d in ranked} == scores


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ('{"doc_id": "d1", "text": "caf\\ud800 au lait"}', "text"),
        ('{"doc_id": "d1", "title": "\\udfff", "text": "ok"}', "title"),
        ('{"doc_id": "d1", "text": "ok", "tags": ["a", "\\ud83d"]}', "tags"),
        ('{"doc_id": "d1", "text": "ok", "\\ud800": 1}', "\\ud800"),
    ],
)
def test_a_lone_surrogate_escape_names_file_line_and_field(tmp_path: Path, record: str, field: str) -> None:
    # A whole pair (\ud83d\ude00, an emoji) is fine; one half alone cannot be written as UTF-8.
    path = tmp_path / "c.jsonl"
    path.write_text('{"doc_id": "d0", "text": "\\ud83d\\ude00"}\n' + record + "\n", encoding="utf-8")
    with pytest.raises(PoolingError) as caught:
        list(read_corpus(path))
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), 2, field)
    assert str(caught.value) == (
        f"{path}, line 2, field '{field}': holds a lone surrogate escape (\\ud800-\\udfff without its pair), "
        "which is not valid Unicode; fix or remove the escape"
    )
    queries = tmp_path / "q.jsonl"
    queries.write_text(record.replace("doc_id", "query_id") + "\n", encoding="utf-8")
    with pytest.raises(PoolingError, match=r"q\.jsonl, line 1, field '.+': holds a lone surrogate"):
        list(read_queries(queries))


def test_unknown_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "corpus.txt"
    path.write_text("doc_id text\n", encoding="utf-8")
    with pytest.raises(PoolingError, match=r"corpus\.txt: unknown format; name the file \.jsonl"):
        list(read_corpus(path))


def test_a_header_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("doc_id,text,text\nd1,a,b\n", encoding="utf-8")
    with pytest.raises(PoolingError) as error:
        list(read_corpus(path))
    assert str(error.value) == (f"{path}, line 1: the header names column 'text' twice (columns 2 and 3); give each "
                                "column its own name")

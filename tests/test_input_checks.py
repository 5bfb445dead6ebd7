"""Input that used to be accepted and must not be: invisible characters in ids, NUL in text,
empty files, an unterminated CSV quote; each refused naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pooling import PoolingError
from pooling.chars import is_blank
from pooling.readers import read_corpus, read_queries
from pooling.trec import read_run


def _refused(path: Path, read=read_corpus) -> PoolingError:
    with pytest.raises(PoolingError) as caught:
        list(read(path))
    return caught.value


def _where(error: PoolingError) -> tuple[str | None, int | None, str | None]:
    return error.path, error.line, error.field


@pytest.mark.parametrize(
    ("name", "content", "line", "field", "words"),
    [
        ("c.csv", "doc_id,text\na,ok\nb\x00c,text\n", 3, "doc_id", "'b\\x00c' holds, at character 2, U+0000 NUL"),
        ("c.tsv", "doc_id\ttext\na\tok\nb\tte\x00xt\n", 3, "text", "holds U+0000 NUL at character 3"),
        ("c.csv", "doc_id,title,text\na,ti\x00tle,ok\n", 2, "title", "holds U+0000 NUL at character 3"),
        ("c.jsonl", '{"doc_id": "\\u0000", "text": "x"}\n', 1, "doc_id", "'\\x00' is only U+0000 NUL, an invisible character"),
        ("c.jsonl", '{"doc_id": "a", "text": "x"}\n{"doc_id": "\\u200b", "text": "x"}\n', 2, "doc_id",
         "'\\u200b' is only U+200B ZERO WIDTH SPACE, an invisible character; ids may hold only visible characters"),
        ("c.jsonl", '{"doc_id": "d1\\u200d", "text": "x"}\n', 1, "doc_id", "ends with U+200D ZERO WIDTH JOINER"),
        ("c.jsonl", '{"doc_id": "\\ufeffd1", "text": "x"}\n', 1, "doc_id", "starts with U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        ("c.jsonl", '{"doc_id": "d\\u00ad1", "text": "x"}\n', 1, "doc_id", "U+00AD SOFT HYPHEN"),
        ("c.jsonl", '{"doc_id": "d1\\u2029", "text": "x"}\n', 1, "doc_id", "contains whitespace (U+2029 PARAGRAPH SEPARATOR)"),
        ("c.jsonl", '{"doc_id": "d1", "text": "a\\u0000b"}\n', 1, "text", "holds U+0000 NUL at character 2"),
        ("c.jsonl", '{"doc_id": "d1", "text": "\\u200b \\u2060"}\n', 1, "text", "empty; every record needs non-blank text"),
        ("c.jsonl", '{"doc_id": "d1", "title": "t"}\n', 1, "text", "missing; every record needs a text field"),
        ("c.jsonl", '{"doc_id": "d1", "text": 3}\n', 1, "text", "must be a string, not a number"),
        ("c.jsonl", '{"doc_id": {"a": 1}, "text": "x"}\n', 1, "doc_id", "must be a string, not an object"),
    ],
)
def test_invisible_characters_and_nul_are_refused(tmp_path: Path, name: str, content: str, line: int, field: str, words: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    error = _refused(path)
    assert _where(error) == (str(path), line, field)
    assert str(error).startswith(f"{path}, line {line}, field '{field}': ")
    assert words in str(error)


def test_invisible_characters_inside_text_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"doc_id": "d1", "text": "co\u00adoperate \U0001f469\u200d\U0001f4bb\tend"}) + "\n")
    assert [d.text for d in read_corpus(path)] == ["co\u00adoperate \U0001f469\u200d\U0001f4bb\tend"]
    assert is_blank("\u200b\u00a0\n") and not is_blank("\u200ba")


def test_query_ids_are_checked_alike(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text("query_id,text\nq1\u200b,what\n", encoding="utf-8")
    error = _refused(path, read_queries)
    assert _where(error) == (str(path), 2, "query_id")
    assert "ends with U+200B ZERO WIDTH SPACE" in str(error)


@pytest.mark.parametrize(
    ("name", "content", "read", "words"),
    [
        ("c.jsonl", "", read_corpus, "empty: no documents in the file; nothing was imported"),
        ("c.jsonl", "\n  \n", read_corpus, "empty: no documents in the file; nothing was imported"),
        ("c.csv", "doc_id,text\n", read_corpus, "empty: no documents in the file (a CSV/TSV file needs rows below its header); nothing was imported"),
        ("q.jsonl", "", read_queries, "empty: no queries in the file; nothing was imported"),
        ("q.tsv", "query_id\ttext\n", read_queries, "empty: no queries in the file (a CSV/TSV file needs rows below its header); nothing was imported"),
        ("topics.txt", "\n", read_queries, None),
        ("run.txt", "\n\n", read_run, "empty: no run lines in the file; an empty run is not recorded"),
    ],
)
def test_empty_files_are_refused(tmp_path: Path, name: str, content: str, read, words: str | None) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    error = _refused(path, read)
    assert error.path == str(path)
    if words is not None:
        assert str(error) == f"{path}: {words}"


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("q1 Q0 d\x001 1 2.0 run\n", ("doc_id", "'d\\x001' holds, at character 2, U+0000 NUL")),
        ("q1\u200b Q0 d1 1 2.0 run\n", ("query_id", "'q1\\u200b' ends with U+200B ZERO WIDTH SPACE")),
    ],
)
def test_run_ids_with_invisible_characters(tmp_path: Path, line: str, words: tuple[str, str]) -> None:
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d2 1 3.0 run\n" + line, encoding="utf-8")
    error = _refused(path, read_run)
    assert _where(error) == (str(path), 2, words[0])
    assert words[1] in str(error)


def test_an_unterminated_csv_quote_is_reported_where_it_opens(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    rows = ['doc_id,text', 'a,"ok ""quoted"" text"', 'b,"multi', 'line"', 'c,x', 'd,"never closed', 'e,more', 'f,text', '']
    path.write_text("\n".join(rows), encoding="utf-8")
    error = _refused(path)
    assert _where(error) == (str(path), 6, None)
    assert str(error) == f'{path}, line 6: a quoted field opens here and is never closed (a missing " before the end of the file)'


def test_an_unterminated_quote_on_a_later_line_of_a_record(tmp_path: Path) -> None:
    path = tmp_path / "c.tsv"
    path.write_text('doc_id\ttitle\ttext\na\t"two\nlines"\t"opened here\nb\tx\ty\n', encoding="utf-8")
    assert _refused(path).line == 3


def test_label_file_keys_refuse_invisible_characters_but_allow_inner_spaces(tmp_path: Path) -> None:
    from pooling.qrels import read_labels

    ok = tmp_path / "ok.jsonl"
    ok.write_text(json.dumps({"question": "what is a list", "doc_id": "d1", "relevance": 1}) + "\n")
    assert read_labels(ok, keys=("question", "doc_id")).labels == {("what is a list", "d1"): 1}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(ok.read_text() + json.dumps({"question": "q\u200b", "doc_id": "d1", "relevance": 1}) + "\n")
    with pytest.raises(PoolingError) as caught:
        read_labels(bad, keys=("question", "doc_id"))
    assert _where(caught.value) == (str(bad), 2, "question")
    assert "ends with U+200B ZERO WIDTH SPACE" in str(caught.value)
    trailing = tmp_path / "trailing.csv"
    trailing.write_text("query_id,doc_id,relevance\nq1 ,d1,2\n")
    with pytest.raises(PoolingError, match=r"trailing\.csv, line 2, field 'query_id': 'q1 ' contains whitespace"):
        read_labels(trailing)


def _read_labels(path: Path):
    from pooling.qrels import read_labels

    return [read_labels(path)]


LONG = "d" * 1_000_000
CUT = "'ddddddddddddddddddddddddddd...dddddddddddddddddddddd\\u200b' (1000001 characters)"


@pytest.mark.parametrize(
    ("name", "content", "read", "words"),
    [
        ("c.jsonl", json.dumps({"doc_id": LONG + "\u200b", "text": "x"}) + "\n", read_corpus,
         f"line 1, field 'doc_id': {CUT} ends with U+200B ZERO WIDTH SPACE, an invisible character; ids may hold only visible characters"),
        ("q.tsv", f"query_id\ttext\n{LONG}\u200b\tx\n", read_queries,
         f"line 2, field 'query_id': {CUT} ends with U+200B ZERO WIDTH SPACE, an invisible character; ids may hold only visible characters"),
        ("run.txt", f"q1 Q0 d1 1 {LONG}\u200b run\n", read_run,
         f"line 1, field 'score': {CUT} is not a finite number"),
        ("qrels.txt", f"q1 0 d1 {LONG}\u200b\n", _read_labels,
         f"line 1, field 'relevance': {CUT} is not a number"),
    ],
)
def test_a_value_quoted_in_an_error_is_cut_to_a_readable_length(tmp_path: Path, name: str, content: str, read, words: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert str(_refused(path, read)) == f"{path}, {words}"


# --- nesting depth and line length: every reader's one-line refusal -------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


def _read_with(reader: str):
    from pooling import answer_readers, qrels, readers, verdict_readers

    return {
        "corpus": readers.read_corpus,
        "queries": readers.read_queries,
        "items": verdict_readers.read_items,
        "verdicts": verdict_readers.read_verdicts,
        "answers": answer_readers.read_answers,
        "labels": lambda p: [qrels.read_labels(p)],
        "raters": lambda p: [qrels.read_raters(p)],
    }[reader]


READERS = ("corpus", "queries", "items", "verdicts", "answers", "labels", "raters")


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("deep", [DEEP, '{"doc_id": "d1", "text": "x", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}"])
def test_a_line_nested_100000_deep_is_one_error_naming_file_and_line(tmp_path: Path, reader: str, deep: str) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text("\n" + deep + "\n", encoding="utf-8")  # line 1 blank: every reader reaches line 2
    error = _refused(path, _read_with(reader))
    assert _where(error) == (str(path), 2, None)
    assert str(error) == f"{path}, line 2: nested deeper than 100 levels of arrays and objects; flatten the record"


def test_nesting_up_to_the_cap_is_read(tmp_path: Path) -> None:
    meta = "[" * 99 + "]" * 99  # with the record's own object, 100 levels
    path = tmp_path / "c.jsonl"
    path.write_text('{"doc_id": "d1", "text": "x", "deep": ' + meta + "}\n", encoding="utf-8")
    assert [d.doc_id for d in read_corpus(path)] == ["d1"]
    path.write_text('{"doc_id": "d1", "text": "x", "deep": [' + meta + "]}\n", encoding="utf-8")
    assert str(_refused(path)) == f"{path}, line 1: nested deeper than 100 levels of arrays and objects; flatten the record"


@pytest.mark.parametrize("name", ["c.jsonl", "c.csv", "c.tsv", "topics.trec"])
def test_a_line_longer_than_the_cap_is_refused_naming_file_line_and_cap(tmp_path: Path, monkeypatch, name: str) -> None:
    from pooling import lines

    monkeypatch.setattr(lines, "LINE_CAP", 1000, raising=False)
    path = tmp_path / name
    first = {"c.jsonl": '{"doc_id": "d1", "text": "ok"}\n', "c.csv": "doc_id,text\n", "c.tsv": "doc_id\ttext\n",
             "topics.trec": "<top>\n"}[name]
    path.write_text(first + "x" * 5000 + "\n", encoding="utf-8")
    read = read_queries if name.startswith("topics") else read_corpus
    error = _refused(path, read)
    assert str(error) == (f"{path}, line 2: longer than 1,000 bytes, the cap of one line (1,000 bytes read without "
                          "a line end); is this the right file?")


def test_a_link_to_dev_zero_is_refused_at_the_cap_without_growing(tmp_path: Path, monkeypatch) -> None:
    import resource

    from pooling import lines

    monkeypatch.setattr(lines, "LINE_CAP", 1 << 20, raising=False)
    for name in ("zero.jsonl", "zero.csv", "zero.txt"):
        link = tmp_path / name
        link.symlink_to("/dev/zero")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for read in (read_corpus, read_run):
            error = _refused(link, read)
            assert "the cap of one line" in str(error) or "not valid UTF-8" in str(error), str(error)
            assert error.line == 1
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 * 1024  # KiB: under 64 MiB


def test_the_default_line_cap_is_64_mib() -> None:
    from pooling import lines

    assert lines.LINE_CAP == 64 * 2**20


def test_a_csv_record_longer_than_the_cap_is_refused_where_it_starts(tmp_path: Path, monkeypatch) -> None:
    from pooling import lines

    monkeypatch.setattr(lines, "LINE_CAP", 1000, raising=False)
    path = tmp_path / "c.csv"
    path.write_text('doc_id,text\nd1,ok\nd2,"' + "many lines\n" * 200 + '"\n', encoding="utf-8")
    error = _refused(path)
    assert str(error) == (f"{path}, line 3: a record longer than 1,000 characters, the cap of one record (a quoted field "
                          "that spans lines counts whole); is a quote left open?")

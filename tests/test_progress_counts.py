"""The Progress page's counts are kept as the store writes (migration m23_progress_counts): after
any mix of labels, changed labels, imports, verdicts, pool growth and run removal they equal the
counts computed from the tables themselves, and the page reads them instead of every label."""

from __future__ import annotations

import random
import sqlite3
import statistics

import pytest

from app_fixtures import Project, add_verdict_items, open_page
from labels_fixtures import write_jsonl
from labeler.judges.verdict_files import import_verdicts
from labeler.store import access, connect, labels, now, review
from labeler.store.access import OWNER
from labeler.store.migrations import SCHEMA_VERSION, migrate
from labeler.ui.pages import progress

# The definitions, straight from the append-only tables (what the kept counts must equal).
_RELEVANCE_PAIRS = "SELECT DISTINCT query_id || char(0) || doc_id AS item, annotator_id FROM judgments"
_VERDICT_PAIRS = ("SELECT DISTINCT h.item_id AS item, h.annotator_id, i.kind FROM human_verdicts h "
                  "JOIN verdict_items i ON i.item_id = h.item_id")


def _definitional(db) -> tuple[set, set, set, set]:
    per_person = {("relevance", a, n) for a, n in db.execute(
        f"SELECT annotator_id, count(*) FROM ({_RELEVANCE_PAIRS}) GROUP BY annotator_id")}
    per_person |= {(k, a, n) for k, a, n in db.execute(
        f"SELECT kind, annotator_id, count(*) FROM ({_VERDICT_PAIRS}) GROUP BY kind, annotator_id")}
    overlap = {("relevance", p, n) for p, n in db.execute(
        f"SELECT people, count(*) FROM (SELECT count(*) AS people FROM ({_RELEVANCE_PAIRS}) GROUP BY item) GROUP BY people")}
    overlap |= {(k, p, n) for k, p, n in db.execute(
        f"SELECT kind, people, count(*) FROM (SELECT kind, count(*) AS people FROM ({_VERDICT_PAIRS}) GROUP BY item) "
        "GROUP BY kind, people")}
    queries = set(db.execute(
        "SELECT p.query_id, count(*), (SELECT count(DISTINCT doc_id) FROM judgments j WHERE j.query_id = p.query_id), "
        "(SELECT count(DISTINCT doc_id) FROM assignments a WHERE a.query_id = p.query_id AND a.shown_order > 0) "
        "FROM pool p GROUP BY p.query_id"))
    handed = set(db.execute("SELECT annotator_id, count(*) FROM assignments WHERE shown_order > 0 GROUP BY annotator_id"))
    return per_person, overlap, queries, handed


def _kept(db) -> tuple[set, set, set, set]:
    return (set(db.execute("SELECT task, annotator_id, n FROM label_counts")),
            set(db.execute("SELECT task, people, n FROM overlap_counts WHERE n > 0")),
            set(db.execute("SELECT query_id, pool, labelled, assigned FROM query_counts WHERE pool > 0")),
            set(db.execute("SELECT annotator_id, n FROM assignment_counts WHERE n > 0")))


def _mixed_work(project: Project, seed: int) -> list[int]:
    """Labels by four people (some changed, some imported), verdicts, a new query's pool, the
    removal of unlabelled pool entries; returns the annotator ids."""
    rng = random.Random(seed)
    add_verdict_items(project.path, n_faithfulness=6, n_pairwise=6, judge=False)
    with connect(project.path) as db:
        people = [project.admin_id, project.annotator_id]
        people += [access.add_annotator(db, name)[0].id for name in ("cy", "dee")]
        items = [tuple(r) for r in db.execute("SELECT query_id, doc_id FROM pool")]
        verdict_items = [tuple(r) for r in db.execute("SELECT item_id, kind FROM verdict_items")]
        for _ in range(60):
            q, d = rng.choice(items)
            db.execute("INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, note, at, seconds) "
                       "VALUES (?, ?, ?, ?, '', ?, ?)", [q, d, rng.choice(people), rng.randrange(4), now(),
                                                         rng.choice([None, 2.0, 3.5, 7.0])])
        # Hand-outs: made, released (shown_order negated) and taken back, deleted.
        for k in range(80):
            q, d = rng.choice(items)
            who, op = rng.choice(people), rng.randrange(4)
            if op < 2:
                db.execute("INSERT OR IGNORE INTO assignments (query_id, doc_id, annotator_id, shown_order, assigned_at) "
                           "VALUES (?, ?, ?, ?, ?)", [q, d, who, rng.choice([k + 1, k + 1, -(k + 1)]), now()])
            elif op == 2:
                db.execute("UPDATE assignments SET shown_order = -shown_order WHERE query_id = ? AND doc_id = ? "
                           "AND annotator_id = ?", [q, d, who])
            else:
                db.execute("DELETE FROM assignments WHERE query_id = ? AND doc_id = ? AND annotator_id = ?", [q, d, who])
        for _ in range(40):
            item_id, kind = rng.choice(verdict_items)
            verdict, order = ("SUPPORTED", None) if kind == "faithfulness" else ("A", "AB")
            db.execute("INSERT INTO human_verdicts (item_id, annotator_id, verdict, shown_order, at) "
                       "VALUES (?, ?, ?, ?, ?)", [item_id, rng.choice(people), verdict, order, now()])
        # A new query with a pool of its own, and the removal of an unlabelled entry.
        db.execute("INSERT INTO queries (query_id, text, meta, content_hash) VALUES ('q9', 'ninth', '{}', 'h9')")
        for n in range(1, 4):
            db.execute("INSERT INTO pool (query_id, doc_id, sources, priority, position, added_at, build_id) "
                       "VALUES ('q9', ?, '{}', 0.1, ?, ?, 1)", [f"q1-d{n}", n, now()])
        unlabelled = db.execute("SELECT query_id, doc_id FROM pool p WHERE NOT EXISTS "
                                "(SELECT 1 FROM judgments j WHERE j.query_id = p.query_id AND j.doc_id = p.doc_id)"
                                " LIMIT 2").fetchall()
        for q, d in unlabelled:
            db.execute("DELETE FROM pool WHERE query_id = ? AND doc_id = ?", [q, d])
        db.conn.commit()
    # Imports take the same path through the triggers as the app's labels.
    tmp = project.path.parent
    relevance = [{"query_id": q, "doc_id": d, "relevance": 1} for q, d in rng.sample(items, 5)]
    with connect(project.path) as db:
        import_verdicts(db, write_jsonl(tmp / f"cy-{seed}.jsonl", relevance), annotator="cy", caller=OWNER)
    return people


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_kept_counts_equal_the_tables_after_mixed_work(project: Project, seed: int) -> None:
    _mixed_work(project, seed)
    with connect(project.path) as db:
        assert _kept(db) == _definitional(db)


@pytest.mark.parametrize("overlap_k", [2, 3])
def test_the_report_equals_its_definition(project: Project, overlap_k: int) -> None:
    people = _mixed_work(project, 7)
    with connect(project.path) as db:
        labels.set_settings(db, {"overlap_k": overlap_k}, caller=OWNER)
        report = review.progress_report(db, caller=OWNER)
        by_task = {t.task: t for t in report.tasks}
        for task, pairs in (("relevance", _RELEVANCE_PAIRS), ("faithfulness", _VERDICT_PAIRS + " WHERE kind = 'faithfulness'"),
                            ("pairwise", _VERDICT_PAIRS + " WHERE kind = 'pairwise'")):
            labelled, overlap = db.execute(
                f"SELECT count(*), coalesce(sum(n >= ?), 0) FROM (SELECT count(*) AS n FROM ({pairs}) GROUP BY item)",
                [overlap_k]).fetchone()
            assert (by_task[task].labelled, by_task[task].overlap_done) == (labelled, overlap)
        assert by_task["relevance"].items == db.execute("SELECT count(*) FROM pool").fetchone()[0]
        done = dict(db.execute("SELECT query_id, count(DISTINCT doc_id) FROM judgments GROUP BY query_id"))
        sizes = db.execute("SELECT p.query_id, count(*) FROM pool p JOIN queries q ON q.query_id = p.query_id "
                           "GROUP BY p.query_id ORDER BY min(q.rowid)").fetchall()
        assert [(q.query_id, q.done, q.pool_size) for q in report.queries] == [(q, done.get(q, 0), n) for q, n in sizes]
        assigned = dict(db.execute("SELECT query_id, count(DISTINCT doc_id) FROM assignments WHERE shown_order > 0 "
                                   "GROUP BY query_id"))
        assert [q.assigned for q in report.queries] == [assigned.get(q, 0) for q, _ in sizes]
        assert sum(assigned.values()) > 0
        handed = dict(db.execute("SELECT annotator_id, count(*) FROM assignments WHERE shown_order > 0 GROUP BY annotator_id"))
        assert {a.annotator_id: a.assigned for a in report.annotators} == {p: handed.get(p, 0) for p in people}


def test_the_median_and_rate_come_from_the_index_of_timed_labels(project: Project) -> None:
    rows = {project.admin_id: [4.0, 1.0, 9.0, 2.0], project.annotator_id: [5.0, 3.0, 8.0]}
    with connect(project.path) as db:
        items = [tuple(r) for r in db.execute("SELECT query_id, doc_id FROM pool ORDER BY query_id, doc_id")]
        for annotator_id, seconds in rows.items():
            for (q, d), s in zip(items, seconds, strict=False):
                db.execute("INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, note, at, seconds) "
                           "VALUES (?, ?, ?, 1, '', ?, ?)", [q, d, annotator_id, now(), s])
            # An untimed (imported) label does not enter the median.
            db.execute("INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, note, at, seconds) "
                       "VALUES (?, ?, ?, 1, '', ?, NULL)", [*items[-1], annotator_id, now()])
        db.conn.commit()
        report = {a.annotator_id: a for a in review.progress_report(db, caller=OWNER).annotators}
        plan = " ".join(r[-1] for r in db.execute(f"EXPLAIN QUERY PLAN SELECT seconds {review._TIMED} ORDER BY seconds "
                                                   "LIMIT 2 OFFSET 1", [project.admin_id]))
    assert report[project.admin_id].median_seconds == 3.0  # (2 + 4) / 2
    assert report[project.annotator_id].median_seconds == 5.0
    assert report[project.admin_id].labels_per_hour == pytest.approx(3600 * 4 / 16)
    assert report[project.annotator_id].labels_per_hour == pytest.approx(3600 * 3 / 16)
    for annotator_id, seconds in rows.items():
        assert report[annotator_id].median_seconds == statistics.median(seconds)
    assert "judgments_timed" in plan and "TEMP B-TREE" not in plan


def test_a_project_made_before_the_counts_gets_them_counted(project: Project) -> None:
    """A project at schema 22 with labels already: the step counts what is there."""
    _mixed_work(project, 5)
    conn = sqlite3.connect(project.path)
    for name in ("judgments_progress", "human_verdicts_progress", "pool_progress", "pool_unprogress",
                 "assignments_progress", "assignments_unprogress", "assignments_reprogress"):
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("DROP INDEX judgments_timed")
    for name in ("label_counts", "overlap_counts", "query_counts", "assignment_counts"):
        conn.execute(f"DROP TABLE {name}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.commit()
    # Work done under the old schema is not counted by any trigger.
    conn.execute("INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, note, at) "
                 "VALUES ('q2', 'q2-d5', ?, 3, '', 'now')", [project.annotator_id])
    conn.commit()
    assert migrate(conn) == 1
    conn.commit()
    conn.close()
    with connect(project.path) as db:
        assert _kept(db) == _definitional(db)
        assert db.execute("SELECT labelled FROM query_counts WHERE query_id = 'q2'").fetchone()[0] >= 1


def test_a_large_project_draws_the_label_reading_sections_on_request(project: Project, monkeypatch) -> None:
    _mixed_work(project, 4)
    small = open_page(project.path, "progress_page", project.admin_token)
    assert not small.exception and not small.toggle
    assert [s.value for s in small.subheader][-2:] == ["Relevant found", "Agreement on the overlap"]
    monkeypatch.setattr(progress, "ON_REQUEST", 10)
    large = open_page(project.path, "progress_page", project.admin_token)
    assert not large.exception
    assert [t.label for t in large.toggle] == ["Estimate the relevant found per labelled query",
                                               "Compute the agreement on the overlap"]
    assert [s.value for s in large.subheader][-2:] == ["Relevant found", "Agreement on the overlap"]
    # Nothing from the sections until asked; asked, they show what the small project shows.
    assert len(large.dataframe) == len(small.dataframe) - 1
    shown = lambda at: [t.value for t in at.text] + [i.value for i in at.info]  # noqa: E731
    assert shown(small) and not shown(large)
    large.toggle[1].set_value(True).run()
    assert not large.exception
    assert large.dataframe[-1].value.equals(small.dataframe[-1].value)
    large.toggle[0].set_value(True).run()
    assert not large.exception and shown(large) == shown(small)

"""The current row per (item, person): one view per append-only table, and its migration.

The views are checked against every way the current row was once read in SQL (the row with
the highest id joined back, the bare column next to ``max(id)``, a correlated subquery, and
``ORDER BY id DESC LIMIT 1`` per key), on a project with history: several rows per item and
person, judge verdicts with and without an order, relevance judge verdicts without an item.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from labeler.retrieval import scheduling
from labeler.store import SCHEMA_VERSION, connect
from labeler.store import versions as store_versions
from labeler.store import access, labels, review, verdict_queue, verdicts
from labeler.store.vocabulary import OWNER
from labeler.store.migrations import MIGRATIONS
from labeler.store.migrations.m12_current_rows import SQL as _M_CURRENT_ROWS
from labels_fixtures import make_project

VIEWS = ("current_judgments", "current_adjudications", "current_human_verdicts", "current_judge_verdicts")

# Each table's key (the item and the person) and its columns.
KEYS = {
    "judgments": ("query_id", "doc_id", "annotator_id"),
    "adjudications": ("query_id", "doc_id"),
    "human_verdicts": ("item_id", "annotator_id"),
    "judge_verdicts": ("judge", "task", "item_id", "query_id", "doc_id", "shown_order"),
}
VIEW_OF = dict(zip(KEYS, VIEWS, strict=True))


def _history(db, rng: random.Random) -> None:
    """Several rows per (item, person) in every append-only table, in shuffled order."""
    ids = [access.add_annotator(db, name, role=role)[0].id for name, role in (("ada", "annotator"), ("bo", "annotator"), ("cy", "admin"))]
    pool = [tuple(r) for r in db.execute("SELECT query_id, doc_id FROM pool ORDER BY query_id, doc_id")]
    at = "2026-12-01T10:00:00.000000+00:00"
    conn = db.conn
    rows = [(q, d, a, rng.randrange(4), f"n{k}") for q, d in pool for a in ids if rng.random() < 0.6
            for k in range(1 + rng.randrange(4))]
    rng.shuffle(rows)
    conn.executemany("INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, note, at) VALUES (?, ?, ?, ?, ?, ?)",
                     [(*r, at) for r in rows])
    adj = [(q, d, rng.choice(ids), rng.randrange(4)) for q, d in pool[::3] for _ in range(1 + rng.randrange(3))]
    rng.shuffle(adj)
    conn.executemany("INSERT INTO adjudications (query_id, doc_id, annotator_id, relevance, at) VALUES (?, ?, ?, ?, ?)",
                     [(*r, at) for r in adj])
    items = [(f"f{n}", "faithfulness") for n in range(8)] + [(f"p{n}", "pairwise") for n in range(8)]
    conn.executemany("INSERT INTO verdict_items (item_id, kind, question, contexts, response, response_a, response_b, "
                     "content_hash, added_at) VALUES (?, ?, 'q', '[\"c\"]', 'r', 'ra', 'rb', ?, ?)",
                     [(i, k, i, at) for i, k in items])
    human = []
    for item_id, kind in items:
        for a in ids:
            for _ in range(rng.randrange(4)):
                verdict = rng.choice(("SUPPORTED", "UNSUPPORTED") if kind == "faithfulness" else ("A", "B", "TIE"))
                human.append((item_id, a, verdict, rng.choice(("AB", "BA")) if kind == "pairwise" else None))
    rng.shuffle(human)
    conn.executemany("INSERT INTO human_verdicts (item_id, annotator_id, verdict, shown_order, at) VALUES (?, ?, ?, ?, ?)",
                     [(*r, at) for r in human])
    judged = []
    for judge in ("j1", "j2"):
        for item_id, kind in items:
            for order in ((None, "AB", "BA") if kind == "pairwise" else (None,)):
                for _ in range(rng.randrange(3)):
                    verdict = rng.choice(("SUPPORTED", "UNSUPPORTED", None) if kind == "faithfulness" else ("A", "B", "TIE", None))
                    judged.append((judge, kind, item_id, None, None, order, verdict, f"h{rng.randrange(2)}"))
        for q, d in pool:
            for _ in range(rng.randrange(3)):
                judged.append((judge, "relevance", None, q, d, None, rng.choice(("0", "1", "2", "3", None)), "h0"))
    rng.shuffle(judged)
    conn.executemany("INSERT INTO judge_verdicts (judge, task, item_id, query_id, doc_id, shown_order, verdict, prompt_hash, at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [(*r, at) for r in judged])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory):
    db = make_project(tmp_path_factory.mktemp("current") / "p.db", n_queries=4, per_query=10)
    _history(db, random.Random(17))
    yield db
    db.close()


def _old_variants(table: str) -> dict[str, str]:
    """The four ways the current rows of ``table`` were read before the views (all columns)."""
    key = KEYS[table]
    group = ", ".join(key)
    same = " AND ".join(f"k.{c} IS t.{c}" for c in key)
    return {
        "max(id) joined back": f"SELECT t.* FROM {table} t JOIN (SELECT max(id) AS id FROM {table} GROUP BY {group}) m ON m.id = t.id",
        "bare column next to max(id)": f"SELECT *, max(id) FROM {table} GROUP BY {group}",
        "correlated subquery": f"SELECT t.* FROM {table} t WHERE t.id = (SELECT max(k.id) FROM {table} k WHERE {same})",
        "ORDER BY id DESC LIMIT 1": "",  # per key, below
    }


def _columns(db, name: str) -> list[str]:
    return [r[1] for r in db.execute(f"PRAGMA table_info({name})")]


@pytest.mark.parametrize("table", list(KEYS))
def test_each_view_holds_what_every_old_query_held(project, table: str) -> None:
    columns = _columns(project, table)
    # A column added to a table is added to its view too (the migration re-creates the view).
    assert _columns(project, VIEW_OF[table]) == columns, f"{VIEW_OF[table]} lacks columns of {table}"
    view = sorted(project.execute(f"SELECT * FROM {VIEW_OF[table]}").fetchall(), key=repr)
    total = project.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    keys = project.execute(f"SELECT DISTINCT {', '.join(KEYS[table])} FROM {table}").fetchall()
    assert total > len(keys) > 10  # the project has history: more rows than (item, person)
    assert len(view) == len(keys)
    for name, sql in _old_variants(table).items():
        if sql:
            rows = [tuple(r)[: len(columns)] for r in project.execute(sql)]
        else:
            where = " AND ".join(f"{c} IS ?" for c in KEYS[table])
            rows = [tuple(project.execute(f"SELECT * FROM {table} WHERE {where} ORDER BY id DESC LIMIT 1", list(k)).fetchone())
                    for k in keys]
        assert sorted(rows, key=repr) == view, name


@pytest.mark.parametrize("table", list(KEYS))
def test_a_view_read_for_one_key_gives_that_keys_current_row(project, table: str) -> None:
    """A reader that names one item and person (the store's point reads) gets its latest row."""
    key = KEYS[table]
    where = " AND ".join(f"{c} IS ?" for c in key)
    for values in project.execute(f"SELECT DISTINCT {', '.join(key)} FROM {table}").fetchall():
        latest = project.execute(f"SELECT * FROM {table} WHERE {where} ORDER BY id DESC LIMIT 1", list(values)).fetchall()
        assert project.execute(f"SELECT * FROM {VIEW_OF[table]} WHERE {where}", list(values)).fetchall() == latest


def test_the_store_reads_current_rows_through_the_views(project) -> None:
    owner = OWNER
    latest = {(r[1], r[2], r[3]): r for r in project.execute("SELECT * FROM current_judgments")}
    got = labels.latest_judgments(project, caller=owner)
    names = dict(project.execute("SELECT id, name FROM annotators").fetchall())
    assert {(j.query_id, j.doc_id, j.annotator): (j.relevance, j.note) for j in got} == {
        (q, d, names[a]): (r[4], r[5]) for (q, d, a), r in latest.items()
    }
    assert [(x.query_id, x.doc_id, x.relevance) for x in store_versions.current_labels(project, caller=owner)] == [
        (j.query_id, j.doc_id, j.relevance) for j in got
    ]
    final = {(r[1], r[2]): r[4] for r in project.execute("SELECT * FROM current_adjudications")}
    assert store_versions.current_adjudications(project, caller=owner) == final
    assert {(a.query_id, a.doc_id): a.relevance for a in review.adjudications(project, caller=owner)} == final
    human = {(r[1], names[r[2]]): r[3] for r in project.execute("SELECT * FROM current_human_verdicts")}
    assert {(v.item_id, v.annotator): v.verdict for v in verdicts.latest_human_verdicts(project, caller=owner)} == human
    judge = {(r[2], r[3], r[4], r[5], r[8]): r[9] for r in project.execute("SELECT * FROM current_judge_verdicts WHERE judge = 'j1'")}
    assert {(v.task, v.item_id, v.query_id, v.doc_id, v.shown_order): v.verdict
            for v in verdicts.latest_judge_verdicts(project, "j1", caller=owner)} == judge


def test_an_item_shows_its_annotators_latest_label_and_verdict(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=1, per_query=4, batch_size=4)
    ada, _ = access.add_annotator(db, "ada")
    item = scheduling.next_item(db, ada.id)
    for grade in (3, 0, 2):
        labels.record_judgment(db, ada.id, item.query_id, item.doc_id, grade, 1.0, note=f"graded {grade}")
    shown = labels.get_item(db, ada.id, item.query_id, item.doc_id)
    assert (shown.relevance, shown.note) == (2, "graded 2")
    labels.set_settings(db, {"tasks": "faithfulness"}, caller=OWNER)
    db.conn.execute("INSERT INTO verdict_items (item_id, kind, question, contexts, response, content_hash, added_at) "
                    "VALUES ('f1', 'faithfulness', 'q', '[\"c\"]', 'r', 'h', 'now')")
    card = verdict_queue.next_card(db, ada.id, "faithfulness")
    for verdict in ("UNSUPPORTED", "SUPPORTED"):
        verdict_queue.record_verdict(db, ada.id, card.item_id, verdict, 1.0, note=verdict.lower())
    again = verdict_queue.get_card(db, ada.id, card.item_id)
    assert (again.verdict, again.note) == ("SUPPORTED", "supported")
    assert verdicts.own_verdicts(db, ada.id) == {"f1": ("SUPPORTED", None, "supported")}


# --- migration -------------------------------------------------------------------------------------


def _objects(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()


def test_a_project_from_before_the_views_gets_them_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    before = MIGRATIONS.index(_M_CURRENT_ROWS)
    with sqlite3.connect(path) as conn:  # a project made by the release before the views
        for script in MIGRATIONS[:before]:
            conn.executescript(script)
        conn.execute(f"PRAGMA user_version={before}")
        conn.execute("INSERT INTO annotators (id, name, role, token_salt, token_hash, created_at) VALUES (1, 'ada', 'annotator', '', '', 'now')")
        conn.execute("INSERT INTO queries VALUES ('q1', 'text', '{}', 'h')")
        conn.execute("INSERT INTO documents (doc_id, text, content_hash) VALUES ('d1', 'text', 'h')")
        conn.execute("INSERT INTO pool VALUES ('q1', 'd1', '{}', 0.5, 1, 'now', NULL)")
        conn.executemany("INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, at) VALUES ('q1', 'd1', 1, ?, 'now')",
                         [(3,), (1,)])
    assert not {name for kind, name, _ in _objects(path) if kind == "view"}
    db = connect(path)
    assert db.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert set(VIEWS) <= {name for kind, name, _ in _objects(path) if kind == "view"}
    assert db.conn.execute("SELECT query_id, doc_id, annotator_id, relevance FROM current_judgments").fetchall() == [
        ("q1", "d1", 1, 1)
    ]
    db.close()
    upgraded = _objects(path)
    connect(path).close()  # opened again: the migration does not run twice
    assert _objects(path) == upgraded


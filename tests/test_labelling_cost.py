"""What a key press and a hand-out cost does not grow with the project, checked on what SQLite
and the store really do: every statement of a sign-in and of key presses on the Claims and
relevance pages is read through an index (its ``EXPLAIN QUERY PLAN``); a run of the app reads
the open tasks once; the next verdict batch is the one the former listing of every open item
gave (a differential test against that listing); the pool's kept counts are counts; and
``import-verdicts`` reads its file as it writes, never holding it, and writes nothing when a
line is bad. Speed itself is measured in ``bench/labelling_scale.py``, not here.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import tracemalloc
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

import nugget_fixtures
from app_fixtures import Project, add_answers, add_judgments, add_verdict_items, app_test, build_project, press
from labeler.cli import cli
import labeler.store as store
from labeler.store import connect, connection, init_db
from labeler.store import access, labels, plans, review
from labeler.store import nugget_support as support
from labeler.store import verdict_queue as queue
from labeler.store.access import OWNER
from labeler.store.assign import is_overlap
from labeler.store.migrations import MIGRATIONS
from labeler.store.migrations.m22_labelling_indexes import SQL as M22
from labeler.store.settings import get_settings
from labeler.store.verdict_io import add_verdicts
from labeler.ui import flow, state

KIND = "faithfulness"


# --- the next batch: the same as listing every open item ---------------------------------------------


def _listed_batch(db: sqlite_utils.Database, annotator_id: int, kind: str) -> tuple[list[str], dict[str, list[int]]]:
    """The next batch as the store used to find it, listing every item of the kind: the items
    the annotator may take in import order, and the lapsed holders each leaves."""
    settings = get_settings(db)
    cutoff = (datetime.now(UTC) - timedelta(minutes=settings.reservation_minutes)).isoformat(timespec="microseconds")
    recent = {r[0] for r in db.execute("SELECT annotator_id FROM human_verdicts WHERE at > ? UNION "
                                       "SELECT annotator_id FROM verdict_skips WHERE at > ?", [cutoff, cutoff])}
    givers: dict[str, set[int]] = defaultdict(set)
    for item_id, who in db.execute("SELECT item_id, annotator_id FROM human_verdicts"):
        givers[item_id].add(who)
    held: dict[str, dict[int, str]] = defaultdict(dict)
    for item_id, who, at in db.execute("SELECT a.item_id, a.annotator_id, a.assigned_at FROM verdict_assignments a "
                                       "JOIN annotators n ON n.id = a.annotator_id WHERE a.shown_order > 0 AND n.active"):
        held[item_id][who] = at
    mine = {r[0] for r in db.execute("SELECT item_id FROM verdict_assignments WHERE annotator_id = ? UNION "
                                     "SELECT item_id FROM human_verdicts WHERE annotator_id = ?", [annotator_id] * 2)}
    batch, lapsed = [], {}
    for (item_id,) in db.execute("SELECT item_id FROM verdict_items WHERE kind = ? ORDER BY rowid", [kind]):
        if item_id in mine:
            continue
        if is_overlap(kind, item_id, settings.overlap):
            if len(givers[item_id] | set(held[item_id])) < settings.overlap_k:
                batch.append(item_id)
        elif not givers[item_id] and not any(a in recent or at > cutoff for a, at in held[item_id].items()):
            batch.append(item_id)
            lapsed[item_id] = list(held[item_id])
        if len(batch) == settings.batch_size:
            break
    return batch, lapsed


def _pending(db: sqlite_utils.Database, annotator_id: int) -> bool:
    return db.execute(
        "SELECT 1 FROM verdict_assignments a WHERE a.annotator_id = ? AND a.kind = ? AND a.shown_order > 0 "
        "AND NOT EXISTS (SELECT 1 FROM human_verdicts h WHERE h.item_id = a.item_id AND h.annotator_id = a.annotator_id) "
        "AND NOT EXISTS (SELECT 1 FROM verdict_skips s WHERE s.item_id = a.item_id AND s.annotator_id = a.annotator_id)",
        [annotator_id, KIND]).fetchone() is not None


def _step(db: sqlite_utils.Database, rng: random.Random, people: list[int], names: dict[int, str], shown: dict[int, str]) -> None:
    """One random thing a team does: ask for work (checked), judge or skip the item shown,
    import a verdict, let holds go old, deactivate or reactivate someone, change the overlap.
    The last person only ever asks: their holds lapse once old, and go to the others."""
    who = rng.choice(people)
    action = rng.choices(["next", "judge", "skip", "import", "old", "active", "overlap"], [6, 6, 1, 1, 2, 1, 1])[0]
    active = access.annotator_by_id(db, who).active
    if action == "next" and active:
        expected, lapsed = (None, {}) if _pending(db, who) else _listed_batch(db, who, KIND)
        before = db.execute("SELECT coalesce(max(batch), 0) FROM verdict_assignments WHERE annotator_id = ?", [who]).fetchone()[0]
        card = queue.next_card(db, who, KIND)
        if card is not None:
            shown[who] = card.item_id
        after = db.execute("SELECT coalesce(max(batch), 0) FROM verdict_assignments WHERE annotator_id = ?", [who]).fetchone()[0]
        if expected is None:  # work of theirs was waiting: no new batch
            assert after == before
        else:
            got = [r[0] for r in db.execute("SELECT item_id FROM verdict_assignments WHERE annotator_id = ? AND batch = ?",
                                            [who, before + 1])]
            assert sorted(got) == sorted(expected)
            for item_id, holders in lapsed.items():
                for holder in holders:
                    order = db.execute("SELECT shown_order FROM verdict_assignments WHERE item_id = ? AND annotator_id = ?",
                                       [item_id, holder]).fetchone()[0]
                    assert order < 0  # the item left the lapsed holder's queue
    elif action in ("judge", "skip") and active and who in shown and who != people[-1]:
        if action == "judge":
            queue.record_verdict(db, who, shown.pop(who), rng.choice(["SUPPORTED", "UNSUPPORTED"]), 1.0)
        else:
            queue.record_skip(db, who, shown.pop(who), 1.0)
    elif action == "import":
        items = rng.sample([f"f{n}" for n in range(1, 81)], 3)
        records = [(n, {"item_id": i, "verdict": "SUPPORTED", "at": "2001-01-01T00:00:00+00:00"}) for n, i in enumerate(items, 1)]
        add_verdicts(db, "team.jsonl", records, annotator=names[who], caller=OWNER)
    elif action == "old":  # every hold was handed out long ago
        with connection.transaction(db):
            db.execute("UPDATE verdict_assignments SET assigned_at = '2001-01-01T00:00:00+00:00'")
    elif action == "active" and who not in (people[0], people[-1]):
        access.set_active(db, who, not active, caller=OWNER)
    elif action == "overlap":
        labels.set_settings(db, {"overlap": rng.choice([0.0, 0.3, 0.6]), "overlap_k": rng.choice([2, 3])}, caller=OWNER)


def _team_works(directory: Path, seed: int) -> tuple[int, int]:
    """400 random steps of a team of four on 80 items; (items judged, holds that lapsed)."""
    directory.mkdir()
    project = build_project(directory)
    add_verdict_items(project.path, n_faithfulness=80, n_pairwise=2, judge=False)
    db = connect(project.path)
    labels.set_settings(db, {"batch_size": 3, "overlap": 0.3, "reservation_minutes": 60}, caller=OWNER)
    people = [project.annotator_id, project.admin_id]
    for name in ("carol", "dan"):
        people.append(access.add_annotator(db, name)[0].id)
    names = {a.id: a.name for a in access.list_annotators(db, caller=OWNER)}
    rng, shown = random.Random(seed), {}
    for _ in range(400):
        _step(db, rng, people, names, shown)
    return (db.execute("SELECT count(DISTINCT item_id) FROM human_verdicts").fetchone()[0],
            db.execute("SELECT count(*) FROM verdict_assignments WHERE shown_order < 0").fetchone()[0])


def test_the_next_verdict_batch_is_the_one_listing_every_item_gives(tmp_path: Path) -> None:
    runs = [_team_works(tmp_path / str(seed), seed) for seed in (1, 2, 3)]
    assert all(judged > 20 for judged, _ in runs)  # the teams got far into the items
    assert sum(lapsed for _, lapsed in runs) > 0  # and holds lapsed on the way


def _old_project(path: Path) -> sqlite3.Connection:
    """A connection to a new file that runs the migrations' SQL as a released goldpool did."""
    conn = sqlite3.connect(path)
    conn.create_function("goldpool_sha256", 1, lambda text: None if text is None else hashlib.sha256(text.encode()).hexdigest())
    return conn


def test_a_project_with_verdicts_from_before_the_open_list_hands_out_as_before(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    before = MIGRATIONS.index(M22)
    with _old_project(path) as conn:  # a project made by the release before the list
        conn.execute("PRAGMA foreign_keys=ON")
        for script in MIGRATIONS[:before]:
            conn.executescript(script)
        conn.execute(f"PRAGMA user_version={before}")
        conn.execute("INSERT INTO annotators (id, name, role, token_salt, token_hash, created_at) VALUES "
                     "(1, 'ann', 'annotator', 's', 'h', 't'), (2, 'bob', 'annotator', 's', 'h', 't')")
        conn.executemany("INSERT INTO verdict_items (item_id, kind, question, response, content_hash, added_at) "
                         "VALUES (?, 'faithfulness', 'q?', 'r', ?, 't')", [(f"f{n}", f"h{n}") for n in range(1, 21)])
        conn.executemany("INSERT INTO human_verdicts (item_id, annotator_id, verdict, at) VALUES (?, 1, 'SUPPORTED', 't')",
                         [(f"f{n}",) for n in range(1, 11)])
    db = connect(path)
    assert db.execute("SELECT value FROM settings WHERE key = 'state.verdict_open'").fetchone() is None
    labels.set_settings(db, {"batch_size": 20}, caller=OWNER)
    expected, _ = _listed_batch(db, 2, KIND)
    assert queue.next_card(db, 2, KIND) is not None
    got = {r[0] for r in db.execute("SELECT item_id FROM verdict_assignments WHERE annotator_id = 2")}
    assert got == set(expected)
    # The ten judged: only the overlap ones still wait for bob; the ten fresh all come.
    assert got == {f"f{n}" for n in range(11, 21)} | {f"f{n}" for n in range(1, 11) if is_overlap(KIND, f"f{n}", 0.2)}


# --- every statement of a sign-in and of key presses reads through an index ---------------------------


def _claims_presses(db: sqlite_utils.Database, token: str, presses: int) -> None:
    session: dict = {}
    user = state.sign_in(session, db, token)
    for n in range(presses + 2):
        state.signed_in(session, db)
        state.read_open_tasks(session, db)
        card = flow.CLAIMS.current(session, db, user.id)
        queue.progress(db, user.id, "claims")
        if n < presses:
            flow.CLAIMS.choose(session, db, user.id, card.item_id, ("SUPPORTED", "UNSUPPORTED")[n % 2])
        elif n == presses:
            flow.CLAIMS.back(session, db, user.id, card.item_id)
        else:
            flow.CLAIMS.skip(session, db, user.id, card.item_id)


def _relevance_presses(db: sqlite_utils.Database, token: str, presses: int) -> None:
    session: dict = {}
    user = state.sign_in(session, db, token)
    for n in range(presses + 1):
        state.signed_in(session, db)
        state.read_open_tasks(session, db)
        item = flow.RELEVANCE.current(session, db, user.id)
        overall = labels.progress(db, user.id, item.query_id, item.doc_id)
        state.project_counts(session, db, overall.done)
        state.highlighting(db, user.id)
        if n < presses:
            flow.RELEVANCE.choose(session, db, user.id, (item.query_id, item.doc_id), n % 4)
        else:
            flow.RELEVANCE.back(session, db, user.id, (item.query_id, item.doc_id))


def test_the_statements_of_sign_in_and_key_presses_read_through_indexes(tmp_path: Path) -> None:
    project = build_project(tmp_path)
    add_answers(project.path, n=8)
    db = connect(project.path)
    labels.set_settings(db, {"batch_size": 3}, caller=OWNER)  # the presses cross batches
    add_verdicts(db, "done.jsonl", [(n, {"item_id": f"system-hidden-gamma-{n}#1", "verdict": "SUPPORTED"})
                                    for n in range(1, 4)], annotator="carol", caller=OWNER)
    with plans.recorded(db) as statements:
        _claims_presses(db, project.annotator_token, 7)
        _relevance_presses(db, project.annotator_token, 7)
    queries = plans.distinct_queries(statements)
    assert any("FROM verdict_open" in q for q in queries) and any("INSERT INTO judgments" in q for q in queries)
    scans = {q: plans.full_scans(plans.query_plan(db, q), q) for q in queries}
    assert {q: lines for q, lines in scans.items() if lines} == {}
    assert db.execute("SELECT count(*) FROM human_verdicts WHERE annotator_id = ?", [project.annotator_id]).fetchone()[0] == 7
    assert db.execute("SELECT count(*) FROM judgments WHERE annotator_id = ?", [project.annotator_id]).fetchone()[0] == 7


def test_the_key_presses_of_the_nugget_support_page_read_through_indexes(tmp_path: Path) -> None:
    path = nugget_fixtures.build(tmp_path, judge=False, people=False)
    db = connect(path)
    _, token = access.add_annotator(db, "vera")
    session: dict = {}
    user = state.sign_in(session, db, token)
    first = flow.FLOWS["nuggets"].current(session, db, user.id)  # the hand-out of the first answer
    assert first is not None and first.nuggets >= 2
    with plans.recorded(db) as statements:  # the presses within that answer: no hand-out
        for _ in range(first.nuggets - 1):
            state.signed_in(session, db)
            state.read_open_tasks(session, db)
            card = flow.FLOWS["nuggets"].current(session, db, user.id)
            support.support_progress(db, user.id)
            flow.FLOWS["nuggets"].choose(session, db, user.id, card.item_id, "SUPPORT")
    queries = plans.distinct_queries(statements)
    assert any("INSERT INTO human_verdicts" in q for q in queries)
    scans = {q: plans.full_scans(plans.query_plan(db, q), q) for q in queries}
    assert {q: lines for q, lines in scans.items() if lines} == {}
    assert db.execute("SELECT count(*) FROM human_verdicts WHERE annotator_id = ?", [user.id]).fetchone()[0] == first.nuggets - 1


def test_the_hand_outs_of_the_nugget_support_page_read_through_indexes(tmp_path: Path) -> None:
    """Each hand-out (an answer's nuggets) reads question by question, by index: no statement
    reads every answer, item or assignment of the project."""
    path = nugget_fixtures.build(tmp_path, judge=False, people=False)
    db = connect(path)
    user, _ = access.add_annotator(db, "vera")
    with plans.recorded(db) as statements:
        while (card := support.next_support_card(db, user.id)) is not None:
            support.record_support(db, user.id, card.item_id, "SUPPORT")
    queries = plans.distinct_queries(statements)
    assert any("INSERT INTO verdict_assignments" in q for q in queries)
    scans = {q: plans.full_scans(plans.query_plan(db, q), q) for q in queries}
    # The one list read whole is the questions that have nuggets (a hand-out's order over them).
    assert {q: lines for q, lines in scans.items() if lines} == {
        "SELECT DISTINCT query_id FROM nuggets": ["SCAN nuggets USING COVERING INDEX nuggets_query"]}


def test_a_new_nugget_and_its_items_read_its_question_only(tmp_path: Path) -> None:
    """A nugget written (by hand, or one line of an import) finds its position and makes its
    support items from its question's rows: ``current_nuggets`` is read by the question."""
    from labeler.store import nuggets

    path = nugget_fixtures.build(tmp_path, judge=False, people=False)
    db = connect(path)
    with plans.recorded(db) as statements:
        made = nuggets.create_nugget(db, "q1", "WAL lets readers see a snapshot", caller=OWNER)
        nuggets.edit_nugget(db, made.nugget_id, importance="vital", caller=OWNER)
    assert made.position == 4
    queries = plans.distinct_queries(statements)
    assert any("INSERT INTO nugget_items" in q for q in queries)
    # An INSERT's plan lists the foreign-key checks of child tables, which SQLite runs only while
    # a deferred violation is outstanding; the reads are the SELECTs.
    scans = {q: plans.full_scans(plans.query_plan(db, q), q) for q in queries if q.startswith("SELECT")}
    assert {q: lines for q, lines in scans.items() if lines} == {}


def test_the_progress_report_reads_kept_counts(project: Project) -> None:
    """The Progress page's report reads the counts the store keeps, and each person's timed labels
    and skips by index; the one table read whole is the list of queries it shows."""
    add_judgments(project.path, project.annotator_id, {("q1", "q1-d1"): 2, ("q2", "q2-d2"): 1})
    db = connect(project.path)
    with plans.recorded(db) as statements:
        review.progress_report(db, caller=OWNER)
    queries = plans.distinct_queries(statements)
    scans = {q: plans.full_scans(plans.query_plan(db, q), q) for q in queries}
    scanned = {q: lines for q, lines in scans.items() if lines}
    assert [lines for lines in scanned.values()] == [["SCAN q"]] or [lines for lines in scanned.values()] == [["SCAN queries"]]
    assert "query_counts" in next(iter(scanned))


def test_the_plan_reader_sees_a_full_scan_under_an_alias() -> None:
    db = sqlite_utils.Database(memory=True)
    init = "CREATE TABLE verdict_items (item_id TEXT PRIMARY KEY, kind TEXT); CREATE TABLE tasks (name TEXT PRIMARY KEY)"
    db.conn.executescript(init)
    scan = "SELECT DISTINCT i.kind FROM verdict_items i"
    assert plans.full_scans(plans.query_plan(db, scan), scan) == ["SCAN i"]
    search = "SELECT kind FROM verdict_items WHERE item_id = 'x'"
    assert plans.full_scans(plans.query_plan(db, search), search) == []


# --- the open tasks: read once per run of the app -----------------------------------------------------


def _verdict_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, str]:
    """A project of verdict items only (its first open task is faithfulness); the path, a
    token, and the key of a verdict button."""
    path = tmp_path / "verdicts.db"
    init_db(path).close()
    add_verdict_items(path, n_faithfulness=12, n_pairwise=0, judge=False)
    with connect(path) as db:
        _, token = access.add_annotator(db, "vera")
    monkeypatch.setenv(state.DB_ENV_VAR, str(path))
    return path, token, state.choice_key("faithfulness", "SUPPORTED")


@pytest.mark.parametrize("page", ["relevance", "faithfulness"])
def test_a_run_of_the_app_reads_the_open_tasks_once(project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    page: str) -> None:
    if page == "relevance":
        add_verdict_items(project.path, judge=False)  # verdict tasks open too: the page list has several
        path, token, key = project.path, project.annotator_token, state.grade_key(2)
    else:
        path, token, key = _verdict_only(tmp_path, monkeypatch)
    seen: list[str] = []
    opened = connection.connect

    def traced(*args: object, **kwargs: object) -> sqlite_utils.Database:  # the app's own connection, watched
        db = opened(*args, **kwargs)
        db.conn.set_trace_callback(seen.append)
        return db

    monkeypatch.setattr(connection, "connect", traced)
    monkeypatch.setattr(store, "connect", traced)  # the package keeps the name it handed out first
    at = app_test().run()
    seen.clear()
    at.text_input(key=state.TOKEN_INPUT).input(token)
    at.button(key=state.LOGIN_SUBMIT).click().run()  # sign-in, then the first item's hand-out
    reads = [sum("FROM tasks t WHERE EXISTS" in sql for sql in seen)]
    for _ in range(4):
        seen.clear()
        press(at, key)
        reads.append(sum("FROM tasks t WHERE EXISTS" in sql for sql in seen))
    assert reads == [1, 1, 1, 1, 1]
    with connect(path) as db:
        table = "judgments" if page == "relevance" else "human_verdicts"
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 4  # every press was a real one
    assert not at.exception


# --- the pool's kept counts ---------------------------------------------------------------------------


def _counted(db: sqlite_utils.Database) -> tuple[int, int]:
    return (db.execute("SELECT count(*) FROM pool").fetchone()[0],
            db.execute("SELECT count(*) FROM (SELECT DISTINCT query_id, doc_id FROM judgments)").fetchone()[0])


def test_the_kept_pool_counts_are_the_counts(tmp_path: Path) -> None:
    project = build_project(tmp_path)
    add_judgments(project.path, project.annotator_id, {("q1", "q1-d1"): 2, ("q1", "q1-d2"): 0})
    add_judgments(project.path, project.admin_id, {("q1", "q1-d1"): 3, ("q2", "q2-d1"): 1})  # one entry twice
    db = connect(project.path)
    assert labels.pool_progress(db) == _counted(db) == (15, 3)
    labels.record_judgment(db, project.annotator_id, *_assigned(db, project.annotator_id), 1, 2.0)
    add_verdicts(db, "q.qrels", [(1, {"query_id": "q3", "doc_id": "q3-d5", "relevance": 2})], annotator="carol", caller=OWNER)
    with connection.transaction(db):
        db.execute("DELETE FROM pool WHERE query_id = 'q3' AND doc_id = 'q3-d4'")
    assert labels.pool_progress(db) == _counted(db)
    assert labels.pool_progress(db)[0] == 14 and labels.pool_progress(db)[1] in (4, 5)


def _assigned(db: sqlite_utils.Database, annotator_id: int) -> tuple[str, str]:
    item = flow.RELEVANCE.current({}, db, annotator_id)
    return item.query_id, item.doc_id


def test_a_project_from_before_the_kept_counts_gets_them_counted(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    before = MIGRATIONS.index(M22)
    with _old_project(path) as conn:
        for script in MIGRATIONS[:before]:
            conn.executescript(script)
        conn.execute(f"PRAGMA user_version={before}")
        conn.execute("INSERT INTO annotators (id, name, role, token_salt, token_hash, created_at) VALUES (1, 'a', 'annotator', '', '', 't')")
        conn.execute("INSERT INTO queries VALUES ('q1', 'text', '{}', 'h')")
        conn.executemany("INSERT INTO documents (doc_id, text, content_hash) VALUES (?, 'text', 'h')", [("d1",), ("d2",)])
        conn.executemany("INSERT INTO pool VALUES ('q1', ?, '{}', 0.5, 1, 't', NULL)", [("d1",), ("d2",)])
        conn.executemany("INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, at) VALUES ('q1', 'd1', 1, ?, 't')",
                         [(3,), (1,)])
    db = connect(path)
    assert labels.pool_progress(db) == _counted(db) == (2, 1)


# --- import-verdicts: streamed, and nothing written on a bad line -------------------------------------


NOTE = "n" * 4000  # a long note on every verdict: the file is large beside what a record costs


def _verdict_file(path: Path, n: int, last: str | None = None) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for k in range(1, n + 1):
            out.write(json.dumps({"item_id": f"f{k}", "verdict": "SUPPORTED", "note": NOTE}) + "\n")
        if last is not None:
            out.write(last + "\n")
    return path


@pytest.fixture
def many(tmp_path: Path) -> Project:
    project = build_project(tmp_path)
    add_verdict_items(project.path, n_faithfulness=2500, n_pairwise=0, judge=False)
    return project


def test_import_verdicts_streams_its_file(many: Project, tmp_path: Path) -> None:
    file = _verdict_file(tmp_path / "verdicts.jsonl", 2500)
    tracemalloc.start()
    try:
        result = CliRunner().invoke(cli, ["import-verdicts", str(many.path), str(file), "--annotator", "carol"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 0, result.output
    assert "2500 verdicts added for annotator 'carol' (new annotator)" in result.output
    size = file.stat().st_size
    assert size > 10_000_000
    assert peak < size / 4  # reading the file first held every note: more than the file's size
    with connect(many.path) as db:
        assert db.execute("SELECT count(*), min(length(note)) FROM human_verdicts").fetchone() == (2500, 4000)


@pytest.mark.parametrize(("last", "where"), [
    ('{"item_id": "f1", "verdict": "MAYBE"}', "line 2501, field 'verdict'"),
    ('{"item_id": "f1", "verdict": "SUPPORTED"', "line 2501"),
    ('{"item_id": "nowhere", "verdict": "SUPPORTED"}', "line 2501, field 'item_id'"),
])
def test_import_verdicts_writes_nothing_when_the_last_line_is_bad(many: Project, tmp_path: Path, last: str, where: str) -> None:
    file = _verdict_file(tmp_path / "verdicts.jsonl", 2500, last)
    with connect(many.path) as db:
        before = (db.execute("SELECT count(*) FROM human_verdicts").fetchone()[0],
                  db.execute("SELECT count(*) FROM annotators").fetchone()[0],
                  db.execute("SELECT count(*) FROM verdict_open").fetchone()[0])
    result = CliRunner().invoke(cli, ["import-verdicts", str(many.path), str(file), "--annotator", "carol"])
    assert result.exit_code == 1
    assert f"{file}" in result.output and where in result.output
    with connect(many.path) as db:
        after = (db.execute("SELECT count(*) FROM human_verdicts").fetchone()[0],
                 db.execute("SELECT count(*) FROM annotators").fetchone()[0],
                 db.execute("SELECT count(*) FROM verdict_open").fetchone()[0])
    assert after == before == (0, 2, 2500)

"""The labelling store: tokens, assignment, append-only labels, adjudication, roles, rubrics."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import sqlite3
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from labels_fixtures import add_pool, label_all, make_project, position_of

from labeler.retrieval import scheduling
from labeler.store import StoreError, access, connect, labels, review
from labeler.store.rubric import DEFAULT_RUBRIC, current_rubric, rubric_hash, set_rubric
from labeler.store.settings import Settings, get_settings
from labeler.store.vocabulary import OWNER

#: A hold that has lapsed: the clock has passed it.
LONG_AGO = "2000-01-01T00:00:00.000000+00:00"


def _token_parts(token: str) -> tuple[int, str]:
    prefix, secret = token.split(".", 1)
    return int(prefix.removeprefix("gp")), secret


def _queue(db, annotator_id: int) -> list[tuple[str, str]]:
    """The annotator's items in the order they are shown."""
    rows = db.execute(
        "SELECT query_id, doc_id FROM assignments WHERE annotator_id = ? AND shown_order > 0 ORDER BY shown_order",
        [annotator_id],
    )
    return [tuple(r) for r in rows]


def _labellers(db) -> dict[tuple[str, str], set[str]]:
    found: dict[tuple[str, str], set[str]] = {}
    for j in labels.latest_judgments(db, caller=OWNER):
        found.setdefault((j.query_id, j.doc_id), set()).add(j.annotator)
    return found


# --- tokens and sign-in ----------------------------------------------------------------------


def test_only_a_salted_hash_of_the_token_is_stored(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db")
    ada, token = access.add_annotator(db, "ada", role="admin")
    bob, token_b = access.add_annotator(db, "bob")
    annotator_id, secret = _token_parts(token)
    salt, stored = db.execute("SELECT token_salt, token_hash FROM annotators WHERE id = ?", [ada.id]).fetchone()
    assert annotator_id == ada.id and len(secret) >= 40
    assert secret not in stored and secret not in salt
    assert stored == "sha256:" + hashlib.sha256(bytes.fromhex(salt) + secret.encode()).hexdigest()
    assert len(bytes.fromhex(salt)) == 16
    assert salt != db.execute("SELECT token_salt FROM annotators WHERE id = ?", [bob.id]).fetchone()[0]
    assert (ada.role, bob.role) == ("admin", "annotator")


def test_authenticate_accepts_only_the_exact_token_of_an_active_annotator(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db")
    ada, token_a = access.add_annotator(db, "ada")
    bob, token_b = access.add_annotator(db, "bob")
    _, secret_b = _token_parts(token_b)
    assert access.authenticate(db, token_a) == ada
    assert access.authenticate(db, f"  {token_b}\n") == bob
    assert access.authenticate(db, f"gp{ada.id}.{secret_b}") is None  # bob's secret, ada's id
    assert access.authenticate(db, token_a[:-1] + ("A" if token_a[-1] != "A" else "B")) is None
    assert access.authenticate(db, "") is None
    assert access.authenticate(db, "gp999." + secret_b) is None
    access.set_active(db, ada.id, False, caller=OWNER)
    assert access.authenticate(db, token_a) is None
    access.set_active(db, ada.id, True, caller=OWNER)
    assert access.authenticate(db, token_a) == ada


def test_add_annotator_refuses_a_taken_name_or_unknown_role(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db")
    access.add_annotator(db, "ada")
    with pytest.raises(StoreError, match="already exists"):
        access.add_annotator(db, "ada")
    with pytest.raises(StoreError, match="role"):
        access.add_annotator(db, "eve", role="owner")  # type: ignore[arg-type]
    assert [a.name for a in access.list_annotators(db, caller=OWNER)] == ["ada"]


# --- assignment ---------------------------------------------------------------------------------


def test_priority_decides_which_entries_go_first(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=2, per_query=30, overlap=0.0, batch_size=10)
    ada, _ = access.add_annotator(db, "ada")
    bob, _ = access.add_annotator(db, "bob")
    scheduling.next_item(db, ada.id)
    scheduling.next_item(db, bob.id)
    positions = dict(db.execute("SELECT doc_id, position FROM pool").fetchall())
    assert sorted(positions[d] for _, d in _queue(db, ada.id)) == list(range(1, 11))
    assert sorted(positions[d] for _, d in _queue(db, bob.id)) == list(range(11, 21))
    assert {q for q, _ in _queue(db, ada.id) + _queue(db, bob.id)} == {"q001"}


def test_batch_order_is_shuffled_per_annotator_and_the_same_on_a_rerun(tmp_path: Path) -> None:
    orders = []
    for run in ("a", "b"):
        # Every entry overlapping: both annotators get the same ten entries.
        db = make_project(tmp_path / f"{run}.db", n_queries=1, per_query=10, overlap=1.0, overlap_k=2)
        ada, _ = access.add_annotator(db, "ada")
        bob, _ = access.add_annotator(db, "bob")
        scheduling.next_item(db, ada.id)
        scheduling.next_item(db, bob.id)
        orders.append((_queue(db, ada.id), _queue(db, bob.id)))
    (ada_order, bob_order), rerun = orders
    assert set(ada_order) == set(bob_order) and len(ada_order) == 10
    assert ada_order != bob_order
    by_position = sorted(ada_order, key=lambda item: position_of(int(item[1][-3:]), 10))
    assert ada_order != by_position and bob_order != by_position
    assert rerun == orders[0]


def test_item_shows_nothing_of_the_source(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db")
    ada, _ = access.add_annotator(db, "ada")
    item = scheduling.next_item(db, ada.id)
    assert {f.name for f in dataclasses.fields(item)} == {
        "query_id", "doc_id", "query_text", "doc_title", "doc_text", "position", "batch_size", "relevance", "note",
        "query_meta",
    }  # fmt: skip
    assert (item.position, item.batch_size, item.relevance) == (1, 10, None)
    assert "bm25" not in repr(item)


def test_overlap_share_is_fixed_by_the_item_and_every_pair_overlaps(tmp_path: Path) -> None:
    found = []
    for run, order in (("a", [0, 1, 2, 3]), ("b", [3, 1, 0, 2])):
        db = make_project(tmp_path / f"{run}.db", n_queries=20, per_query=25)  # defaults: 20%, k = 2
        people = [access.add_annotator(db, name)[0].id for name in ("ada", "bob", "cy", "di")]
        label_all(db, [people[i] for i in order])
        found.append(_labellers(db))
    first, second = found
    n_items = 20 * 25
    assert len(first) == n_items  # everything labelled
    doubles = {item for item, who in first.items() if len(who) == 2}
    assert all(len(who) <= 2 for who in first.values())
    # 20% of 500 entries: binomial sd = sqrt(500 * 0.2 * 0.8) = 8.9; allow 3 sd.
    assert abs(len(doubles) - 0.2 * n_items) <= 3 * (n_items * 0.2 * 0.8) ** 0.5
    assert doubles == {item for item, who in second.items() if len(who) == 2}
    pairs = combinations(["ada", "bob", "cy", "di"], 2)
    shared = [sum(1 for who in first.values() if set(pair) <= who) for pair in pairs]
    # About 100 overlap entries over 6 pairs: every pair gets its share, not only neighbours in turn.
    assert sum(shared) == len(doubles) and min(shared) >= 12 and max(shared) - min(shared) <= 3, shared


def test_a_single_label_entry_is_never_held_by_two_annotators(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=2, per_query=12, overlap=0.0, batch_size=5)
    people = [access.add_annotator(db, name)[0].id for name in ("ada", "bob", "cy")]
    for annotator_id in people:
        scheduling.next_item(db, annotator_id)
    queues = [set(_queue(db, a)) for a in people]
    assert all(len(q) == 5 for q in queues[:2]) and len(queues[2]) == 2  # 12 = 5 + 5 + 2 in q001
    assert not (queues[0] & queues[1] or queues[0] & queues[2] or queues[1] & queues[2])
    holders = dict(((r[0], r[1]), r[2]) for r in db.execute("SELECT query_id, doc_id, annotator_id FROM reservations"))
    assert len(holders) == 12 and all(item in queues[people.index(a)] for item, a in holders.items())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["label", "skip", "expire"])), max_size=40))
def test_no_two_annotators_ever_wait_on_the_same_single_label_entry(tmp_path_factory, steps) -> None:
    db = make_project(tmp_path_factory.mktemp("p") / "p.db", n_queries=3, per_query=6, overlap=0.0, batch_size=3)
    people = [access.add_annotator(db, name)[0].id for name in ("ada", "bob", "cy")]
    for who, action in steps:
        if action == "expire":  # the clock passes every hold
            db.execute("UPDATE reservations SET expires_at = ?", [LONG_AGO])
            continue
        item = scheduling.next_item(db, people[who])
        if item is None:
            continue
        if action == "label":
            labels.record_judgment(db, people[who], item.query_id, item.doc_id, 2, 1.0)
        else:
            labels.record_skip(db, people[who], item.query_id, item.doc_id, 1.0)
        waiting: dict[tuple[str, str], int] = {}
        for annotator_id in people:
            for query_id, doc_id in _queue(db, annotator_id):
                if not db.execute(
                    "SELECT 1 FROM judgments WHERE query_id = ? AND doc_id = ? AND annotator_id = ?",
                    [query_id, doc_id, annotator_id],
                ).fetchone():
                    waiting[(query_id, doc_id)] = waiting.get((query_id, doc_id), 0) + 1
        assert max(waiting.values(), default=0) <= 1


def test_a_lapsed_hold_goes_to_the_next_annotator_and_a_late_label_is_kept(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=1, per_query=15, overlap=0.0, batch_size=10)
    ada, _ = access.add_annotator(db, "ada")
    bob, _ = access.add_annotator(db, "bob")
    first = scheduling.next_item(db, ada.id)
    labels.record_judgment(db, ada.id, first.query_id, first.doc_id, 3, 4.0)
    ada_batch = set(_queue(db, ada.id))
    # Bob asks while ada's holds are fresh: he gets the remaining five entries only.
    scheduling.next_item(db, bob.id)
    assert len(_queue(db, bob.id)) == 5 and not ada_batch & set(_queue(db, bob.id))
    db.execute("UPDATE reservations SET expires_at = ? WHERE annotator_id = ?", [LONG_AGO, ada.id])
    for query_id, doc_id in _queue(db, bob.id):
        labels.record_judgment(db, bob.id, query_id, doc_id, 0, 1.0)
    bob_next = scheduling.next_item(db, bob.id)
    lapsed = ada_batch - {(first.query_id, first.doc_id)}
    assert (bob_next.query_id, bob_next.doc_id) in lapsed
    assert set(_queue(db, bob.id)) >= lapsed and set(_queue(db, ada.id)) == {(first.query_id, first.doc_id)}
    assert scheduling.next_item(db, ada.id) is None
    mine = labels.progress(db, ada.id)
    assert (mine.done, mine.assigned, mine.query_done, mine.query_total) == (1, 1, 1, 1)
    assert labels.pool_progress(db) == (15, 6)  # ada's first label and bob's five
    # Ada labels an item she still had on screen: recorded, and it is hers again.
    late = sorted(lapsed)[0]
    labels.record_judgment(db, ada.id, *late, 2, 1900.0)
    assert labels.progress(db, ada.id).done == 2
    assert labels.get_item(db, ada.id, *late).relevance == 2


def test_this_batch_counts_one_hand_out_not_every_item_of_the_query(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=1, per_query=10, overlap=0.0, batch_size=4)
    ada, _ = access.add_annotator(db, "ada")
    for _ in range(4):
        item = scheduling.next_item(db, ada.id)
        labels.record_judgment(db, ada.id, item.query_id, item.doc_id, 1, 1.0)
    first = labels.progress(db, ada.id, item.query_id)
    assert (first.query_done, first.query_total) == (4, 4)
    # The second batch is of the same query: it starts afresh.
    item = scheduling.next_item(db, ada.id)
    mine = labels.progress(db, ada.id, item.query_id)
    assert (mine.done, mine.assigned, mine.query_done, mine.query_total) == (4, 8, 0, 4)
    assert (item.position, item.batch_size) == (1, 4)
    labels.record_judgment(db, ada.id, item.query_id, item.doc_id, 1, 1.0)
    item = scheduling.next_item(db, ada.id)
    assert (item.position, item.batch_size) == (2, 4)
    assert labels.progress(db, ada.id, item.query_id, item.doc_id).query_done == 1
    assert labels.progress(db, ada.id).query_total == 4  # the latest batch, when no item is named
    # Going back into the first batch shows that batch's figures.
    back = labels.previous_item(db, ada.id, *_queue(db, ada.id)[3])
    before = labels.progress(db, ada.id, back.query_id, back.doc_id)
    assert (back.position, back.batch_size, before.query_done, before.query_total) == (3, 4, 4, 4)


def test_a_deactivated_annotators_unlabelled_work_goes_to_others(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=1, per_query=20, overlap=0.5, batch_size=10)
    ada, _ = access.add_annotator(db, "ada")
    bob, _ = access.add_annotator(db, "bob")
    cy, _ = access.add_annotator(db, "cy")
    scheduling.next_item(db, ada.id)
    scheduling.next_item(db, bob.id)  # bob's overlap entries get a copy earmarked for ada
    held_by_ada = set(_queue(db, ada.id))
    access.set_active(db, ada.id, False, caller=OWNER)
    label_all(db, [bob.id, cy.id])
    labelled = _labellers(db)
    assert held_by_ada <= set(labelled) and len(labelled) == 20
    assert all("ada" not in who for who in labelled.values())
    singles = {tuple(r) for r in db.execute("SELECT query_id, doc_id FROM reservations")}
    shared = held_by_ada - singles
    assert shared and all(labelled[item] == {"bob", "cy"} for item in shared)


def test_labelling_in_a_query_renews_the_holds_there(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=1, per_query=12, overlap=0.0, batch_size=6)
    ada, _ = access.add_annotator(db, "ada")
    bob, _ = access.add_annotator(db, "bob")
    item = scheduling.next_item(db, ada.id)
    db.execute("UPDATE reservations SET expires_at = ?", [LONG_AGO])
    labels.record_judgment(db, ada.id, item.query_id, item.doc_id, 1, 1.0)
    scheduling.next_item(db, bob.id)
    assert not set(_queue(db, ada.id)) & set(_queue(db, bob.id))
    assert len(_queue(db, ada.id)) == 6


def test_a_skipped_item_comes_back_after_all_other_work(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=2, per_query=4, overlap=0.0, batch_size=4)
    ada, _ = access.add_annotator(db, "ada")
    skipped = scheduling.next_item(db, ada.id)
    labels.record_skip(db, ada.id, skipped.query_id, skipped.doc_id, 3.0)
    seen = []
    while (item := scheduling.next_item(db, ada.id)) is not None:
        seen.append((item.query_id, item.doc_id))
        labels.record_judgment(db, ada.id, item.query_id, item.doc_id, 1, 1.0)
    assert len(seen) == 8 and seen[-1] == (skipped.query_id, skipped.doc_id)
    assert [q for q, _ in seen[:3]] == ["q001"] * 3 and [q for q, _ in seen[3:7]] == ["q002"] * 4


def test_a_new_pool_build_hands_out_new_entries_of_finished_queries(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=2, per_query=3, overlap=0.0)
    ada, _ = access.add_annotator(db, "ada")
    assert label_all(db, [ada.id]) == 6
    db["pool_builds"].insert({"id": 2, "at": "2026-01-01T00:00:00+00:00", "params": "{}"})
    add_pool(db, "q001", range(4, 6), 5, 2)
    assert label_all(db, [ada.id]) == 2


# --- labels -------------------------------------------------------------------------------------


def test_labels_are_append_only_and_the_latest_counts(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", overlap=0.0)
    ada, _ = access.add_annotator(db, "ada")
    first = scheduling.next_item(db, ada.id)
    one = labels.record_judgment(db, ada.id, first.query_id, first.doc_id, 1, 5.5, "unsure")
    second = scheduling.next_item(db, ada.id)
    back = labels.previous_item(db, ada.id, second.query_id, second.doc_id)
    assert (back.doc_id, back.relevance, back.note) == (first.doc_id, 1, "unsure")
    two = labels.record_judgment(db, ada.id, back.query_id, back.doc_id, 3, 2.0)
    rows = db.execute("SELECT id, relevance, note, seconds FROM judgments ORDER BY id").fetchall()
    assert rows == [(one, 1, "unsure", 5.5), (two, 3, "", 2.0)]
    assert [(j.doc_id, j.relevance) for j in labels.latest_judgments(db, caller=OWNER)] == [(first.doc_id, 3)]
    assert scheduling.next_item(db, ada.id).doc_id == second.doc_id  # back where she was
    for statement in ("UPDATE judgments SET relevance = 0", "DELETE FROM judgments"):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute(statement)
    assert db.execute("SELECT count(*) FROM judgments").fetchone()[0] == 2


def test_a_label_records_who_when_how_long_and_the_rubric(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db")
    ada, _ = access.add_annotator(db, "ada", role="admin")
    default_hash = hashlib.sha256(DEFAULT_RUBRIC.encode()).hexdigest()[:12]
    assert current_rubric(db).hash == default_hash and "Fully answers" in current_rubric(db).text
    item = scheduling.next_item(db, ada.id)
    labels.record_judgment(db, ada.id, item.query_id, item.doc_id, 2, 7.25)
    new_text = "Grade 3 only when the chunk alone answers the question."
    assert set_rubric(db, new_text, caller=ada).hash == hashlib.sha256(new_text.encode()).hexdigest()[:12]
    item = scheduling.next_item(db, ada.id)
    labels.record_judgment(db, ada.id, item.query_id, item.doc_id, 0, None)
    rows = db.execute("SELECT annotator_id, seconds, rubric_hash, at FROM judgments ORDER BY id").fetchall()
    assert [r[:3] for r in rows] == [(ada.id, 7.25, default_hash), (ada.id, None, rubric_hash(new_text))]
    assert rows[0][3] < rows[1][3] and rows[0][3].endswith("+00:00")
    assert set_rubric(db, DEFAULT_RUBRIC, caller=ada).hash == default_hash  # back to the old text
    assert current_rubric(db).hash == default_hash
    assert db.execute("SELECT count(*) FROM rubrics").fetchone()[0] == 2
    # The history says default, new text, default again; no earlier row was re-dated.
    history = db.execute("SELECT hash, at FROM rubric_changes ORDER BY id").fetchall()
    assert [h for h, _ in history] == [default_hash, rubric_hash(new_text), default_hash]
    assert history[0][1] < history[1][1] < history[2][1]
    first_use = db.execute("SELECT created_at FROM rubrics WHERE hash = ?", [default_hash]).fetchone()[0]
    assert first_use == history[0][1]
    assert set_rubric(db, DEFAULT_RUBRIC, caller=ada).created_at == history[2][1]  # already in force
    assert db.execute("SELECT count(*) FROM rubric_changes").fetchone()[0] == 3


@pytest.mark.parametrize("bad", [4, -1, True, "2", 2.0])
def test_a_bad_grade_is_refused_and_nothing_is_written(tmp_path: Path, bad: object) -> None:
    db = make_project(tmp_path / "p.db")
    ada, _ = access.add_annotator(db, "ada")
    item = scheduling.next_item(db, ada.id)
    with pytest.raises(StoreError, match="grade 0-3"):
        labels.record_judgment(db, ada.id, item.query_id, item.doc_id, bad, 1.0)  # type: ignore[arg-type]
    assert db.execute("SELECT count(*) FROM judgments").fetchone()[0] == 0


def test_an_annotator_reaches_only_their_own_items(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", overlap=0.0)
    ada, _ = access.add_annotator(db, "ada")
    bob, _ = access.add_annotator(db, "bob")
    theirs = scheduling.next_item(db, ada.id)
    scheduling.next_item(db, bob.id)
    for call in (labels.get_item, labels.previous_item):
        with pytest.raises(StoreError, match="not assigned"):
            call(db, bob.id, theirs.query_id, theirs.doc_id)
    with pytest.raises(StoreError, match="not assigned"):
        labels.record_judgment(db, bob.id, theirs.query_id, theirs.doc_id, 3, 1.0)
    with pytest.raises(StoreError, match="not assigned"):
        labels.record_skip(db, bob.id, theirs.query_id, theirs.doc_id, 1.0)
    assert db.execute("SELECT count(*) FROM judgments").fetchone()[0] == 0
    access.set_active(db, bob.id, False, caller=OWNER)
    with pytest.raises(StoreError, match="deactivated"):
        scheduling.next_item(db, bob.id)


# --- admin side ---------------------------------------------------------------------------------


def _disagreeing_project(tmp_path: Path):
    db = make_project(tmp_path / "p.db", n_queries=1, per_query=3, overlap=1.0, overlap_k=2)
    admin, _ = access.add_annotator(db, "ada", role="admin")
    bob, _ = access.add_annotator(db, "bob")
    cy, _ = access.add_annotator(db, "cy")
    grades = {bob.id: [3, 1, 2], cy.id: [3, 2, 0]}  # by doc number
    label_all(db, [bob.id, cy.id])
    for annotator_id, row in grades.items():
        for n, grade in enumerate(row, start=1):
            labels.record_judgment(db, annotator_id, "q001", f"q001-d{n:03d}", grade, 1.0, f"n{n}")
    return db, admin, bob, cy


def test_overlap_labels_align_current_labels_of_each_pair(tmp_path: Path) -> None:
    db, admin, *_ = _disagreeing_project(tmp_path)
    rows = review.overlap_labels(db, caller=admin)
    assert [(r.doc_id, r.annotator_a, r.annotator_b, r.relevance_a, r.relevance_b) for r in rows] == [
        ("q001-d001", "bob", "cy", 3, 3),
        ("q001-d002", "bob", "cy", 1, 2),
        ("q001-d003", "bob", "cy", 2, 0),
    ]


def test_adjudication_is_its_own_row_and_empties_the_queue(tmp_path: Path) -> None:
    db, admin, bob, cy = _disagreeing_project(tmp_path)
    queue = review.disagreements(db, caller=admin)
    assert [(d.doc_id, d.labels) for d in queue] == [
        ("q001-d002", (("bob", 1, "n2"), ("cy", 2, "n2"))),
        ("q001-d003", (("bob", 2, "n3"), ("cy", 0, "n3"))),
    ]
    assert queue[0].query_text == "query text q001" and queue[0].doc_text == "Text of q001-d002 about q001."
    before = db.execute("SELECT * FROM judgments ORDER BY id").fetchall()
    first = review.record_adjudication(db, "q001", "q001-d002", 1, "bob is right", caller=admin.id)
    again = review.record_adjudication(db, "q001", "q001-d002", 2, caller=admin)
    assert db.execute("SELECT * FROM judgments ORDER BY id").fetchall() == before
    assert db.execute("SELECT id, relevance FROM adjudications ORDER BY id").fetchall() == [(first, 1), (again, 2)]
    assert [d.doc_id for d in review.disagreements(db, caller=admin)] == ["q001-d003"]
    assert [(a.doc_id, a.admin, a.relevance) for a in review.adjudications(db, caller=admin)] == [("q001-d002", "ada", 2)]
    with pytest.raises(StoreError, match="not in the pool"):
        review.record_adjudication(db, "q001", "nope", 2, caller=admin)


def test_admin_functions_refuse_annotators_and_deactivated_admins(tmp_path: Path) -> None:
    db, admin, bob, _ = _disagreeing_project(tmp_path)
    calls = [
        lambda who: review.progress_report(db, caller=who),
        lambda who: review.overlap_labels(db, caller=who),
        lambda who: review.disagreements(db, caller=who),
        lambda who: review.adjudications(db, caller=who),
        lambda who: review.record_adjudication(db, "q001", "q001-d002", 1, caller=who),
        lambda who: review.export_judgments(db, io.StringIO(), caller=who),
        lambda who: labels.latest_judgments(db, caller=who),
        lambda who: access.list_annotators(db, caller=who),
        lambda who: access.set_active(db, bob.id, True, caller=who),
        lambda who: set_rubric(db, "new rubric", caller=who),
        lambda who: labels.set_settings(db, {"overlap": 0.5}, caller=who),
    ]
    for call in calls:
        with pytest.raises(StoreError, match="admin"):
            call(bob)
        call(admin)
    access.set_active(db, admin.id, False, caller=OWNER)
    with pytest.raises(StoreError, match="admin"):
        review.progress_report(db, caller=admin)
    assert db.execute("SELECT count(*) FROM adjudications").fetchone()[0] == 1
    assert not (tmp_path / "out.jsonl.partial").exists()


def test_progress_report_counts_work_and_time_on_screen(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=2, per_query=4, overlap=0.0, batch_size=4)
    ada, _ = access.add_annotator(db, "ada", role="admin")
    bob, _ = access.add_annotator(db, "bob")
    for seconds in (10.0, 20.0, 60.0):
        item = scheduling.next_item(db, bob.id)
        labels.record_judgment(db, bob.id, item.query_id, item.doc_id, 1, seconds)
    item = scheduling.next_item(db, bob.id)
    labels.record_skip(db, bob.id, item.query_id, item.doc_id, 10.0)
    report = review.progress_report(db, caller=ada)
    ada_row, bob_row = report.annotators
    assert (ada_row.done, ada_row.assigned, ada_row.labels_per_hour, ada_row.median_seconds) == (0, 0, None, None)
    assert (bob_row.done, bob_row.assigned, bob_row.median_seconds) == (3, 4, 20.0)
    assert bob_row.labels_per_hour == pytest.approx(3600 * 3 / (10 + 20 + 60 + 10))
    assert [(q.query_id, q.done, q.assigned, q.pool_size) for q in report.queries] == [
        ("q001", 3, 4, 4),
        ("q002", 0, 0, 4),
    ]


def test_export_writes_every_raw_label_as_jsonl(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", overlap=0.0)
    ada, _ = access.add_annotator(db, "ada")
    item = scheduling.next_item(db, ada.id)
    labels.record_judgment(db, ada.id, item.query_id, item.doc_id, 1, 3.5, "first")
    labels.record_judgment(db, ada.id, item.query_id, item.doc_id, 2, None)
    out = io.StringIO()
    assert review.export_judgments(db, out, caller=OWNER) == 2
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    at = [r[0] for r in db.execute("SELECT at FROM judgments ORDER BY id")]
    rubric = current_rubric(db).hash
    assert rows == [
        {"query_id": item.query_id, "doc_id": item.doc_id, "annotator": "ada", "relevance": 1, "at": at[0],
         "seconds": 3.5, "note": "first", "rubric_hash": rubric, "adjudicated": None},
        {"query_id": item.query_id, "doc_id": item.doc_id, "annotator": "ada", "relevance": 2, "at": at[1],
         "seconds": None, "note": "", "rubric_hash": rubric, "adjudicated": None},
    ]  # fmt: skip


def test_settings_have_defaults_and_refuse_bad_values(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db")
    assert get_settings(db) == Settings(overlap=0.2, overlap_k=2, reservation_minutes=30.0, batch_size=10)
    assert labels.set_settings(db, {"overlap": "0.5", "batch_size": 4}, caller=OWNER).overlap == 0.5
    for values, message in (
        ({"overlap": 1.5}, "outside"),
        ({"overlap_k": 1}, "outside"),
        ({"batch_size": 2.5}, "integer"),
        ({"colour": 1}, "unknown setting"),
    ):
        with pytest.raises(StoreError, match=message):
            labels.set_settings(db, values, caller=OWNER)
    reopened = connect(tmp_path / "p.db")
    assert get_settings(reopened) == Settings(overlap=0.5, batch_size=4)


RIGHTS_CHECKED = (
    "adjudications",
    "disagreements",
    "export_judgments",
    "latest_judgments",
    "list_annotators",
    "overlap_labels",
    "progress_report",
    "record_adjudication",
    "set_active",
    "set_rubric",
    "set_settings",
)


@pytest.mark.parametrize("name", RIGHTS_CHECKED)
def test_who_asks_is_a_required_keyword(name: str) -> None:
    import inspect

    from labeler.store import rubric as rubric_module

    function = next(getattr(m, name) for m in (labels, access, review, rubric_module) if hasattr(m, name))
    parameter = inspect.signature(function).parameters["caller"]
    assert (parameter.kind, parameter.default) == (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty)


def test_no_caller_grants_nothing_and_owner_everything(tmp_path: Path) -> None:
    db, admin, bob, _ = _disagreeing_project(tmp_path)
    with pytest.raises(StoreError, match="not a caller"):
        labels.latest_judgments(db, caller=None)  # type: ignore[arg-type]
    assert labels.latest_judgments(db, caller=OWNER) == labels.latest_judgments(db, caller=admin)
    assert len(review.disagreements(db, caller=OWNER)) == 2
    with pytest.raises(StoreError, match="needs the admin who makes it"):
        review.record_adjudication(db, "q001", "q001-d002", 1, caller=OWNER)
    rubric = set_rubric(db, "owner's rubric", caller=OWNER)
    author = db.execute("SELECT annotator_id FROM rubric_changes ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert (rubric.text, author) == ("owner's rubric", None)

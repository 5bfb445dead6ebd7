"""A team's first day, in the store: late annotators still get overlap copies, admins get no
work they did not ask for, kept sign-ins end when they should, display choices persist."""

from __future__ import annotations

from pathlib import Path

import pytest
from labels_fixtures import label_all, make_project

from calibration import project_report
from labeler.retrieval import scheduling
from labeler.store import StoreError, access, connect, labels, sessions
from labeler.store.assign import is_overlap
from labeler.store.holds import release_holds
from labeler.store.vocabulary import GRADES, OWNER


def _overlap_entries(db, share: float) -> set[tuple[str, str]]:
    rows = db.execute("SELECT query_id, doc_id FROM pool").fetchall()
    return {(q, d) for q, d in rows if is_overlap(q, d, share)}


def _labelled_by(db, annotator_id: int) -> set[tuple[str, str]]:
    rows = db.execute("SELECT DISTINCT query_id, doc_id FROM judgments WHERE annotator_id = ?", [annotator_id])
    return {tuple(r) for r in rows}


# --- overlap for annotators who arrive later -------------------------------------------------


def test_a_late_annotator_gets_every_overlap_copy_and_agreement_covers_them(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=3, per_query=10, overlap=0.2, batch_size=10)
    overlap = _overlap_entries(db, 0.2)
    assert len(overlap) >= 3  # the hash picks some of the 30 entries
    ada, _ = access.add_annotator(db, "ada")
    assert label_all(db, [ada.id]) == 30  # alone: every entry, once
    bob, _ = access.add_annotator(db, "bob")  # arrives after ada finished
    label_all(db, [bob.id], relevance=1)
    assert _labelled_by(db, bob.id) == overlap
    report = project_report(labels.latest_judgments(db, caller=OWNER), grades=tuple(GRADES))
    assert report.overlap is not None and report.overlap.n == len(overlap)
    # A third annotator finds nothing waiting: every overlap entry has its two copies.
    cy, _ = access.add_annotator(db, "cy")
    assert scheduling.next_item(db, cy.id) is None


def test_waiting_copies_come_before_new_work_and_never_go_back_to_their_first_holder(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=4, per_query=10, overlap=0.3, batch_size=10)
    ada, _ = access.add_annotator(db, "ada")
    for _ in range(10):  # ada alone labels the first query's batch
        item = scheduling.next_item(db, ada.id)
        labels.record_judgment(db, ada.id, item.query_id, item.doc_id, 2, 1.0)
    first_query = {d for q, d in _overlap_entries(db, 0.3) if q == item.query_id}
    bob, _ = access.add_annotator(db, "bob")
    first = scheduling.next_item(db, bob.id)
    queue = db.execute(
        "SELECT doc_id FROM assignments WHERE annotator_id = ? AND shown_order > 0", [bob.id]
    ).fetchall()
    assert first.query_id == item.query_id and {r[0] for r in queue} == first_query
    waiting = db.execute("SELECT count(*) FROM overlap_waiting").fetchone()[0]
    assert waiting == 0


def test_the_migration_finds_copies_already_waiting(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    db = make_project(path, n_queries=2, per_query=10, overlap=0.3, batch_size=10)
    ada, _ = access.add_annotator(db, "ada")
    label_all(db, [ada.id])
    expected = {tuple(r) for r in db.execute("SELECT query_id, doc_id FROM overlap_waiting")}
    assert expected == _overlap_entries(db, 0.3)
    # As an older database would have it: no table, then the migration runs again.
    db.execute("DROP TABLE overlap_waiting")
    db.execute("DROP TABLE sessions")
    db.execute("DROP TABLE preferences")
    db.execute("DROP TABLE candidates")  # made by later migrations, which then run again too
    for view in ("current_judgments", "current_adjudications", "current_human_verdicts", "current_judge_verdicts"):
        db.execute(f"DROP VIEW {view}")
    db.execute("DROP INDEX judge_verdicts_unit")
    db.execute("ALTER TABLE judge_verdicts DROP COLUMN raw_length")  # likewise
    db.execute("ALTER TABLE judge_cache DROP COLUMN raw_length")
    from labeler.store.migrations import MIGRATIONS
    from labeler.store.migrations.m08_sessions import SQL as _M_SESSIONS

    db.execute(f"PRAGMA user_version = {MIGRATIONS.index(_M_SESSIONS)}")  # the migration before it
    db.close()
    with connect(path) as again:
        assert {tuple(r) for r in again.execute("SELECT query_id, doc_id FROM overlap_waiting")} == expected


# --- admins ------------------------------------------------------------------------------------


def test_an_admin_who_labelled_once_is_never_pushed_overlap_copies(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=3, per_query=10, overlap=0.5, batch_size=10)
    boss, _ = access.add_annotator(db, "boss", role="admin")
    item = scheduling.next_item(db, boss.id)  # the admin chose to label once
    labels.record_judgment(db, boss.id, item.query_id, item.doc_id, 1, 1.0)
    release_holds(db, boss.id)
    before = db.execute("SELECT count(*) FROM assignments WHERE annotator_id = ?", [boss.id]).fetchone()[0]
    ann, _ = access.add_annotator(db, "ann")
    for _ in range(12):
        item = scheduling.next_item(db, ann.id)
        labels.record_judgment(db, ann.id, item.query_id, item.doc_id, 1, 1.0)
    after = db.execute("SELECT count(*) FROM assignments WHERE annotator_id = ?", [boss.id]).fetchone()[0]
    assert after == before


def test_released_holds_go_to_the_next_annotator_at_once(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=1, per_query=10, overlap=0.0, batch_size=10)
    boss, _ = access.add_annotator(db, "boss", role="admin")
    scheduling.next_item(db, boss.id)  # ten entries held for 30 minutes
    ann, _ = access.add_annotator(db, "ann")
    assert scheduling.next_item(db, ann.id) is None  # held: nothing for ann
    release_holds(db, boss.id)
    assert scheduling.next_item(db, ann.id) is not None
    assert label_all(db, [ann.id]) == 10


# --- kept sign-ins -----------------------------------------------------------------------------


def test_a_session_signs_in_until_sign_out(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db")
    ada, token = access.add_annotator(db, "ada")
    secret = sessions.open_session(db, ada)
    assert token not in secret and secret not in token
    stored = db.execute("SELECT secret_hash FROM sessions").fetchall()
    assert len(stored) == 1 and secret not in stored[0][0]
    user, fingerprint = sessions.resume_session(db, secret)
    assert user == ada and fingerprint == sessions.token_fingerprint(db, ada.id)
    assert sessions.resume_session(db, secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None
    assert sessions.resume_session(db, token) is None  # the token is no session secret
    sessions.end_session(db, secret)
    assert sessions.resume_session(db, secret) is None


@pytest.mark.parametrize("ending", ["deactivate", "new_token", "expire"])
def test_a_session_ends_with_deactivation_a_new_token_or_its_expiry(tmp_path: Path, ending: str) -> None:
    db = make_project(tmp_path / "p.db")
    ada, _ = access.add_annotator(db, "ada")
    secret = sessions.open_session(db, ada, hours=12)
    other = sessions.open_session(db, ada, hours=12)
    if ending == "deactivate":
        access.set_active(db, ada.id, False, caller=OWNER)
        access.set_active(db, ada.id, True, caller=OWNER)  # back, but the sessions are gone
    elif ending == "new_token":
        access.rotate_token(db, "ada")
    else:
        db.execute("UPDATE sessions SET expires_at = '2000-01-01T00:00:00.000000+00:00'")
    assert sessions.resume_session(db, secret) is None and sessions.resume_session(db, other) is None


def test_a_new_token_changes_the_fingerprint_the_app_checks(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db")
    ada, _ = access.add_annotator(db, "ada")
    before = sessions.token_fingerprint(db, ada.id)
    token = access.rotate_token(db, "ada")
    assert sessions.token_fingerprint(db, ada.id) != before
    assert token not in sessions.token_fingerprint(db, ada.id)


# --- preferences and admin issuing --------------------------------------------------------------


def test_highlighting_is_a_per_annotator_choice_that_persists(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db")
    ada, _ = access.add_annotator(db, "ada")
    bob, _ = access.add_annotator(db, "bob")
    assert sessions.preference(db, ada.id, "highlight") is True
    sessions.set_preference(db, "highlight", False, caller=ada)
    assert sessions.preference(db, ada.id, "highlight") is False
    assert sessions.preference(db, bob.id, "highlight") is True
    with pytest.raises(StoreError, match="not a bool"):
        sessions.set_preference(db, "highlight", "no", caller=ada)
    with pytest.raises(StoreError, match="command line"):
        sessions.set_preference(db, "highlight", True, caller=OWNER)


def test_only_an_admin_adds_annotators_and_reissues_tokens(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db")
    boss, _ = access.add_annotator(db, "boss", role="admin")
    bob, old = access.add_annotator(db, "bob")
    cy, token = access.issue_annotator(db, "cy", caller=boss)
    assert access.authenticate(db, token) == cy
    new = access.reissue_token(db, bob.id, caller=boss)
    assert access.authenticate(db, new) == bob and access.authenticate(db, old) is None
    with pytest.raises(StoreError, match="admin"):
        access.issue_annotator(db, "dan", caller=bob)
    with pytest.raises(StoreError, match="admin"):
        access.reissue_token(db, boss.id, caller=bob)

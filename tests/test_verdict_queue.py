"""The verdict queue (faithfulness and pairwise items) and its keyboard flow, checked in the database."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
import sqlite_utils
from app_fixtures import (
    JUDGE_NAME,
    MODEL_NAMES,
    Clock,
    Project,
    add_verdict_items,
    build_project,
)
from click.testing import CliRunner

from labeler.cli import cli
from labeler.store import StoreError, access, connect, labels
from labeler.store import verdict_queue as queue
from labeler.store.access import OWNER
from labeler.store.assign import is_overlap
from labeler.store.settings import enabled_tasks
from labeler.ui.flow import FLOWS


@pytest.fixture
def project(tmp_path: Path) -> Project:
    built = build_project(tmp_path)
    add_verdict_items(built.path, n_faithfulness=6, n_pairwise=30)
    return built


@pytest.fixture
def db(project: Project) -> sqlite_utils.Database:
    return connect(project.path)


def _assigned(db: sqlite_utils.Database, annotator_id: int, kind: str) -> list[tuple[str, int, int, str | None]]:
    return db.execute("SELECT item_id, batch, shown_order, slot_order FROM verdict_assignments "
                      "WHERE annotator_id = ? AND kind = ? ORDER BY shown_order", [annotator_id, kind]).fetchall()


def test_a_batch_is_batch_size_items_in_a_per_annotator_shuffle(db: sqlite_utils.Database, project: Project) -> None:
    labels.set_settings(db, {"batch_size": 4, "overlap": 0.0}, caller=OWNER)
    card = queue.next_card(db, project.annotator_id, "faithfulness")
    rows = _assigned(db, project.annotator_id, "faithfulness")
    assert [r[1] for r in rows] == [1, 1, 1, 1]
    assert {r[0] for r in rows} == {"f1", "f2", "f3", "f4"}  # the first four in import order
    shuffled = sorted(["f1", "f2", "f3", "f4"], key=lambda i: queue.shuffle_key(project.annotator_id, "faithfulness", i))
    assert [r[0] for r in rows] == shuffled
    assert card is not None and (card.item_id, card.position, card.batch_size) == (shuffled[0], 1, 4)
    # Without overlap, the other annotator gets the remaining two, never the same ones.
    queue.next_card(db, project.admin_id, "faithfulness")
    assert {r[0] for r in _assigned(db, project.admin_id, "faithfulness")} == {"f5", "f6"}


def test_overlap_items_go_to_two_annotators_and_the_rest_to_one(db: sqlite_utils.Database, project: Project) -> None:
    labels.set_settings(db, {"batch_size": 100, "overlap": 0.3}, caller=OWNER)
    queue.next_card(db, project.annotator_id, "pairwise")
    queue.next_card(db, project.admin_id, "pairwise")
    holders = Counter(r[0] for r in db.execute("SELECT item_id FROM verdict_assignments WHERE kind = 'pairwise'"))
    overlap = {f"p{n}" for n in range(1, 31) if is_overlap("pairwise", f"p{n}", 0.3)}
    assert 0 < len(overlap) < 30
    assert {item for item, k in holders.items() if k == 2} == overlap
    assert set(holders) == {f"p{n}" for n in range(1, 31)}
    assert all(k in (1, 2) for k in holders.values())


def test_slot_order_is_fixed_per_annotator_and_item_and_varies(db: sqlite_utils.Database, project: Project) -> None:
    labels.set_settings(db, {"batch_size": 100, "overlap": 1.0}, caller=OWNER)
    card = queue.next_card(db, project.annotator_id, "pairwise")
    queue.next_card(db, project.admin_id, "pairwise")
    mine = {r[0]: r[3] for r in _assigned(db, project.annotator_id, "pairwise")}
    theirs = {r[0]: r[3] for r in _assigned(db, project.admin_id, "pairwise")}
    assert set(Counter(mine.values())) == {"AB", "BA"}
    assert mine != theirs  # per annotator: the same item may stand the other way round for someone else
    assert all(queue.slot_order(project.annotator_id, i) == o for i, o in mine.items())
    assert card is not None
    left_is_a = mine[card.item_id] == "AB"
    assert card.left.startswith("ALPHA" if left_is_a else "BETA")
    assert card.right.startswith("BETA" if left_is_a else "ALPHA")


def test_a_slot_key_is_stored_as_the_response_and_the_order(db: sqlite_utils.Database, project: Project) -> None:
    clock, session, flow = Clock(), {}, FLOWS["pairwise"]
    stored = []
    for _ in range(6):
        card = flow.current(session, db, project.annotator_id, clock)
        clock.now += 2.5
        flow.choose(session, db, project.annotator_id, card.item_id, "left", clock)
        stored.append((card.item_id, card.slot_order, card.left))
    rows = db.execute("SELECT item_id, verdict, shown_order, seconds, rubric_hash FROM human_verdicts "
                      "WHERE annotator_id = ? ORDER BY id", [project.annotator_id]).fetchall()
    assert [r[0] for r in rows] == [s[0] for s in stored]
    for (item_id, verdict, order, seconds, rubric), (_, shown, left) in zip(rows, stored, strict=True):
        assert order == shown
        # "left" names the response shown on the left: A when the order was AB, B when it was BA.
        assert verdict == ("A" if left.startswith("ALPHA") else "B") == shown[0]
        assert seconds == 2.5 and rubric == queue.verdict_rubric_hash("pairwise")
    assert {s[1] for s in stored} == {"AB", "BA"}


def test_back_skip_and_notes_as_on_the_relevance_page(db: sqlite_utils.Database, project: Project) -> None:
    clock, session, flow = Clock(), {}, FLOWS["faithfulness"]
    first = flow.current(session, db, project.annotator_id, clock)
    flow.choose(session, db, project.annotator_id, first.item_id, "SUPPORTED", clock)
    second = flow.current(session, db, project.annotator_id, clock)
    session[flow.key("note")] = "unsure about context two"
    flow.skip(session, db, project.annotator_id, second.item_id, clock)
    third = flow.current(session, db, project.annotator_id, clock)
    assert third.item_id not in (first.item_id, second.item_id)
    assert flow.back(session, db, project.annotator_id, third.item_id, clock)
    again = flow.current(session, db, project.annotator_id, clock)
    assert again.item_id == second.item_id and session[flow.key("note")] == "unsure about context two"
    assert flow.back(session, db, project.annotator_id, second.item_id, clock)
    assert flow.current(session, db, project.annotator_id, clock).item_id == first.item_id
    flow.choose(session, db, project.annotator_id, first.item_id, "UNSUPPORTED", clock)
    assert queue.get_card(db, project.annotator_id, first.item_id).verdict == "UNSUPPORTED"
    rows = db.execute("SELECT item_id, verdict FROM human_verdicts WHERE annotator_id = ? ORDER BY id",
                      [project.annotator_id]).fetchall()
    assert rows == [(first.item_id, "SUPPORTED"), (first.item_id, "UNSUPPORTED")]  # append-only, latest counts
    skips = db.execute("SELECT item_id, note FROM verdict_skips").fetchall()
    assert skips == [(second.item_id, "unsure about context two")]


def test_a_key_for_an_item_no_longer_on_screen_is_dropped(db: sqlite_utils.Database, project: Project) -> None:
    clock, session, flow = Clock(), {}, FLOWS["faithfulness"]
    card = flow.current(session, db, project.annotator_id, clock)
    assert flow.choose(session, db, project.annotator_id, card.item_id, "SUPPORTED", clock) is not None
    assert flow.choose(session, db, project.annotator_id, card.item_id, "UNSUPPORTED", clock) is None
    assert db.execute("SELECT count(*) FROM human_verdicts").fetchone()[0] == 1


def test_skipped_items_come_back_last(db: sqlite_utils.Database, project: Project) -> None:
    labels.set_settings(db, {"batch_size": 2, "overlap": 0.0}, caller=OWNER)
    session, flow = {}, FLOWS["faithfulness"]
    skipped = flow.current(session, db, project.annotator_id)
    flow.skip(session, db, project.annotator_id, skipped.item_id)
    seen = []
    while (card := flow.current(session, db, project.annotator_id)) is not None and card.item_id != skipped.item_id:
        seen.append(card.item_id)
        flow.choose(session, db, project.annotator_id, card.item_id, "SUPPORTED")
    assert card is not None and len(seen) == 5  # every other item first, then the skipped one
    flow.choose(session, db, project.annotator_id, card.item_id, "SUPPORTED")
    assert flow.current(session, db, project.annotator_id) is None


def test_cards_carry_no_model_name_nor_judge_verdict(db: sqlite_utils.Database, project: Project) -> None:
    card = queue.next_card(db, project.annotator_id, "pairwise")
    text = repr(card)
    assert card is not None and not any(name in text for name in (*MODEL_NAMES, JUDGE_NAME))
    assert card.verdict is None  # the judge has a verdict on every item; the annotator sees only their own


def test_tasks_setting_closes_a_task_to_annotators_not_admins(db: sqlite_utils.Database, project: Project) -> None:
    assert enabled_tasks(db) == ("relevance", "faithfulness", "pairwise")  # default: every task with work
    labels.set_settings(db, {"tasks": "pairwise, relevance"}, caller=OWNER)
    assert enabled_tasks(db) == ("relevance", "pairwise")
    with pytest.raises(StoreError, match="not open"):
        queue.next_card(db, project.annotator_id, "faithfulness")
    assert queue.next_card(db, project.admin_id, "faithfulness") is not None
    with pytest.raises(StoreError, match="unknown task 'summaries'"):
        labels.set_settings(db, {"tasks": "summaries"}, caller=OWNER)
    with pytest.raises(StoreError, match="admin"):
        labels.set_settings(db, {"tasks": "relevance"}, caller=project.annotator_id)
    assert enabled_tasks(db) == ("relevance", "pairwise")


def test_label_settings_command_sets_and_shows_tasks(project: Project) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["label-settings", str(project.path), "tasks=faithfulness,relevance"])
    assert result.exit_code == 0, result.output
    assert "tasks = relevance,faithfulness" in result.output
    with connect(project.path) as db:
        assert enabled_tasks(db) == ("relevance", "faithfulness")
    bad = runner.invoke(cli, ["label-settings", str(project.path), "tasks=relevance,essay"])
    assert bad.exit_code != 0 and "unknown task 'essay'" in bad.output and "Traceback" not in bad.output


def test_a_deactivated_annotators_unjudged_copies_go_to_someone_else(db: sqlite_utils.Database, project: Project) -> None:
    labels.set_settings(db, {"batch_size": 100, "overlap": 0.0}, caller=OWNER)
    queue.next_card(db, project.annotator_id, "faithfulness")
    assert queue.next_card(db, project.admin_id, "faithfulness") is None
    access.set_active(db, project.annotator_id, False, caller=OWNER)
    assert queue.next_card(db, project.admin_id, "faithfulness") is not None
    assert len(_assigned(db, project.admin_id, "faithfulness")) == 6


def test_imported_human_verdicts_count_as_copies(db: sqlite_utils.Database, project: Project, tmp_path: Path) -> None:
    from labeler.judges.verdict_files import import_verdicts

    labels.set_settings(db, {"batch_size": 100, "overlap": 0.0}, caller=OWNER)
    path = tmp_path / "bob.jsonl"
    path.write_text('{"item_id": "f1", "verdict": "SUPPORTED"}\n{"item_id": "f2", "verdict": "UNSUPPORTED"}\n')
    import_verdicts(db, path, annotator="bob", caller=OWNER)
    queue.next_card(db, project.annotator_id, "faithfulness")
    queue.next_card(db, project.admin_id, "faithfulness")
    handed = {r[0] for who in (project.annotator_id, project.admin_id) for r in _assigned(db, who, "faithfulness")}
    assert handed == {"f3", "f4", "f5", "f6"}


def test_sign_out_forgets_every_verdict_page_item_and_unsaved_note(db: sqlite_utils.Database, project: Project) -> None:
    from labeler.ui import state

    session: dict = {}
    for task in ("faithfulness", "pairwise"):
        flow = FLOWS[task]
        card = flow.current(session, db, project.annotator_id)
        session[flow.key("note")] = f"bob's draft on {task}"
        second = (flow.choose(session, db, project.annotator_id, card.item_id, "SUPPORTED" if task == "faithfulness" else "tie"),
                  flow.current(session, db, project.annotator_id))[1]
        session[flow.key("note")] = "typed, not saved"
        assert flow.back(session, db, project.annotator_id, second.item_id)  # leaves a draft behind
        assert session[flow.key("drafts")]
    state.sign_out(session)
    assert not [key for key in session if key.startswith(("gp_faithfulness_", "gp_pairwise_"))]


def test_an_idle_hold_lapses_and_a_late_verdict_is_kept(db: sqlite_utils.Database, project: Project) -> None:
    labels.set_settings(db, {"batch_size": 100, "overlap": 0.0, "reservation_minutes": 30}, caller=OWNER)
    bob = queue.next_card(db, project.annotator_id, "faithfulness")
    with db.conn:  # bob's batch was handed out long ago ...
        db.execute("UPDATE verdict_assignments SET assigned_at = '2000-01-01T00:00:00.000000+00:00'")
    queue.record_verdict(db, project.annotator_id, bob.item_id, "SUPPORTED", 1.0)  # ... but he is at work
    assert queue.next_card(db, project.admin_id, "faithfulness") is None  # so his holds stand
    labels.set_settings(db, {"reservation_minutes": 0.01}, caller=OWNER)
    time.sleep(0.7)  # the hold is now 0.01 min = 0.6 s; bob's last verdict is older than that
    taken = queue.next_card(db, project.admin_id, "faithfulness")
    assert taken is not None
    ada = {r[0] for r in _assigned(db, project.admin_id, "faithfulness")}
    assert ada == {f"f{n}" for n in range(1, 7)} - {bob.item_id}  # the judged one stays bob's
    assert queue.next_card(db, project.annotator_id, "faithfulness") is None  # the rest left bob's queue
    late = sorted(ada)[0]
    queue.record_verdict(db, project.annotator_id, late, "UNSUPPORTED", 2.0)  # still on bob's screen: kept
    assert queue.get_card(db, project.annotator_id, late).verdict == "UNSUPPORTED"
    assert db.execute("SELECT shown_order > 0 FROM verdict_assignments WHERE item_id = ? AND annotator_id = ?",
                      [late, project.annotator_id]).fetchone()[0] == 1

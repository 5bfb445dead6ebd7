"""One keyboard flow for every task page: the same key sequence on relevance, faithfulness,
pairwise and the tasks on answers, with a dict for the session and a fake clock, checked in
the database."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlite_utils

from app_fixtures import QUERIES, Clock, Project, add_answers, add_verdict_items, build_project
from labeler.ui import state
from nugget_fixtures import add_nugget_answers
from labeler.ui.flow import FLOWS, Flow
from labeler.store import access, connect, sessions, StoreError
from labeler.store.access import OWNER
from labeler.store.vocabulary import TASKS

# Two choices each page's keys give, and where the page's answers and skips are written.
CHOICES = {"relevance": (2, 0), "faithfulness": ("SUPPORTED", "UNSUPPORTED"), "pairwise": ("left", "tie"),
           "claims": ("NOT_ONE_CLAIM", "SUPPORTED"), "correctness": ("CORRECT", "INCORRECT"),
           "answer-relevance": ("MISSES", "ADDRESSES"), "nuggets": ("SUPPORT", "NOT_SUPPORT")}
TABLES = {task: ("judgments", "skips") if task == "relevance" else ("human_verdicts", "verdict_skips") for task in CHOICES}
STALE = "That key came before the next item was on screen, so nothing was saved."


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """A relevance project with six faithfulness and six pairwise items, four answers (four
    correctness and four relevance items, twelve claims) and three answers to questions with two
    nuggets each (six support items), all open to annotators."""
    built = build_project(tmp_path)
    add_verdict_items(built.path, n_faithfulness=6, n_pairwise=6)
    add_answers(built.path, n=4)
    add_nugget_answers(built.path, list(QUERIES))
    return built


def _rows(db: sqlite_utils.Database, table: str) -> list[tuple[float | None, str]]:
    return db.execute(f"SELECT seconds, note FROM {table} ORDER BY id").fetchall()


def test_every_task_has_a_flow_of_its_own_keys() -> None:
    assert set(FLOWS) == set(TASKS) == set(CHOICES)
    assert all(isinstance(flow, Flow) and flow.task == task for task, flow in FLOWS.items())
    keys = {flow.key(part) for flow in FLOWS.values() for part in (*state.ITEM_PARTS, "drafts", "back", "skip")}
    assert len(keys) == len(TASKS) * (len(state.ITEM_PARTS) + 3)  # no two pages share a session key


@pytest.mark.parametrize("task", list(CHOICES))
def test_the_same_key_sequence_acts_alike_on_every_task_page(project: Project, task: str) -> None:
    db, flow, clock, session, who = connect(project.path), FLOWS[task], Clock(), {}, project.annotator_id
    answers, skips = TABLES[task]
    choice, other = CHOICES[task]
    # Show: the first item goes on screen and its clock starts; a rerun keeps both.
    first = flow.current(session, db, who, clock)
    assert first is not None
    key = flow.adapter.identity(first)
    assert (session[flow.key("current")], session[flow.key("shown_at")], session[flow.key("note")]) == (key, 100.0, "")
    clock.now = 104.5
    assert flow.adapter.identity(flow.current(session, db, who, clock)) == key and session[flow.key("shown_at")] == 100.0
    # A key: the answer is written with the time on screen and the note typed, and the page moves on.
    session[flow.key("note")] = "  first note "
    assert flow.choose(session, db, who, key, choice, clock) is not None
    assert _rows(db, answers) == [(4.5, "first note")]
    assert flow.adapter.mark(flow.adapter.get(db, who, key)) == (choice, "first note")
    assert flow.key("current") not in session
    # A stale key (a second tap for the item just done) is dropped with a message.
    assert flow.choose(session, db, who, key, other, clock) is None
    assert state.pop_flash(session) == STALE and len(_rows(db, answers)) == 1
    second = flow.current(session, db, who, clock)
    assert second is not None and flow.adapter.identity(second) != key
    second_key = flow.adapter.identity(second)
    # Back: the first item again, with its own saved note; the note typed on the second is a draft.
    session[flow.key("note")] = "typed on the second, not saved"
    assert flow.back(session, db, who, second_key, clock)
    assert flow.adapter.identity(flow.current(session, db, who, clock)) == key
    assert session[flow.key("note")] == "first note"
    assert session[flow.key("drafts")] == {(who, second_key): "typed on the second, not saved"}
    assert not flow.back(session, db, who, key, clock)
    assert state.pop_flash(session) == "There is no earlier item to go back to."
    # Changed in another window meanwhile: the key saves nothing, the page shows the change.
    flow.adapter.record(db, who, key, other, 1.0, "from the other tab")
    assert flow.choose(session, db, who, key, choice, clock) is None
    assert state.pop_flash(session) == (
        f"Your {flow.adapter.answer} on this item changed since it was shown (in another window?), so that key saved "
        f"nothing. The item now shows your latest {flow.adapter.answer}; press the key again.")
    assert session[flow.key("note")] == "from the other tab" and len(_rows(db, answers)) == 2
    assert flow.choose(session, db, who, key, choice, clock) is not None
    # The draft comes back with its item; a skip keeps it as the skip's note.
    assert flow.adapter.identity(flow.current(session, db, who, clock)) == second_key
    assert session[flow.key("note")] == "typed on the second, not saved"
    assert not session[flow.key("drafts")]
    clock.now = 110.0
    flow.skip(session, db, who, second_key, clock)
    assert state.pop_flash(session) == "Skipped."
    assert _rows(db, skips)[-1][1] == "typed on the second, not saved"
    third = flow.current(session, db, who, clock)
    assert third is not None and flow.adapter.identity(third) not in (key, second_key)


@pytest.mark.parametrize("task", list(CHOICES))
def test_a_key_from_a_replaced_token_is_refused_on_every_task_page(project: Project, task: str) -> None:
    db, flow, session, who = connect(project.path), FLOWS[task], {}, project.annotator_id
    session[state.TOKEN_FP] = sessions.token_fingerprint(db, who)
    shown = flow.current(session, db, who)
    assert shown is not None
    access.reissue_token(db, who, caller=OWNER)  # e.g. by an admin, while the page is open
    for act in (lambda: flow.choose(session, db, who, flow.adapter.identity(shown), CHOICES[task][0]),
                lambda: flow.skip(session, db, who, flow.adapter.identity(shown)),
                lambda: flow.back(session, db, who, flow.adapter.identity(shown))):
        with pytest.raises(StoreError, match="a new access token was issued"):
            act()
    assert _rows(db, TABLES[task][0]) == [] and _rows(db, TABLES[task][1]) == []


def test_the_key_guard_covers_every_task_page_and_ships_with_the_package() -> None:
    import fnmatch
    import tomllib

    from labeler.ui import key_guard

    script = key_guard.script()
    assert script.startswith("<script>") and script.endswith("})();\n</script>")
    assert not [name for name in ("__BUTTONS__", "__NOTES__", "__MARK__") if name in script]
    for task, flow in FLOWS.items():
        assert f'[class*=\\"st-key-{state.choice_key(task, "")}\\"] button' in script
        assert all(f".st-key-{flow.key(part)}" in script for part in ("back", "skip", "note"))
    assert f'var mark = "{key_guard.HANDLED_MARK}";' in script
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["labeler"]
    assert any(fnmatch.fnmatch("ui/static/key_guard.js", pattern) for pattern in shipped)

"""A project whose write lock another process holds past the busy timeout.

The store says so with :class:`StoreBusy` (nothing written), the command line in one line,
and the labelling app keeps every key press and saves it, in order and once, when the lock
is free. The lock holder is a real second connection (another process in the CLI test).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from app_fixtures import HOLDER, Project, add_verdict_items, function_test, sign_in, signed_in_as
from labeler.ui import flow, state
from labeler.retrieval import scheduling
from labeler.ui.flow import RELEVANCE
from labeler.cli import cli
from labeler.store import StoreBusy, StoreError, connect
from labeler.store import access, labels
from labeler.store.vocabulary import OWNER
from labeler.store.connection import BUSY_TIMEOUT_ENV, busy_timeout


@pytest.fixture
def project(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    """The shared project; a write waits 0.2 s for another writer's lock."""
    monkeypatch.setenv(BUSY_TIMEOUT_ENV, "0.2")
    return project


@contextmanager
def locked(path: Path) -> Iterator[sqlite3.Connection]:
    """Hold the project's write lock (one row written, not committed) for the block."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO settings (key, value) VALUES ('held', '1')")
    try:
        yield conn
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def _count(path: Path, table: str) -> int:
    with connect(path) as db:
        return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_busy_timeout_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BUSY_TIMEOUT_ENV, raising=False)
    assert busy_timeout() == 30.0
    monkeypatch.setenv(BUSY_TIMEOUT_ENV, "1.5")
    assert busy_timeout() == 1.5
    monkeypatch.setenv(BUSY_TIMEOUT_ENV, "soon")
    with pytest.raises(StoreError, match="GOLDPOOL_BUSY_TIMEOUT='soon'"):
        busy_timeout()


def test_a_write_past_the_busy_timeout_is_store_busy_and_writes_nothing(project: Project) -> None:
    db = connect(project.path)
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 200
    item = scheduling.next_item(db, project.annotator_id)
    with locked(project.path):
        began = time.monotonic()
        with pytest.raises(StoreBusy, match=r"project\.db: the project is busy"):
            labels.record_judgment(db, project.annotator_id, item.query_id, item.doc_id, 2, 1.0)
        assert time.monotonic() - began < 5
        assert not db.conn.in_transaction
    assert _count(project.path, "judgments") == 0
    # The connection is usable as soon as the lock is free: the same call now succeeds.
    labels.record_judgment(db, project.annotator_id, item.query_id, item.doc_id, 2, 1.0)
    assert _count(project.path, "judgments") == 1


def test_cli_says_in_one_line_that_the_project_is_busy(project: Project) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(project.path), "20"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        result = CliRunner().invoke(cli, ["add-annotator", str(project.path), "carol"])
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "the project is busy" in lines[0] and "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    with connect(project.path) as db:
        assert "carol" not in {a.name for a in access.list_annotators(db, caller=OWNER)}


def test_a_grade_pressed_while_busy_is_kept_and_saved_once(project: Project) -> None:
    db = connect(project.path)
    session: dict = {}
    who = project.annotator_id
    first = RELEVANCE.current(session, db, who)
    session[state.NOTE] = "typed while busy"
    with locked(project.path):
        assert RELEVANCE.choose(session, db, who, (first.query_id, first.doc_id), 3) is None
        assert flow.pending(session) == 1
        assert session[state.FLASH] == flow.BUSY_MESSAGE
        # A second tap of the key for the same showing is dropped, not queued twice.
        assert RELEVANCE.choose(session, db, who, (first.query_id, first.doc_id), 3) is None
        assert flow.pending(session) == 1
        assert flow.flush_pending(session, db) == 1  # still busy: kept, not dropped
    assert _count(project.path, "judgments") == 0
    assert flow.flush_pending(session, db) == 0
    assert flow.flush_pending(session, db) == 0  # flushing again writes nothing twice
    with connect(project.path) as check:
        rows = check.execute("SELECT query_id, doc_id, relevance, note FROM judgments").fetchall()
    assert rows == [(first.query_id, first.doc_id, 3, "typed while busy")]
    assert (RELEVANCE.current(session, db, who).doc_id) != first.doc_id


def test_kept_presses_are_saved_in_the_order_pressed(project: Project) -> None:
    db = connect(project.path)
    who = project.annotator_id
    items = []
    for _ in range(3):  # three items handed out and on this annotator's list
        session: dict = {}
        item = RELEVANCE.current(session, db, who)
        items.append(item)
        labels.record_skip(db, who, item.query_id, item.doc_id, 1.0)
    session = {}
    with locked(project.path):
        for grade, item in zip((1, 3, 0), items):
            session[state.CURRENT] = (item.query_id, item.doc_id)
            session[state.task_key("relevance", "shown_mark")] = (None, "")
            RELEVANCE.choose(session, db, who, (item.query_id, item.doc_id), grade)
        assert flow.pending(session) == 3
    assert flow.flush_pending(session, db) == 0
    with connect(project.path) as check:
        rows = check.execute("SELECT doc_id, relevance FROM judgments ORDER BY id").fetchall()
    assert rows == [(items[0].doc_id, 1), (items[1].doc_id, 3), (items[2].doc_id, 0)]


def test_a_skip_made_while_busy_keeps_its_note(project: Project) -> None:
    db = connect(project.path)
    session: dict = {}
    item = RELEVANCE.current(session, db, project.annotator_id)
    session[state.NOTE] = "unclear question"
    with locked(project.path):
        RELEVANCE.skip(session, db, project.annotator_id, (item.query_id, item.doc_id))
    assert flow.flush_pending(session, db) == 0
    with connect(project.path) as check:
        assert check.execute("SELECT doc_id, note FROM skips").fetchall() == [(item.doc_id, "unclear question")]


def test_app_keeps_a_grade_pressed_while_busy_and_saves_it_after(project: Project) -> None:
    at = sign_in(project.annotator_token)
    shown = at.session_state[state.CURRENT]
    with locked(project.path):
        at.button(key=state.grade_key(2)).click().run()
        assert not at.exception
        assert flow.BUSY_MESSAGE in [i.value.split(" 1 key press")[0] for i in at.info]
        assert _count(project.path, "judgments") == 0
        at.run()  # the page redraws (a retry) while still busy: still kept, no error
        assert not at.exception and at.session_state[state.PENDING]
    at.run()  # the retry after the lock is free saves it and moves on
    assert not at.exception
    assert state.PENDING not in at.session_state
    with connect(project.path) as db:
        rows = db.execute("SELECT query_id, doc_id, relevance FROM judgments").fetchall()
    assert rows == [(*shown, 2)]
    assert at.session_state[state.CURRENT] != shown


class _CutShort(Exception):
    """Stands for a run replaced by the next timed one while it waits for the lock."""


def test_a_retry_cut_short_while_it_waits_for_the_lock_has_already_said_presses_are_kept(
    project: Project, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The page retries every second; a retry that waits for the lock can be replaced by the
    # next one before it ends. The notice must be on the page before that wait, or the page
    # stays blank for as long as the retries keep replacing each other.
    at = sign_in(project.annotator_token)
    with locked(project.path):
        at.button(key=state.grade_key(2)).click().run()
        assert at.session_state[state.PENDING]

        def cut_short(session: object, db: object) -> int:
            raise _CutShort

        monkeypatch.setattr(flow, "flush_pending", cut_short)
        at.run()
    assert [i.value for i in at.info] == [flow.BUSY_MESSAGE + " 1 key press waiting."]
    assert len(at.session_state[state.PENDING]) == 1


def test_a_sign_in_while_busy_lets_the_annotator_in_without_keeping_it(project: Project) -> None:
    """The kept sign-in's row cannot be written while another process holds the lock: the
    annotator is let in all the same, told that a reload will ask for the token again."""
    session: dict = {}
    with connect(project.path) as db, locked(project.path):
        user = state.sign_in(session, db, project.annotator_token)
    assert user is not None and session[state.USER] == user
    assert session[state.SIGN_IN_NOTICE] == state.UNKEPT_NOTICE
    assert state.SESSION_SECRET not in session
    with connect(project.path) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
        assert state.sign_in(session, db, project.annotator_token) is not None  # free again: kept, no notice
        assert state.SIGN_IN_NOTICE not in session and session[state.SESSION_SECRET]


@pytest.mark.parametrize(("task", "choice", "stored"), [("faithfulness", "SUPPORTED", "SUPPORTED"),
                                                        ("pairwise", "tie", "TIE")])
def test_a_verdict_pressed_while_busy_is_kept_and_saved_once(project: Project, task: str, choice: str,
                                                             stored: str) -> None:
    add_verdict_items(project.path, judge=False)
    db = connect(project.path)
    session: dict = {}
    pages, who = flow.FLOWS[task], project.annotator_id
    first = pages.current(session, db, who)
    session[pages.key("note")] = "typed while busy"
    with locked(project.path):
        assert pages.choose(session, db, who, first.item_id, choice) is None
        assert flow.pending(session) == 1 and session[state.FLASH] == flow.BUSY_MESSAGE
        assert pages.choose(session, db, who, first.item_id, choice) is None  # a second tap: dropped
        assert flow.pending(session) == 1
        assert flow.flush_pending(session, db) == 1
    assert _count(project.path, "human_verdicts") == 0
    assert flow.flush_pending(session, db) == 0
    assert flow.flush_pending(session, db) == 0
    with connect(project.path) as check:
        rows = check.execute("SELECT item_id, verdict, note FROM human_verdicts").fetchall()
    assert rows == [(first.item_id, stored, "typed while busy")]
    assert pages.current(session, db, who).item_id != first.item_id


def _faithfulness_page() -> None:
    from labeler import app

    app.faithfulness_page()


def test_verdict_page_keeps_a_verdict_pressed_while_busy_and_saves_it_after(project: Project) -> None:
    add_verdict_items(project.path, judge=False)
    at = function_test(_faithfulness_page, timeout=30)
    signed_in_as(at, project.path, project.annotator_token)
    at.run()
    shown = at.session_state[state.task_key("faithfulness", "current")]
    with locked(project.path):
        at.button(key=state.choice_key("faithfulness", "UNSUPPORTED")).click().run()
        assert not at.exception
        assert flow.BUSY_MESSAGE in [i.value.split(" 1 key press")[0] for i in at.info]
        at.run()
        assert not at.exception and at.session_state[state.PENDING]
    at.run()
    assert not at.exception
    assert state.PENDING not in at.session_state
    with connect(project.path) as db:
        assert db.execute("SELECT item_id, verdict FROM human_verdicts").fetchall() == [(shown, "UNSUPPORTED")]
    assert at.session_state[state.task_key("faithfulness", "current")] != shown

"""The labelling app through Streamlit's AppTest: sign-in, the labelling flow, roles, escaping.

Every flow is checked in the database, not only on screen.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import sqlite_utils
from sklearn.metrics import cohen_kappa_score
from streamlit.proto.TextInput_pb2 import TextInput as TextInputProto
from streamlit.testing.v1 import AppTest

from labeler.retrieval import scheduling
from labeler.ui import state
from labeler.ui.flow import RELEVANCE
from labeler.text import highlight, query_terms
from labeler.ui.pages import ADMIN_REFUSAL
from labeler.store import connect, now
from labeler.store import access, labels
from labeler.store.rubric import current_rubric
from labeler.store.vocabulary import OWNER
from labeler.store.labels import Item
from app_fixtures import APP, QUERIES, SOURCE_MARKERS, XSS_PAYLOAD, Project, add_judgments, app_test, fake_streamlit, open_page, page_text, press, sign_in

ADMIN_PAGES = ("progress_page", "adjudicate_page", "annotators_page", "rubric_page", "calibration_page")


def _on_screen(at: AppTest) -> tuple[str, str]:
    return at.session_state[state.CURRENT]


def test_missing_database_shows_an_error_page(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(state.DB_ENV_VAR, str(tmp_path / "absent.db"))
    at = app_test().run()
    assert "absent.db" in at.error[0].value
    assert len(at.text_input) == 0
    assert not at.exception


def test_no_database_given_shows_how_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(state.DB_ENV_VAR, raising=False)
    at = app_test().run()
    assert "goldpool serve DB" in at.error[0].value
    assert len(at.text_input) == 0
    assert not at.exception


def test_wrong_token_is_refused(project: Project) -> None:
    at = sign_in("not-a-token")
    assert "not recognised" in at.error[0].value
    assert state.USER not in at.session_state
    assert at.text_input(key=state.TOKEN_INPUT).label == "Access token"
    assert at.text_input(key=state.TOKEN_INPUT).proto.type == TextInputProto.PASSWORD
    assert not at.exception


def test_label_five_go_back_change_one_and_skip(project: Project) -> None:
    at = sign_in(project.annotator_token)
    assert state.USER in at.session_state
    grades = [2, 0, 3, 1, 2]
    labelled: dict[tuple[str, str], int] = {}
    for grade in grades:
        labelled[_on_screen(at)] = grade
        press(at, state.grade_key(grade))
    last = list(labelled)[-1]
    press(at, state.BACK)
    assert _on_screen(at) == last
    assert "Your label: 2 · Partly answers" in [c.value for c in at.caption]
    press(at, state.grade_key(0))
    labelled[last] = 0
    skipped = _on_screen(at)
    press(at, state.SKIP)
    assert _on_screen(at) not in labelled and _on_screen(at) != skipped

    with connect(project.path) as db:
        rows = list(db["judgments"].rows_where("annotator_id = ?", [project.annotator_id], order_by="id"))
        skips = list(db["skips"].rows_where("annotator_id = ?", [project.annotator_id]))
        latest = {(j.query_id, j.doc_id): j.relevance for j in labels.latest_judgments(db, caller=OWNER) if j.annotator == "bob"}
    assert len(rows) == 6
    assert [r["relevance"] for r in rows] == [*grades, 0]
    assert (rows[-1]["query_id"], rows[-1]["doc_id"]) == last
    assert latest == labelled
    assert all(r["seconds"] is not None and r["seconds"] >= 0 for r in rows)
    assert [(s["query_id"], s["doc_id"]) for s in skips] == [skipped]
    assert skips[0]["seconds"] is not None
    assert not at.exception


def test_note_is_stored_with_the_label(project: Project) -> None:
    at = sign_in(project.annotator_token)
    query_id, doc_id = _on_screen(at)
    at.text_input(key=state.NOTE).input("mentions 100 C only").run()
    press(at, state.grade_key(1))
    with connect(project.path) as db:
        row = next(db["judgments"].rows_where("annotator_id = ?", [project.annotator_id]))
    stored = (row["query_id"], row["doc_id"], row["relevance"], row["note"])
    assert stored == (query_id, doc_id, 1, "mentions 100 C only")
    assert not at.exception


def test_a_typed_note_survives_skip_and_back(project: Project) -> None:
    session: dict[str, object] = {}
    with connect(project.path) as db:
        first = RELEVANCE.current(session, db, project.annotator_id)
        RELEVANCE.choose(session, db, project.annotator_id, (first.query_id, first.doc_id), 1)
        second = RELEVANCE.current(session, db, project.annotator_id)
        session[state.NOTE] = "half-typed thought"
        assert RELEVANCE.back(session, db, project.annotator_id, (second.query_id, second.doc_id))
        assert session[state.NOTE] == ""  # the first item's own (empty) note, not the draft
        RELEVANCE.choose(session, db, project.annotator_id, (first.query_id, first.doc_id), 2)
        again = RELEVANCE.current(session, db, project.annotator_id)
        assert (again.query_id, again.doc_id) == (second.query_id, second.doc_id)
        assert session[state.NOTE] == "half-typed thought"  # the draft came back with its item
        session[state.NOTE] = "ambiguous: asks two things"
        RELEVANCE.skip(session, db, project.annotator_id, (second.query_id, second.doc_id))
        skip = next(db["skips"].rows_where("annotator_id = ?", [project.annotator_id]))
        shown_again = labels.get_item(db, project.annotator_id, second.query_id, second.doc_id)
    assert (skip["doc_id"], skip["note"]) == (second.doc_id, "ambiguous: asks two things")
    assert shown_again.note == "ambiguous: asks two things"


def test_first_item_has_the_rubric_at_hand_and_nothing_before_it(project: Project) -> None:
    at = sign_in(project.annotator_token)
    first = _on_screen(at)
    with connect(project.path) as db:
        rubric = current_rubric(db)
    assert [p.proto.popover.label for p in at.get("popover")] == ["Rubric"]
    assert rubric.text.strip() in [m.value.strip() for m in at.markdown]
    assert f"Rubric version {rubric.hash}" in [c.value for c in at.caption]
    press(at, state.BACK)
    assert _on_screen(at) == first
    assert [t.value for t in at.toast] == ["There is no earlier item to go back to."]
    assert not at.exception


def _show_item(at: AppTest, doc_id: str) -> None:
    """Skip forward until ``doc_id`` is on screen (order is shuffled per annotator)."""
    for _ in range(len(QUERIES) * 5):
        if _on_screen(at)[1] == doc_id:
            return
        press(at, state.SKIP)
    pytest.fail(f"{doc_id} never came up")


def test_script_payload_in_a_chunk_is_escaped(project: Project) -> None:
    at = sign_in(project.annotator_token)
    _show_item(at, "q1-d3")
    chunk = next(h.proto.body for h in at.html if "gp-chunk" in h.proto.body)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in chunk
    assert "&amp; more" in chunk
    assert "<mark>Water</mark>" in chunk  # the query term is still marked
    text = page_text(at)
    # The page's own script (keys and cookie) is the only one; the chunk brings none.
    assert "<script>alert" not in text and "<img" not in text
    assert XSS_PAYLOAD not in text
    assert not at.exception


def test_labelling_page_shows_no_source_rank_or_score(project: Project) -> None:
    at = sign_in(project.annotator_token)
    for _ in range(2):
        query_id, doc_id = _on_screen(at)
        with connect(project.path) as db:  # someone else's label must not show either
            db["judgments"].insert(
                {"query_id": query_id, "doc_id": doc_id, "annotator_id": project.admin_id, "relevance": 3,
                 "note": "admin-only-note", "at": now(), "seconds": 1.0}
            )
        text = page_text(at.run()).lower()
        for marker in (*SOURCE_MARKERS, "admin-only-note", "rank", "score", "retriev"):
            assert marker not in text
        press(at, state.grade_key(1))
    assert not at.exception


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_annotator_is_refused_admin_pages(project: Project, page: str) -> None:
    at = open_page(project.path, page, project.annotator_token)
    assert [e.value for e in at.error] == [ADMIN_REFUSAL]
    assert len(at.title) == 0
    assert not at.exception


#: Each admin page on a project with no label yet: its title and what it says about its data.
EMPTY_ADMIN_PAGES = {
    "progress_page": ("Progress", "No item has labels from two annotators yet."),
    "adjudicate_page": ("Adjudicate", "No disagreements are waiting."),
    "annotators_page": ("Annotators", "bob"),
    "rubric_page": ("Rubric", "Judge the chunk against the query alone"),
    "calibration_page": ("Calibration", "No item has been labelled by two annotators yet"),
}


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_admin_opens_admin_pages(project: Project, page: str) -> None:
    at = open_page(project.path, page, project.admin_token)
    title, says = EMPTY_ADMIN_PAGES[page]
    assert len(at.error) == 0
    assert [t.value for t in at.title] == [title]
    assert says in page_text(at)
    assert not at.exception


def test_admin_deactivates_an_annotator(project: Project) -> None:
    bob = sign_in(project.annotator_token)
    at = open_page(project.path, "annotators_page", project.admin_token)
    at.toggle(key=state.active_key(project.annotator_id)).set_value(False).run()
    with connect(project.path) as db:
        assert [a.active for a in access.list_annotators(db, caller=OWNER) if a.name == "bob"] == [False]
    press(bob, state.grade_key(2))  # the next click finds the token deactivated
    assert state.USER not in bob.session_state
    assert "deactivated" in bob.error[0].value
    assert not at.exception and not bob.exception


def test_admin_saves_a_new_rubric_version(project: Project) -> None:
    at = open_page(project.path, "rubric_page", project.admin_token)
    text = "# Rubric\n\n3 means the chunk alone answers the query."
    at.text_area(key=state.RUBRIC_TEXT).input(text)
    at.button(key=state.RUBRIC_SAVE).click().run()
    with connect(project.path) as db:
        current = current_rubric(db)
    assert current.text == text
    assert current.hash == hashlib.sha256(text.encode()).hexdigest()[:12]
    assert not at.exception


# Two annotators on four items of two queries: they agree on three (raw agreement 3/4).
BOB = {("q1", "q1-d1"): 0, ("q1", "q1-d2"): 1, ("q2", "q2-d1"): 2, ("q2", "q2-d2"): 3}
ADA = {("q1", "q1-d1"): 0, ("q1", "q1-d2"): 1, ("q2", "q2-d1"): 3, ("q2", "q2-d2"): 3}


def test_progress_page_shows_agreement_on_the_overlap(project: Project) -> None:
    add_judgments(project.path, project.annotator_id, BOB)
    add_judgments(project.path, project.admin_id, ADA)
    at = open_page(project.path, "progress_page", project.admin_token)
    people, _, agreement = (d.value for d in at.dataframe)
    assert sorted(people["annotator"]) == ["ada", "bob"]
    assert list(people["median s/label"]) == ["4.0", "4.0"]
    overall = agreement.iloc[0]
    kappa = cohen_kappa_score(list(BOB.values()), list(ADA.values()), weights="quadratic")
    assert overall["n"] == 4
    assert overall["raw agreement"].startswith(f"{3 / 4:.3f} [")
    assert overall["kappa (quadratic)"].startswith(f"{kappa:.3f} [")
    assert list(agreement["annotators"]) == ["all pairs", "ada & bob"]
    # One pair only: its row is the pooled row, interval included (same data, same seed).
    pair = agreement.iloc[1]
    assert (pair["n"], pair["raw agreement"], pair["kappa (quadratic)"]) == (
        overall["n"], overall["raw agreement"], overall["kappa (quadratic)"]
    )
    assert not at.exception


def test_admin_records_a_final_grade_as_its_own_row(project: Project) -> None:
    add_judgments(project.path, project.annotator_id, BOB)
    add_judgments(project.path, project.admin_id, ADA)
    at = open_page(project.path, "adjudicate_page", project.admin_token)
    prefix = state.adjudication_key("q2", "q2-d1")
    assert [r.key for r in at.radio] == [f"{prefix}:grade"]  # the one disagreement
    at.radio(key=f"{prefix}:grade").set_value(3)
    at.text_input(key=f"{prefix}:note").input("answer is in the first sentence")
    at.button(key=f"{prefix}:save").click().run()
    with connect(project.path) as db:
        rows = list(db["adjudications"].rows)
        n_judgments = db["judgments"].count
    assert [(r["query_id"], r["doc_id"], r["annotator_id"], r["relevance"], r["note"]) for r in rows] == [
        ("q2", "q2-d1", project.admin_id, 3, "answer is in the first sentence")
    ]
    assert n_judgments == len(BOB) + len(ADA)
    assert len(at.radio) == 0  # the queue is empty now
    assert "final grade 3 recorded" in at.info[0].value
    assert not at.exception


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_seconds_run_from_first_render_to_key_press(project: Project) -> None:
    session: dict[str, object] = {}
    clock = FakeClock()
    with connect(project.path) as db:
        first = RELEVANCE.current(session, db, project.annotator_id, clock)
        clock.now += 1.5
        assert RELEVANCE.current(session, db, project.annotator_id, clock) == first  # a rerun keeps the clock
        clock.now += 1.0
        RELEVANCE.choose(session, db, project.annotator_id, (first.query_id, first.doc_id), 2, clock)
        second = RELEVANCE.current(session, db, project.annotator_id, clock)
        clock.now += 4.0
        assert RELEVANCE.back(session, db, project.annotator_id, (second.query_id, second.doc_id), clock)
        clock.now += 0.25  # back on the first item: its clock restarted when it was shown again
        RELEVANCE.choose(session, db, project.annotator_id, (first.query_id, first.doc_id), 3, clock)
        rows = list(db["judgments"].rows_where("annotator_id = ?", [project.annotator_id], order_by="id"))
    assert (first.query_id, first.doc_id) != (second.query_id, second.doc_id)
    assert [(r["doc_id"], r["relevance"], r["seconds"]) for r in rows] == [
        (first.doc_id, 2, 1.5 + 1.0),
        (first.doc_id, 3, 0.25),
    ]


def _handled_marks(at: AppTest) -> list[str]:
    return [h.proto.body for h in at.sidebar.html if 'class="gp-keys"' in h.proto.body]


def test_every_item_key_is_counted_in_a_mark_drawn_after_the_page(project: Project) -> None:
    """The browser's key guard waits for this count before it lets held keys go on."""
    at = sign_in(project.annotator_token)
    assert _handled_marks(at) == ['<span class="gp-keys" data-keys="0" hidden></span>']
    for pressed, key in enumerate([state.grade_key(2), state.BACK, state.SKIP, state.grade_key(0)], start=1):
        press(at, key)
        assert _handled_marks(at) == [f'<span class="gp-keys" data-keys="{pressed}" hidden></span>']
    assert at.session_state[state.KEYS_HANDLED] == 4


def test_a_key_for_an_item_no_longer_on_screen_is_dropped(project: Project) -> None:
    session: dict[str, object] = {}
    with connect(project.path) as db:
        first = RELEVANCE.current(session, db, project.annotator_id)
        assert RELEVANCE.choose(session, db, project.annotator_id, (first.query_id, first.doc_id), 2) is not None
        # A second key drawn with the same item arrives before the next item is shown.
        assert RELEVANCE.choose(session, db, project.annotator_id, (first.query_id, first.doc_id), 0) is None
        assert "nothing was saved" in state.pop_flash(session)
        RELEVANCE.skip(session, db, project.annotator_id, (first.query_id, first.doc_id))
        assert RELEVANCE.current(session, db, project.annotator_id) != first
        rows = list(db["judgments"].rows_where("annotator_id = ?", [project.annotator_id]))
        skips = db["skips"].count
    assert [(r["doc_id"], r["relevance"]) for r in rows] == [(first.doc_id, 2)]
    assert skips == 0


def test_one_showing_takes_one_label_even_if_the_session_goes_back(project: Project) -> None:
    # A key handled while the page is redrawn can meet the session as it was before the
    # previous key; the database, which never goes back, refuses the second label.
    session: dict[str, object] = {}
    with connect(project.path) as db:
        first = RELEVANCE.current(session, db, project.annotator_id)
        before = dict(session)
        assert RELEVANCE.choose(session, db, project.annotator_id, (first.query_id, first.doc_id), 3) is not None
        session.clear()
        session.update(before)
        assert RELEVANCE.choose(session, db, project.annotator_id, (first.query_id, first.doc_id), 0) is None
        rows = list(db["judgments"].rows_where("annotator_id = ?", [project.annotator_id]))
    assert [(r["doc_id"], r["relevance"]) for r in rows] == [(first.doc_id, 3)]


def _hand_bobs_holds_to_ada(db: sqlite_utils.Database, project: Project) -> None:
    """Let every hold lapse and have ada ask for work, so bob's unlabelled items go to her."""
    db.execute("UPDATE reservations SET expires_at = '2000-01-01T00:00:00+00:00'")
    assert scheduling.next_item(db, project.admin_id) is not None


def _order(db: sqlite_utils.Database, annotator_id: int, query_id: str, doc_id: str) -> int:
    return db.execute(
        "SELECT shown_order FROM assignments WHERE annotator_id = ? AND query_id = ? AND doc_id = ?",
        [annotator_id, query_id, doc_id],
    ).fetchone()[0]


def test_a_label_sent_after_the_hold_went_to_someone_else_is_kept(project: Project) -> None:
    session: dict[str, object] = {}
    clock = FakeClock()
    with connect(project.path) as db:
        labels.set_settings(db, {"overlap": 0.0}, caller=OWNER)  # every entry single-label, so it is held
        shown = RELEVANCE.current(session, db, project.annotator_id, clock)
        _hand_bobs_holds_to_ada(db, project)
        assert _order(db, project.annotator_id, shown.query_id, shown.doc_id) < 0  # it left bob's queue
        session[state.NOTE] = "chunk contradicts itself"
        clock.now += 2.0
        rerun = RELEVANCE.current(session, db, project.annotator_id, clock)  # the note field's rerun
        assert (rerun.query_id, rerun.doc_id) == (shown.query_id, shown.doc_id)
        assert session[state.NOTE] == "chunk contradicts itself"
        clock.now += 3.0
        row_id = RELEVANCE.choose(session, db, project.annotator_id, (shown.query_id, shown.doc_id), 3, clock)
        assert row_id is not None
        row = db["judgments"].get(row_id)
    stored = (row["annotator_id"], row["query_id"], row["doc_id"], row["relevance"], row["note"], row["seconds"])
    assert stored == (project.annotator_id, shown.query_id, shown.doc_id, 3, "chunk contradicts itself", 2.0 + 3.0)


def test_a_skip_sent_after_the_hold_went_to_someone_else_keeps_its_note(project: Project) -> None:
    session: dict[str, object] = {}
    with connect(project.path) as db:
        labels.set_settings(db, {"overlap": 0.0}, caller=OWNER)
        shown = RELEVANCE.current(session, db, project.annotator_id)
        _hand_bobs_holds_to_ada(db, project)
        session[state.NOTE] = "needs the table the chunk refers to"
        RELEVANCE.skip(session, db, project.annotator_id, (shown.query_id, shown.doc_id))
        assert state.pop_flash(session) == "Skipped."
        skips = list(db["skips"].rows_where("annotator_id = ?", [project.annotator_id]))
        following = RELEVANCE.current(session, db, project.annotator_id)
        still_lapsed = _order(db, project.annotator_id, shown.query_id, shown.doc_id) < 0
    assert [(s["doc_id"], s["note"]) for s in skips] == [(shown.doc_id, "needs the table the chunk refers to")]
    assert still_lapsed  # a skip does not take the item back from ada
    assert following is None or (following.query_id, following.doc_id) != (shown.query_id, shown.doc_id)


def test_a_late_label_in_the_app_is_saved_not_refused(project: Project) -> None:
    with connect(project.path) as db:
        labels.set_settings(db, {"overlap": 0.0}, caller=OWNER)
    at = sign_in(project.annotator_token)
    query_id, doc_id = _on_screen(at)
    with connect(project.path) as db:
        _hand_bobs_holds_to_ada(db, project)
    at.text_input(key=state.NOTE).input("chunk contradicts itself").run()
    assert _on_screen(at) == (query_id, doc_id)
    press(at, state.grade_key(3))
    with connect(project.path) as db:
        rows = list(db["judgments"].rows_where("annotator_id = ?", [project.annotator_id]))
    assert [(r["query_id"], r["doc_id"], r["relevance"], r["note"]) for r in rows] == [
        (query_id, doc_id, 3, "chunk contradicts itself")
    ]
    assert [t.value for t in at.toast] == []
    assert _on_screen(at) != (query_id, doc_id)
    assert not at.exception


def _leave_a_draft(session: dict[str, object], db: sqlite_utils.Database, project: Project) -> Item:
    """Bob labels one item, types a note on the next and goes back: the note stays a draft."""
    labels.set_settings(db, {"overlap": 1.0}, caller=OWNER)  # every entry also goes to ada
    first = RELEVANCE.current(session, db, project.annotator_id)
    RELEVANCE.choose(session, db, project.annotator_id, (first.query_id, first.doc_id), 1)
    second = RELEVANCE.current(session, db, project.annotator_id)
    session[state.NOTE] = "bob: unsure, see the second paragraph"
    assert RELEVANCE.back(session, db, project.annotator_id, (second.query_id, second.doc_id))
    return second


def _label_everything(
    session: dict[str, object], db: sqlite_utils.Database, project: Project, annotator_id: int
) -> dict[tuple[str, str], str]:
    """Label every item the annotator is given; return the note field each one was shown with."""
    seen: dict[tuple[str, str], str] = {}
    for _ in range(project.n_items + 1):  # the last call finds no work left
        item = RELEVANCE.current(session, db, annotator_id)
        if item is None:
            return seen
        seen[(item.query_id, item.doc_id)] = str(session[state.NOTE])
        assert RELEVANCE.choose(session, db, annotator_id, (item.query_id, item.doc_id), 0) is not None
    pytest.fail(f"more than {project.n_items} items handed out")


def test_a_draft_is_not_shown_to_the_next_annotator_after_sign_out(project: Project) -> None:
    session: dict[str, object] = {}
    with connect(project.path) as db:
        assert state.sign_in(session, db, project.annotator_token) is not None
        second = _leave_a_draft(session, db, project)
        state.sign_out(session)
        assert state.DRAFTS not in session  # nothing of bob's unsaved work stays in the browser
        assert state.sign_in(session, db, project.admin_token) is not None
        seen = _label_everything(session, db, project, project.admin_id)
        ada_notes = {r["note"] for r in db["judgments"].rows_where("annotator_id = ?", [project.admin_id])}
    assert (second.query_id, second.doc_id) in seen  # ada was shown bob's item
    assert set(seen.values()) == {""}
    assert ada_notes == {""}


def test_a_draft_is_kept_for_the_annotator_who_typed_it_only(project: Project) -> None:
    session: dict[str, object] = {}
    with connect(project.path) as db:
        second = _leave_a_draft(session, db, project)
        # Another annotator's session that somehow shares bob's drafts (one browser, no sign-out).
        seen = _label_everything({state.DRAFTS: session[state.DRAFTS]}, db, project, project.admin_id)
        RELEVANCE.choose(session, db, project.annotator_id, session[state.CURRENT], 2)
        again = RELEVANCE.current(session, db, project.annotator_id)
    assert seen[(second.query_id, second.doc_id)] == ""
    assert (again.query_id, again.doc_id) == (second.query_id, second.doc_id)
    assert session[state.NOTE] == "bob: unsure, see the second paragraph"


def test_a_label_changed_in_another_tab_refreshes_the_item_and_the_next_key_acts(project: Project) -> None:
    tab1: dict[str, object] = {}
    tab2: dict[str, object] = {}
    clock = FakeClock()
    annotator = project.annotator_id
    with connect(project.path) as db:
        shown = RELEVANCE.current(tab1, db, annotator, clock)
        assert RELEVANCE.current(tab2, db, annotator, clock) == shown  # one annotator, two tabs
        RELEVANCE.choose(tab1, db, annotator, (shown.query_id, shown.doc_id), 1, clock)
        tab2[state.NOTE] = "important note"
        clock.now += 2.0
        # Tab 2 still shows the item as it was before tab 1's label: this key is refused once...
        assert RELEVANCE.choose(tab2, db, annotator, (shown.query_id, shown.doc_id), 3, clock) is None
        assert "another window" in state.pop_flash(tab2)
        assert tab2[state.CURRENT] == (shown.query_id, shown.doc_id)
        assert tab2[state.NOTE] == "important note"
        assert RELEVANCE.current(tab2, db, annotator, clock).relevance == 1  # ...the page shows tab 1's label
        clock.now += 1.5
        # ...and the next key acts, timed from the item's first render in tab 2.
        assert RELEVANCE.choose(tab2, db, annotator, (shown.query_id, shown.doc_id), 3, clock) is not None
        rows = list(db["judgments"].rows_where("annotator_id = ?", [annotator], order_by="id"))
    assert [(r["doc_id"], r["relevance"], r["note"], r["seconds"]) for r in rows] == [
        (shown.doc_id, 1, "", 0.0),
        (shown.doc_id, 3, "important note", 2.0 + 1.5),
    ]


def test_a_skip_with_a_note_in_another_tab_refreshes_the_item_for_skip_and_back(project: Project) -> None:
    tab1: dict[str, object] = {}
    tab2: dict[str, object] = {}
    annotator = project.annotator_id
    with connect(project.path) as db:
        first = RELEVANCE.current(tab1, db, annotator)
        RELEVANCE.choose(tab1, db, annotator, (first.query_id, first.doc_id), 2)
        shown = RELEVANCE.current(tab1, db, annotator)
        assert RELEVANCE.current(tab2, db, annotator) == shown
        tab1[state.NOTE] = "asks two things"
        RELEVANCE.skip(tab1, db, annotator, (shown.query_id, shown.doc_id))
        assert not RELEVANCE.back(tab2, db, annotator, (shown.query_id, shown.doc_id))
        assert "another window" in state.pop_flash(tab2)
        assert tab2[state.NOTE] == "asks two things"  # the note as it now stands
        assert RELEVANCE.back(tab2, db, annotator, (shown.query_id, shown.doc_id))
        assert tab2[state.CURRENT] == (first.query_id, first.doc_id)


def test_serve_refuses_a_missing_database(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from labeler.cli import cli

    missing = tmp_path / "absent.db"
    result = CliRunner().invoke(cli, ["serve", str(missing)])
    assert result.exit_code == 1
    assert result.output == f"Error: {missing}: no such project database (create it with `goldpool init {missing}`)\n"


def test_run_app_starts_streamlit_headless_on_the_database(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    from labeler.commands import serve

    calls = fake_streamlit(monkeypatch)
    monkeypatch.chdir(project.path.parent)
    assert serve.run_app(project.path.name, "0.0.0.0", 8765, extra_env={"EXTRA": "1"}) == 0
    [(cmd, env)] = calls
    assert cmd[1:5] == ["-m", "streamlit", "run", str(APP)]
    for option in ("--server.headless=true", "--browser.gatherUsageStats=false", "--runner.postScriptGC=false",
                   "--server.address=0.0.0.0", "--server.port=8765"):
        assert option in cmd
    assert env[state.DB_ENV_VAR] == str(project.path.resolve())
    assert env["EXTRA"] == "1"


@pytest.mark.parametrize(
    ("text", "query", "expected"),
    [
        # whole words only, any case; the matched text keeps its own case
        ("Waterfall water WATER", "water", "Waterfall <mark>water</mark> <mark>WATER</mark>"),
        # a term never matches inside an entity that escaping produced
        ("salt & amp", "amp salt", "<mark>salt</mark> &amp; <mark>amp</mark>"),
        # markup in the text is escaped, including quotes
        ('<a href="x">boil</a>', "boil", '&lt;a href=&quot;x&quot;&gt;<mark>boil</mark>&lt;/a&gt;'),
        # stopwords and one-letter words are not marked
        ("what is a point", "what is a point", "what is a <mark>point</mark>"),
        ("no terms", "the of a", "no terms"),
    ],
)
def test_highlight_escapes_and_marks_whole_query_words(text: str, query: str, expected: str) -> None:
    assert highlight(text, query) == expected


def test_query_terms_longest_first_without_repeats() -> None:
    assert query_terms("Point of the boiling POINT, water!") == ["boiling", "point", "water"]

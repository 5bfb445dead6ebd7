"""The app for a team's first day (Streamlit's AppTest): admins land on Progress, new tokens
end open sessions, the chunk is readable, progress has a fixed target, admins issue tokens."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from labeler.retrieval import scheduling
from labeler.ui import state
from labeler.text import preformatted
from labeler.store import connect
from labeler.store import access, labels, sessions
from labeler.store.rubric import set_rubric
from labeler.store.vocabulary import OWNER
from app_fixtures import Project, add_judgments, open_page, sign_in

CODE = 'def boil(water):\n    """Heat until it boils."""\n    while water.temp < 100:\n        water.heat(1)\n'


def _chunk_html(at: AppTest) -> str:
    return next(h.proto.body for h in at.html if "gp-chunk" in h.proto.body)


def _judgments(project: Project, annotator_id: int) -> int:
    with connect(project.path) as db:
        return db.execute("SELECT count(*) FROM judgments WHERE annotator_id = ?", [annotator_id]).fetchone()[0]


def test_a_new_token_signs_out_the_browser_that_used_the_old_one(project: Project) -> None:
    bob = sign_in(project.annotator_token)
    bob.button(key=state.grade_key(2)).click().run()
    assert _judgments(project, project.annotator_id) == 1
    with connect(project.path) as db:
        access.rotate_token(db, "bob")
    bob.button(key=state.grade_key(3)).click().run()  # the next action meets the sign-in form
    assert _judgments(project, project.annotator_id) == 1
    assert state.USER not in bob.session_state
    assert "new access token" in bob.error[0].value
    assert bob.text_input(key=state.TOKEN_INPUT).label == "Access token"
    assert not bob.exception


def test_an_admin_lands_on_progress_and_is_handed_no_work(project: Project) -> None:
    at = sign_in(project.admin_token)
    assert [t.value for t in at.title] == ["Progress"]
    with connect(project.path) as db:
        held = db.execute("SELECT count(*) FROM assignments WHERE annotator_id = ?", [project.admin_id]).fetchone()
    assert held[0] == 0
    assert not at.exception


def test_an_admin_page_lets_the_admins_idle_holds_lapse(project: Project) -> None:
    with connect(project.path) as db:
        scheduling.next_item(db, project.admin_id)  # the admin opened the labelling page once
        held = "SELECT count(*) FROM reservations WHERE annotator_id = ? AND expires_at > ?"
        assert db.execute(held, [project.admin_id, labels.now()]).fetchone()[0] > 0
    open_page(project.path, "progress_page", project.admin_token)
    with connect(project.path) as db:
        assert db.execute(held, [project.admin_id, labels.now()]).fetchone()[0] == 0
        assert scheduling.next_item(db, project.annotator_id) is not None  # bob may take them


def test_a_code_chunk_keeps_its_layout_and_its_title_shows_escaped(project: Project) -> None:
    with connect(project.path) as db:
        db.execute("UPDATE documents SET title = '<Boiler> guide', text = ? WHERE doc_id LIKE 'q1-%'", [CODE])
    at = sign_in(project.annotator_token)
    chunk = _chunk_html(at)
    assert '<div class="gp-title">&lt;Boiler&gt; guide</div>' in chunk
    assert 'class="gp-body gp-mono"' in chunk
    assert "    while <mark>water</mark>.temp &lt; 100:\n        <mark>water</mark>.heat(1)" in chunk
    assert preformatted(CODE) and not preformatted("Plain prose for q1 number 1.  Two spaces.")


def test_marking_query_words_is_switched_off_per_annotator_and_stays_off(project: Project) -> None:
    at = sign_in(project.annotator_token)
    assert "<mark>" in _chunk_html(at)
    at.toggle(key=state.HIGHLIGHT).set_value(False).run()
    assert "<mark>" not in _chunk_html(at)
    again = sign_in(project.annotator_token)  # another browser, later
    assert "<mark>" not in _chunk_html(again)
    assert again.toggle(key=state.HIGHLIGHT).value is False
    with connect(project.path) as db:
        assert sessions.preference(db, project.admin_id, "highlight") is True
    assert not at.exception


def test_progress_shows_this_batch_and_the_whole_project(project: Project) -> None:
    at = sign_in(project.annotator_token)
    texts = [p.proto.text for p in at.get("progress")]
    assert texts == ["Project: 0 of 15 pool items labelled (0%) · you: 0 labelled"]
    # The batch line is the item's counter: drawn with its query and chunk, in one element.
    assert '<div class="gp-counter">This batch: 0 of 5 labelled · item 1 of 5<' in _chunk_html(at)
    at.button(key=state.grade_key(1)).click().run()
    texts = [p.proto.text for p in at.get("progress")]
    assert '<div class="gp-counter">This batch: 1 of 5 labelled · item ' in _chunk_html(at)
    assert texts == ["Project: 1 of 15 pool items labelled (7%) · you: 1 labelled"]


def test_the_progress_table_shows_a_dash_for_missing_figures(project: Project) -> None:
    add_judgments(project.path, project.annotator_id, {("q1", "q1-d1"): 2})
    at = open_page(project.path, "progress_page", project.admin_token)
    people = at.dataframe[0].value
    ada = people[people["annotator"] == "ada"].iloc[0]
    assert (ada["labels/hour"], ada["median s/label"]) == ("—", "—")
    assert people[people["annotator"] == "bob"].iloc[0]["median s/label"] == "4.0"


def test_an_admin_adds_an_annotator_and_sees_the_token_once(project: Project) -> None:
    at = open_page(project.path, "annotators_page", project.admin_token)
    at.text_input(key=state.NEW_NAME).input("<cy>")
    at.selectbox(key=state.NEW_ROLE).set_value("annotator")
    at.button(key=state.ADD_SUBMIT).click().run()
    shown = [c.value for c in at.code]
    assert len(shown) == 1
    with connect(project.path) as db:
        cy = access.authenticate(db, shown[0])
    assert cy is not None and cy.name == "<cy>" and cy.role == "annotator"
    at.run()
    assert [c.value for c in at.code] == []  # shown once only
    assert not at.exception


def test_an_admin_reissues_a_token_and_the_old_one_stops(project: Project) -> None:
    at = open_page(project.path, "annotators_page", project.admin_token)
    at.button(key=state.reissue_key(project.annotator_id)).click().run()
    (token,) = [c.value for c in at.code]
    with connect(project.path) as db:
        assert access.authenticate(db, token).id == project.annotator_id
        assert access.authenticate(db, project.annotator_token) is None
    # An admin who renews their own token stays signed in with it.
    at.button(key=state.reissue_key(project.admin_id)).click().run()
    (own,) = [c.value for c in at.code]
    at.run()
    assert [t.value for t in at.title] == ["Annotators"]
    with connect(project.path) as db:
        assert access.authenticate(db, own).id == project.admin_id
    assert not at.exception


def test_the_rubric_shows_no_remote_image(project: Project) -> None:
    rubric = "# Rubric\n\n![tracker](http://203.0.113.9/pixel.png)\n\n[guide](http://203.0.113.9/guide)"
    with connect(project.path) as db:
        set_rubric(db, rubric, caller=OWNER)
    at = sign_in(project.annotator_token)
    shown = [m.value for m in at.markdown if "tracker" in m.value]
    assert shown == ["# Rubric\n\n\\![tracker](http://203.0.113.9/pixel.png)\n\n[guide](http://203.0.113.9/guide)"]
    admin = open_page(project.path, "rubric_page", project.admin_token)
    preview = [m.value for m in admin.markdown if "tracker" in m.value]
    assert preview and all("\\![tracker]" in p for p in preview)


def test_a_kept_sign_in_resumes_in_a_new_browser_session(project: Project) -> None:
    first: dict[str, object] = {}
    with connect(project.path) as db:
        user = state.sign_in(first, db, project.annotator_token)
        secret = first[state.SESSION_SECRET]
        assert project.annotator_token not in str(secret)
        reloaded: dict[str, object] = {}
        assert state.resume(reloaded, db, secret) == user
        assert state.signed_in(reloaded, db) == user
        access.rotate_token(db, "bob")
        assert state.signed_in(reloaded, db) is None  # a new token ends it
        user = state.sign_in(first, db, access.rotate_token(db, "bob"))
        secret = first[state.SESSION_SECRET]
        assert state.resume(reloaded, db, secret) == user
        state.sign_out(first, db)
        assert state.resume({}, db, secret) is None
        assert state.signed_in(reloaded, db) is None  # so does a sign-out in the other session
        assert reloaded[state.LOGIN_ERROR] == state.ENDED_ELSEWHERE


def test_the_project_figure_is_counted_now_and_then_and_adds_own_labels_between(project: Project) -> None:
    session: dict[str, object] = {}
    now = [100.0]
    with connect(project.path) as db:
        assert state.project_counts(session, db, 0, clock=lambda: now[0]) == (15, 0)
        add_judgments(project.path, project.admin_id, {("q2", "q2-d1"): 1})  # someone else labels
        assert state.project_counts(session, db, 2, clock=lambda: now[0]) == (15, 2)  # own two added
        now[0] += state.PROJECT_REFRESH + 1
        assert state.project_counts(session, db, 2, clock=lambda: now[0]) == (15, 1)  # counted afresh


def test_sessions_signing_in_together_share_one_count_of_the_project(project: Project, monkeypatch) -> None:  # noqa: ANN001
    counts = []
    real = labels.pool_progress
    monkeypatch.setattr(labels, "pool_progress", lambda db: counts.append(1) or real(db))
    now = [5000.0]
    with connect(project.path) as db:
        team = [{} for _ in range(16)]
        assert all(state.project_counts(s, db, 0, clock=lambda: now[0]) == (15, 0) for s in team)
        assert len(counts) == 1  # one count for the sixteen
        add_judgments(project.path, project.admin_id, {("q2", "q2-d1"): 1})
        now[0] += state.PROJECT_REFRESH + 1
        assert state.project_counts(team[0], db, 0, clock=lambda: now[0]) == (15, 1)  # counted afresh
        assert state.project_counts(team[1], db, 0, clock=lambda: now[0]) == (15, 1) and len(counts) == 2


def _second_tab(project: Project, secret: str) -> AppTest:
    """Another tab of the same browser: a new session that resumes with the cookie's secret."""
    from app_fixtures import app_test

    tab: dict[str, object] = {}
    with connect(project.path) as db:
        assert state.resume(tab, db, secret) is not None
    at = app_test()
    for key, value in tab.items():
        at.session_state[key] = value
    return at.run()


def test_signing_out_in_one_tab_ends_the_other_tabs_sign_in_at_their_next_key(project: Project) -> None:
    first = sign_in(project.annotator_token)
    second = _second_tab(project, first.session_state[state.SESSION_SECRET])
    second.button(key=state.grade_key(2)).click().run()
    assert _judgments(project, project.annotator_id) == 1
    first.button(key=state.LOGOUT).click().run()
    second.text_input(key=state.NOTE).input("typed after the sign-out")
    second.button(key=state.grade_key(3)).click().run()  # the stale tab's next key
    assert _judgments(project, project.annotator_id) == 1
    assert state.USER not in second.session_state
    assert [e.value for e in second.error] == [state.ENDED_ELSEWHERE + " " + state.KEY_NOT_SAVED]
    assert second.text_input(key=state.TOKEN_INPUT).label == "Access token"
    assert not second.exception

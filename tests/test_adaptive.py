"""Adaptive pooling in a project: the assignment draws from a strategy over the candidates."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlite_utils
from adaptive_fixtures import build_adaptive_project
from app_fixtures import Project, open_page

from labeler.retrieval import adaptive, scheduling
from labeler.store import StoreError, connect, labels
from labeler.store.access import OWNER
from pooling.stopping import RULES
from pooling.strategies import next_chunks


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return build_adaptive_project(tmp_path)


def _batch(db: sqlite_utils.Database, annotator_id: int) -> list[str]:
    """Hand out the annotator's next batch; its doc_ids in the order shown."""
    scheduling.next_item(db, annotator_id)
    rows = db.execute(
        "SELECT doc_id FROM assignments WHERE annotator_id = ? AND shown_order > 0 AND NOT EXISTS "
        "(SELECT 1 FROM judgments j WHERE j.query_id = assignments.query_id AND j.doc_id = assignments.doc_id) "
        "ORDER BY shown_order",
        [annotator_id],
    ).fetchall()
    return [r[0] for r in rows]


def test_strategy_setting_is_checked() -> None:
    from labeler.store.settings import validate_settings
    from pooling.strategies import STRATEGIES

    checked = validate_settings({"strategy": "mtf", "stop_recall": "off"}, STRATEGIES)
    assert checked == {"strategy": "mtf", "stop_recall": None}
    assert validate_settings({"stop_recall": "0.9"}) == {"stop_recall": 0.9}
    with pytest.raises(StoreError, match="unknown strategy 'best'"):
        validate_settings({"strategy": "best"}, STRATEGIES)
    with pytest.raises(StoreError, match="stop_confidence"):
        validate_settings({"stop_confidence": "1.5"})


def test_default_depth_hands_out_pool_order(project: Project) -> None:
    db = connect(project.path)
    labels.set_settings(db, {"batch_size": 3}, caller=OWNER)
    assert sorted(_batch(db, project.annotator_id)) == ["q1-d1", "q1-d2", "q1-d3"]
    assert db.execute("SELECT count(*) FROM pool").fetchone()[0] == 15  # nothing added


def test_a_strategy_draws_candidates_beyond_the_pool(project: Project) -> None:
    db = connect(project.path)
    scheduling.set_settings(db, {"batch_size": 3, "strategy": "rrf", "overlap": 0}, caller=OWNER)
    expected = next_chunks("rrf", adaptive.load_candidates(db, "q1"), {}, 3)
    assert "q1-d8" in expected  # the dense list's first chunk, outside the pool (RRF ties d1)
    shown = _batch(db, project.annotator_id)
    assert sorted(shown) == sorted(expected)
    row = db.execute("SELECT sources, position, build_id FROM pool WHERE doc_id = 'q1-d8'").fetchone()
    # Appended after the query's five positions, provenance from the candidate lists.
    assert row[0] == '{"bm25": 8, "dense-minilm": 1}' and row[1] == 6 and row[2] == 1


def test_switching_strategy_keeps_every_label_and_assignment(project: Project) -> None:
    db = connect(project.path)
    labels.set_settings(db, {"batch_size": 2, "overlap": 0}, caller=OWNER)
    seen: dict[str, int] = {}
    for strategy, grade in (("depth", 2), ("mtf", 0), ("active", 3), ("rrf", 1), ("depth", 0)):
        scheduling.set_settings(db, {"strategy": strategy}, caller=OWNER)
        judgments_before = db.execute("SELECT * FROM judgments ORDER BY id").fetchall()
        assignments_before = set(db.execute("SELECT * FROM assignments").fetchall())
        for doc_id in _batch(db, project.annotator_id):
            assert doc_id not in seen, f"{doc_id} handed out twice"
            labels.record_judgment(db, project.annotator_id, doc_id.split("-")[0], doc_id, grade, 3.0)
            seen[doc_id] = grade
        assert db.execute("SELECT * FROM judgments ORDER BY id").fetchall()[: len(judgments_before)] == judgments_before
        assert assignments_before <= set(db.execute("SELECT * FROM assignments").fetchall())
    latest = dict(db.execute("SELECT doc_id, relevance FROM judgments").fetchall())
    assert latest == seen and len(seen) == 10
    # Every label made still counts for the strategy, whichever strategy caused it.
    assert adaptive.store.labels(db, "q1") == {d: g >= 1 for d, g in seen.items() if d.startswith("q1")}


def test_the_stopping_rule_stops_offering_a_query(project: Project) -> None:
    db = connect(project.path)
    scheduling.set_settings(db, {"batch_size": 4, "overlap": 0, "strategy": "rrf"}, caller=OWNER)
    first = _batch(db, project.annotator_id)
    assert {d.split("-")[0] for d in first} == {"q1"}
    for doc_id in first:  # the top of both lists relevant, the rest not
        labels.record_judgment(db, project.annotator_id, "q1", doc_id, 3 if doc_id in ("q1-d1", "q1-d8") else 0, 3.0)
    status = {s.query_id: s for s in adaptive.query_status(db, caller=OWNER)}
    labels.set_settings(db, {"stop_recall": 0.5, "stop_confidence": 0.5, "stop_rule": "quantile"}, caller=OWNER, rules=RULES)
    now_status = {s.query_id: s for s in adaptive.query_status(db, caller=OWNER)}
    assert now_status["q1"].estimate.stop, adaptive.stop_line(now_status["q1"])
    assert not status["q1"].stopping and now_status["q1"].stopping
    # q1 has candidates left, but the rule said stop: the next batch is from q2.
    assert {d.split("-")[0] for d in _batch(db, project.annotator_id)} == {"q2"}
    assert adaptive.stop_line(now_status["q1"]).endswith("; stop")
    # Only the labelled queries (what the Progress page and stop-status show): the same estimates.
    labelled = adaptive.query_status(db, caller=OWNER, labelled_only=True)
    assert [s.query_id for s in labelled] == ["q1"] and len(now_status) > 1
    assert labelled[0] == now_status["q1"]


def test_status_needs_the_admin(project: Project) -> None:
    db = connect(project.path)
    with pytest.raises(StoreError):
        adaptive.query_status(db, caller=project.annotator_id)


def _label_q1(db: sqlite_utils.Database, annotator_id: int) -> None:
    scheduling.set_settings(db, {"batch_size": 4, "overlap": 0, "strategy": "rrf"}, caller=OWNER)
    for doc_id in _batch(db, annotator_id):
        labels.record_judgment(db, annotator_id, "q1", doc_id, 3 if doc_id in ("q1-d1", "q1-d8") else 0, 3.0)


def test_stats_prints_each_labelled_query_estimate(project: Project) -> None:
    from click.testing import CliRunner

    from labeler.cli import cli

    db = connect(project.path)
    _label_q1(db, project.annotator_id)
    labels.set_settings(db, {"stop_recall": 0.5, "stop_confidence": 0.5, "stop_rule": "quantile"}, caller=OWNER, rules=RULES)
    line = adaptive.stop_line(adaptive.query_status(db, caller=OWNER)[0])
    e = adaptive.query_status(db, caller=OWNER)[0].estimate
    assert line == f"q1: ~{round(100 * e.recall)}% of relevant found [{round(100 * e.recall_low)}, {round(100 * e.recall_high)}]; stop"
    assert e.found == 2 and e.judged == 4 and e.recall_low <= e.recall <= e.recall_high
    out = CliRunner().invoke(cli, ["stats", str(project.path)]).output
    assert out.endswith(f"within the candidate lists):\n  {line}\n")  # q2 and q3 have no labels: not listed


def test_progress_page_shows_the_estimate(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    from labeler.ui import state

    monkeypatch.setenv(state.DB_ENV_VAR, str(project.path))
    db = connect(project.path)
    _label_q1(db, project.annotator_id)
    at = open_page(project.path, "progress_page", project.admin_token, timeout=60)
    assert not at.exception
    texts = [t.value for t in at.text]
    assert any(t.startswith("q1: ~") and "% of relevant found [" in t for t in texts), texts


def test_depth_with_a_stopping_rule_keeps_pool_order_and_stops(project: Project) -> None:
    db = connect(project.path)
    labels.set_settings(db, {"batch_size": 2, "overlap": 0, "stop_recall": 0.5, "stop_confidence": 0.6, "stop_rule": "quantile"},
                        caller=OWNER, rules=RULES)
    first = _batch(db, project.annotator_id)
    assert sorted(first) == ["q1-d1", "q1-d2"]  # pool order, nothing added to the pool
    for doc_id in first:
        labels.record_judgment(db, project.annotator_id, "q1", doc_id, 3 if doc_id == "q1-d1" else 0, 3.0)
    second = _batch(db, project.annotator_id)
    assert sorted(second) == ["q1-d3", "q1-d4"]
    for doc_id in second:
        labels.record_judgment(db, project.annotator_id, "q1", doc_id, 0, 3.0)
    # d1 relevant, d2 not: go on (above); d3 and d4 not either: the rule says stop at target
    # 0.5, confidence 0.6, so q1's fifth pool entry is never offered and the next batch is q2's.
    assert adaptive.query_status(db, caller=OWNER)[0].estimate.stop
    assert {d.split("-")[0] for d in _batch(db, project.annotator_id)} == {"q2"}
    assert db.execute("SELECT count(*) FROM pool").fetchone()[0] == 15


@pytest.mark.parametrize("strategy", ["active", "mtf"])
def test_models_run_before_the_write_lock_not_under_it(project: Project, monkeypatch: pytest.MonkeyPatch, strategy: str) -> None:
    """The stopping rule and the strategy (``active`` trains a classifier) are decided outside
    the hand-out's write transaction; inside it the decision is only looked up."""
    db = connect(project.path)
    scheduling.set_settings(db, {"batch_size": 2, "strategy": strategy, "overlap": 0, "stop_recall": 0.8}, caller=OWNER)
    choose = adaptive._choose
    calls: list[bool] = []

    def spy(*args, **kwargs):
        calls.append(db.conn.in_transaction)
        return choose(*args, **kwargs)

    monkeypatch.setattr(adaptive, "_choose", spy)
    for round_ in range(4):
        shown = _batch(db, project.annotator_id)
        assert shown, f"round {round_}: nothing handed out"
        for n, doc_id in enumerate(shown):
            query_id = doc_id.split("-")[0]
            labels.record_judgment(db, project.annotator_id, query_id, doc_id, (n + round_) % 2 * 2, 3.0)
    assert calls and not any(calls), f"{sum(calls)} of {len(calls)} decisions were made holding the write lock"
    # A kept decision is the one a fresh one would be.
    settings = adaptive.get_settings(db)
    kept = {q: adaptive.choose_next_chunks(db, q, settings)[1] for q in ("q1", "q2", "q3")}
    adaptive._CHOICES.clear()
    assert {q: adaptive.choose_next_chunks(db, q, settings)[1] for q in kept} == kept


def test_the_check_sample_is_handed_out_like_any_entry_and_decides_the_stop(project: Project) -> None:
    from labeler.store import candidates as store
    from pooling.stopping import check_order, sample_p_value

    db = connect(project.path)
    scheduling.set_settings(db, {"batch_size": 2, "overlap": 0, "strategy": "rrf", "stop_recall": 0.5,
                                 "stop_confidence": 0.6, "stop_rule": "sample"}, caller=OWNER)
    judged: list[str] = []
    while store.check_urn(db, "q1") is None:
        batch = _batch(db, project.annotator_id)
        assert batch and {d.split("-")[0] for d in batch} == {"q1"}, "q1 ran out before its check sample began"
        for doc_id in batch:
            labels.record_judgment(db, project.annotator_id, "q1", doc_id, 3 if doc_id in ("q1-d1", "q1-d8") else 0, 3.0)
            judged.append(doc_id)
        scheduling.next_item(db, project.annotator_id)  # the hand-out that may begin it
    urn = store.check_urn(db, "q1")
    assert urn == {f"q1-d{n}" for n in range(1, 9)} - set(judged)  # every candidate not judged when it began
    draws = _batch(db, project.annotator_id)
    # the draws go out like any entry, in the annotator's shuffle: the first two of the fixed random order
    assert set(draws) == set(check_order("q1", urn)[:2])
    assert draws == scheduling.SCHEDULER.shown_order(project.annotator_id, "q1", draws)
    for doc_id in draws:
        labels.record_judgment(db, project.annotator_id, "q1", doc_id, 0, 3.0)
    e = {s.query_id: s for s in adaptive.query_status(db, caller=OWNER)}["q1"].estimate
    # d1 and d8 found among 4 judged; recall below 0.5 would need 3 relevant in the urn of 4,
    # but 2 of its 4 were drawn and not relevant: the test rejects (p = 0), the rule says stop
    assert (len(judged), len(urn), sample_p_value(2, 4, 2, 0, 0.5)) == (4, 4, 0.0)
    assert e.rule == "sample" and e.stop
    # the interval is the sample's: one relevant left among the two undrawn has P(none drawn)
    # = C(3, 2) / C(4, 2) = 0.5 >= 0.2, two have 1/6 < 0.2, so recall is in [2/3, 1]
    assert (e.recall_low, e.recall_high) == (2 / 3, 1.0)
    assert adaptive.stop_line(adaptive.query_status(db, caller=OWNER)[0]) == "q1: ~100% of relevant found [67, 100]; stop"
    assert {d.split("-")[0] for d in _batch(db, project.annotator_id)} == {"q2"}  # q1 is done


def test_under_active_every_rule_shows_the_interval_with_the_classifiers_scores(project: Project) -> None:
    """The interval on the Progress page and in ``stats`` is the one the replays measured:
    under ``active`` the model fed with the classifier's scores (one-sided), whatever the rule."""
    db = connect(project.path)
    _label_q1(db, project.annotator_id)
    shown = {}
    for rule in ("quantile", "knee"):
        scheduling.set_settings(db, {"strategy": "active"}, caller=OWNER)
        labels.set_settings(db, {"stop_recall": 0.5, "stop_confidence": 0.5, "stop_rule": rule}, caller=OWNER, rules=RULES)
        e = adaptive.query_status(db, caller=OWNER)[0].estimate
        shown[rule] = (e.recall, e.recall_low, e.recall_high)
    assert shown["knee"] == shown["quantile"]
    assert shown["knee"][2] == 1.0

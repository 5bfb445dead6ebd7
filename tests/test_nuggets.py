"""nugget-metrics: the four TREC scores per answer and per system equal castorini's nuggetizer
(``calculate_nugget_scores``) where both define them; what is left out is counted; people,
judge and PPI++ values and the paired comparison stand on calibration.clustered's numbers."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import nuggetizer.core.metrics as nuggetizer  # the reference (test extra)
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nugget_fixtures import ANSWERS, JUDGE, NUGGETS, PEOPLE, build, run

from calibration.clustered import clustered_ppi, clustered_rate, paired_difference
from labeler.generation.nuggets import METRICS, nugget_metrics, nugget_scores
from labeler.store import connect
from labeler.store.vocabulary import OWNER


#: nuggetizer's field names for ours.
THEIRS = {"all": "all_score", "vital": "vital_score", "strict_all": "strict_all_score",
          "strict_vital": "strict_vital_score"}


def _reference(query_id: str, answer_id: str, labels: dict) -> dict[str, float]:
    """nuggetizer's scores of one answer; an empty answer supports nothing (not_support)."""
    nuggets = [{"text": t, "importance": i, "assignment": labels.get((answer_id, f"{query_id}/n{k}"), "not_support")}
               for k, (t, i) in enumerate(NUGGETS.get(query_id, []), start=1)]
    m = nuggetizer.calculate_nugget_scores(query_id, nuggets)
    return {ours: getattr(m, theirs) for ours, theirs in THEIRS.items()}


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return build(tmp_path)


def test_every_answer_scores_as_nuggetizer_scores_it(db_path: str) -> None:
    m = nugget_metrics(connect(db_path), judge="j", caller=OWNER)
    checked = 0
    for s in m.systems:
        for source, found, labels in (("people", s.people, PEOPLE), ("judge", s.judged, JUDGE)):
            for a in found:
                query = next(q for answer_id, q, _ in ANSWERS[s.system] if answer_id == a.answer_id)
                want = _reference(query, a.answer_id, labels)
                for metric in METRICS:
                    # q4 has no nugget, q2 no vital one: nuggetizer scores 0 there; here they are left out.
                    if a.why == "no_nuggets" or (metric.endswith("vital") and not a.vital_nuggets):
                        assert a.scores[metric] is None and want[metric] == 0.0
                    else:
                        assert a.scores[metric] == pytest.approx(want[metric], abs=1e-12), (source, a.answer_id, metric)
                        checked += 1
    assert checked == 6 * 2 * 2 + 4 * 2 * 2  # (all, strict_all) of 6 answers with nuggets, (vital, strict_vital) of 4, 2 sources


def test_hand_computed_scores_of_the_fixture(db_path: str) -> None:
    m = nugget_metrics(connect(db_path), caller=OWNER)
    a = {x.answer_id: x.scores for x in m.systems[0].people}
    # a1 on q1 (vital, vital, okay): support, partial, none.
    assert a["a1"] == {"all": (1 + 0.5 + 0) / 3, "vital": (1 + 0.5) / 2, "strict_all": 1 / 3, "strict_vital": 1 / 2}
    assert a["a2"] == {"all": (0 + 1) / 2, "vital": None, "strict_all": 1 / 2, "strict_vital": None}
    assert a["a3"] == {"all": 0.0, "vital": 0.0, "strict_all": 0.0, "strict_vital": 0.0}  # empty: supports nothing
    assert a["a4"] == dict.fromkeys(METRICS)  # q4 has no nugget


def test_the_system_mean_equals_nuggetizer_s_mean_over_the_same_answers(db_path: str) -> None:
    out = json.loads(run("nugget-metrics", db_path, "--judge", "j", "--json"))
    for system, answers in ANSWERS.items():
        for metric in METRICS:
            kept = [(aid, q) for aid, q, _ in answers if NUGGETS.get(q)
                    and (not metric.endswith("vital") or any(i == "vital" for _, i in NUGGETS[q]))]
            for source, labels in (("people", PEOPLE), ("judge", JUDGE)):
                want = statistics.mean(_reference(q, aid, labels)[metric] for aid, q in kept)
                got = out["systems"][system][metric][source]
                assert got["value"] == pytest.approx(want, abs=1e-12), (system, metric, source)
                assert got["n"] == len(kept)
    # What is left out is counted: A's a4 (no nugget); a2 and b2 from the vital scores (no vital nugget).
    assert out["systems"]["A"]["all"]["people"]["left_out"] == {"no_nuggets": 1}
    assert out["systems"]["A"]["vital"]["people"]["left_out"] == {"no_nuggets": 1, "no_vital": 1}
    assert out["systems"]["B"]["strict_vital"]["judge"]["left_out"] == {"no_vital": 1}
    assert out["answers"]["A"] == {"n": 4, "words": pytest.approx((7 + 5 + 0 + 3) / 4), "no_nuggets": 1}


def test_nuggetizer_s_global_mean_counts_the_left_out_answers_as_zero(db_path: str) -> None:
    """Said, and checked: nuggetizer's mean over every answer is ours times the share scored."""
    out = json.loads(run("nugget-metrics", db_path, "--json"))
    records = [{"qid": q, "nuggets": [{"importance": i, "assignment": PEOPLE.get((aid, f"{q}/n{k}"), "not_support")}
                                      for k, (_, i) in enumerate(NUGGETS.get(q, []), start=1)]}
               for aid, q, _ in ANSWERS["A"]]
    theirs = nuggetizer.calculate_global_metrics(records)
    ours = out["systems"]["A"]
    assert theirs["all_score"] == pytest.approx(ours["all"]["people"]["value"] * 3 / 4)
    assert theirs["vital_score"] == pytest.approx(ours["vital"]["people"]["value"] * 2 / 4)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a shared machine may be slow to draw
@given(st.lists(st.tuples(st.sampled_from(["vital", "okay"]),
                          st.sampled_from(["SUPPORT", "PARTIAL_SUPPORT", "NOT_SUPPORT"])), min_size=1, max_size=12))
def test_scores_equal_nuggetizer_on_random_nugget_lists(nuggets: list[tuple[str, str]]) -> None:
    ours = nugget_scores([i for i, _ in nuggets], [v for _, v in nuggets])
    theirs = nuggetizer.calculate_nugget_scores("q", [{"importance": i, "assignment": v.lower()} for i, v in nuggets])
    has_vital = any(i == "vital" for i, _ in nuggets)
    for metric, field in THEIRS.items():
        if metric.endswith("vital") and not has_vital:
            assert ours[metric] is None and getattr(theirs, field) == 0.0
        else:
            assert ours[metric] == pytest.approx(getattr(theirs, field), abs=1e-12)


def test_intervals_are_the_clustered_ones(db_path: str) -> None:
    out = json.loads(run("nugget-metrics", db_path, "--system", "B", "--json"))
    b = out["systems"]["B"]["all"]["people"]
    values = [(1 * 0.5 + 0 + 0) / 3, (1 + 0.5) / 2, 1.0]
    e = clustered_rate(values, ["q1", "q2", "q3"])
    assert (b["value"], b["low"], b["high"], b["questions"], b["interval"]) == pytest.approx(
        (e.value, e.low, e.high, 3, "wilson"))


def test_ppi_uses_people_where_they_labelled_and_the_judge_everywhere(tmp_path: Path) -> None:
    db = build(tmp_path, people=False)
    # People label B's answers to q1 and q2 only (a sample of questions); the judge labels all.
    from nugget_fixtures import support_records, write_jsonl

    some = {k: v for k, v in PEOPLE.items() if k[0] in ("b1", "b2")}
    run("import-verdicts", db, write_jsonl(tmp_path / "some.jsonl", support_records(some)), "--annotator", "ann")
    out = json.loads(run("nugget-metrics", db, "--system", "B", "--judge", "j", "--json"))
    got = out["systems"]["B"]["strict_all"]["ppi"]
    people = {"b1": 0.0, "b2": 0.5}
    judge = {"b1": 1 / 3, "b2": 1.0, "b3": 1.0}
    want = clustered_ppi([people["b1"], people["b2"]], [judge["b1"], judge["b2"]], ["q1", "q2"], [judge["b3"]], ["q3"])
    assert got["value"] == pytest.approx(want.estimate.value)
    assert (got["n_labelled"], got["n_unlabelled"], got["lambda"]) == (2, 1, pytest.approx(want.lam))


def test_systems_are_compared_paired_on_shared_questions(db_path: str) -> None:
    out = json.loads(run("nugget-metrics", db_path, "--json"))
    pair = next(p for p in out["pairs"] if p["metric"] == "all" and p["source"] == "people")
    a = {"q1": 0.5, "q2": 0.5, "q3": 0.0}  # a3 is empty: 0
    b = {"q1": 0.5 / 3, "q2": 0.75, "q3": 1.0}
    d = paired_difference(a, b)
    assert (pair["a"], pair["b"], pair["n"]) == ("A", "B", 3)
    assert (pair["difference"], pair["low"], pair["high"], pair["mdd"]) == pytest.approx((d.difference, d.low, d.high, d.mdd))


def test_text_and_html_reports(db_path: str, tmp_path: Path) -> None:
    text = run("nugget-metrics", db_path, "--judge", "j", "--html", tmp_path / "n.html")
    assert "strict vital" in text and "PPI++" in text and "left out: 1 answer to a question without nuggets" in text
    assert "A - B, paired" in text
    page = (tmp_path / "n.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page


def test_a_version_scores_with_the_nuggets_it_froze(db_path: str, tmp_path: Path) -> None:
    from labeler.store.nuggets import edit_nugget, list_nuggets

    db = connect(db_path)
    run("import-judgments", db_path, _qrels(tmp_path), "--annotator", "ann")
    run("freeze", db_path, "--version", "v1")
    from labeler.store.nuggets import nuggets_hash
    from labeler.store.versions import get_version

    manifest = get_version(db, "v1", caller=OWNER).manifest
    assert manifest["nuggets"] == {"n": 7, "queries": 3, "vital": 3, "hash": nuggets_hash(list_nuggets(db))}
    before = json.loads(run("nugget-metrics", f"{db_path}@v1", "--json"))
    assert before["version"] == "v1" and before["nuggets"]["nuggets"] == 7
    edit_nugget(db, "q2/n1", importance="vital", caller=OWNER)  # now q2 has a vital nugget
    assert sum(n.importance == "vital" for n in list_nuggets(db)) == 4
    now = json.loads(run("nugget-metrics", db_path, "--json"))
    frozen = json.loads(run("nugget-metrics", f"{db_path}@v1", "--json"))
    assert frozen["systems"] == before["systems"]
    assert now["systems"]["A"]["vital"]["people"]["n"] == before["systems"]["A"]["vital"]["people"]["n"] + 1
    assert frozen["nuggets"]["hash"] != now["nuggets"]["hash"]


def _qrels(tmp_path: Path) -> Path:
    path = tmp_path / "h.qrels"
    path.write_text("q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 2\nq3 0 d4 3\n", encoding="utf-8")
    return path


def test_a_version_without_nuggets_is_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from labeler.cli import cli

    db = str(tmp_path / "p.db")
    run("init", db)
    run("import-queries", db, _write(tmp_path / "q.jsonl", '{"query_id": "q1", "text": "x"}\n'))
    run("import-corpus", db, _write(tmp_path / "c.jsonl", '{"doc_id": "d1", "text": "x"}\n'))
    run("import-judgments", db, _write(tmp_path / "h.qrels", "q1 0 d1 1\n"), "--annotator", "ann")
    run("freeze", db, "--version", "v1")
    run("import-answers", db, _write(tmp_path / "a.jsonl", '{"answer_id": "a1", "query_id": "q1", "response": "y"}\n'),
        "--system", "s")
    result = CliRunner().invoke(cli, ["nugget-metrics", f"{db}@v1"])
    assert result.exit_code == 1 and "golden version 'v1' froze no nuggets" in result.output


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_the_gate_takes_a_nugget_score(db_path: str) -> None:
    out = json.loads(run("gate", db_path, "--baseline", "A", "--candidate", "B", "--metric", "vital", "--json"))
    vital = out["results"][0]
    # Per question with a vital nugget: A 0.75 (a1), 0 (a3, empty); B 0.25 (b1), 1 (b3).
    assert (vital["metric"], vital["n"], vital["mean_baseline"], vital["mean_candidate"]) == ("vital", 2, 0.375, 0.625)
    assert vital["left_out"] == {"A answers to questions without vital nuggets": 2,
                                 "B answers to questions without vital nuggets": 1}
    assert out["status"] == "pass"
    swapped = json.loads(run("gate", db_path, "--baseline", "B", "--candidate", "A", "--metric", "strict_all",
                             "--tolerance", "0.01", "--json"))
    # strict_all per question (q1, q2, q3): B 0, 1/2, 1; A 1/3, 1/2, 0.
    assert swapped["results"][0]["drop"] == pytest.approx((0 + 0.5 + 1) / 3 - (1 / 3 + 0.5 + 0) / 3)

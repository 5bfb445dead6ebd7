"""Small samples are not reported as if they meant something: undefined is said with why, an
MDD beyond the scale in words, and intervals from few queries carry a warning."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from app_fixtures import Project, add_judgments, open_page
from calibration import cohen_kappa, format_estimate, project_report, to_dict, to_markdown
from calibration.agreement import ONE_ITEM
from calibration.summary import Label
from labeler.cli import cli


def cli_run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_kappa_on_one_item_is_undefined_not_zero() -> None:
    # One item on which two raters disagree: the formula gives 1 - 1/1 = 0, which means nothing.
    assert cohen_kappa_score([1], [2]) == 0.0
    estimate = cohen_kappa([1], [2], labels=[0, 1, 2, 3], n_boot=0)
    assert estimate.undefined and estimate.why == ONE_ITEM
    assert estimate.as_dict()["undefined"] == ONE_ITEM
    # Two items are enough for a value, and it is scikit-learn's.
    assert cohen_kappa([1, 2], [1, 2], n_boot=0).value == cohen_kappa_score([1, 2], [1, 2]) == 1.0


def test_the_project_report_says_why_kappa_is_undefined() -> None:
    labels = [Label("q1", "d1", "ada", 1), Label("q1", "d1", "bob", 2), Label("q1", "d2", "ada", 3)]
    report = project_report(labels, grades=(0, 1, 2, 3), n_boot=100)
    text = to_markdown(report)
    assert f"| kappa_quadratic | undefined ({ONE_ITEM}) | 1 |" in text
    assert "| agreement | 0.000 | 1 |" in text  # raw agreement is defined on one item: 0 of 1
    assert to_dict(report)["agreement"]["kappa_quadratic"]["undefined"] == ONE_ITEM
    assert to_dict(report)["per_pair"][0]["kappa_quadratic"]["value"] is None


def test_an_mdd_beyond_the_scale_is_said_in_words() -> None:
    report = project_report([Label("q1", "d1", "ada", 1)], grades=(0, 1, 2, 3), n_boot=0)
    text = to_markdown(report)
    # 2.8016 * sqrt(0.2 / 1) = 1.253: beyond the 100-point scale. 0.2 * (2.8016 / 0.10)^2 = 157.0 -> 157.
    assert "125.3" not in text
    assert (
        "With 1 labelled query, this set cannot resolve any difference yet: two systems would have to differ by more "
        "than the whole 100-point scale to be detected. It needs ~157 queries to detect a 10-point difference"
    ) in text
    out = cli_run("plan", "--n", "1", "--paired", "--discordant", "0.2").output.splitlines()
    assert out[0].startswith("With 1 question this set cannot resolve any difference yet: the minimum detectable "
                             "difference is beyond the 100-point scale")
    assert out[0].endswith("it needs ~157 questions to detect a 10-point difference.")
    assert out[2] == "minimum detectable difference (paired): beyond the 100-point scale"


def _few_queries(tmp_path: Path) -> tuple[Path, Path]:
    human, judge = tmp_path / "human.txt", tmp_path / "judge.txt"
    human.write_text("q1 0 d1 2\nq1 0 d2 1\nq2 0 d1 0\nq2 0 d2 3\nq3 0 d1 1\nq3 0 d3 2\n")
    judge.write_text("q1 0 d1 2\nq1 0 d2 1\nq2 0 d1 1\nq2 0 d2 3\nq3 0 d1 1\nq3 0 d3 2\n")
    return human, judge


WARNING = "Warning: only 3 queries; intervals from fewer than 10 queries are too narrow to trust (read them as rough)."


def test_intervals_from_few_queries_carry_a_warning(tmp_path: Path) -> None:
    human, judge = _few_queries(tmp_path)
    text = cli_run("agree", str(human), str(judge), "--n-boot", "200").stdout.splitlines()
    assert text[3] == f"Intervals: 95% percentile, cluster bootstrap over 3 queries, 200 resamples, seed 0. {WARNING}"
    data = json.loads(cli_run("agree", str(human), str(judge), "--n-boot", "200", "--json").stdout)
    assert data["interval_warning"] == WARNING
    labels = [Label(q, d, who, g) for q in ("q1", "q2", "q3") for d in ("d1", "d2") for who, g in (("ada", 1), ("bob", 2 if d == "d1" else 1))]
    assert WARNING in to_markdown(project_report(labels, grades=(0, 1, 2, 3), n_boot=100))


def test_one_item_through_agree_lists_why(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("q1 0 d1 2\n")
    (tmp_path / "b.txt").write_text("q1 0 d1 2\n")
    out = cli_run("agree", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--grades", "0,1,2,3").stdout.splitlines()
    assert out[2] == "joined 1 item (only in A: 0, only in B: 0)"
    assert out[8].split() == ["kappa", "undefined", "1"]
    assert f"kappa, kappa_linear, kappa_quadratic, gwet_ac1, gwet_ac2_quadratic: undefined: {ONE_ITEM}" in out


def test_the_app_says_why_and_warns(project: Project) -> None:
    from streamlit.testing.v1 import AppTest

    # One shared item: kappa undefined; one labelled query: the MDD is beyond the scale.
    add_judgments(project.path, project.annotator_id, {("q1", "q1-d1"): 1})
    add_judgments(project.path, project.admin_id, {("q1", "q1-d1"): 2})

    def page(name: str) -> AppTest:
        return open_page(project.path, name, project.admin_token)

    calibration = page("calibration_page")
    text = "\n".join(m.value for m in calibration.markdown)
    assert f"undefined ({ONE_ITEM})" in text and "this set cannot resolve any difference yet" in text
    assert "125.3" not in text and not calibration.exception
    progress = page("progress_page")
    agreement = progress.dataframe[2].value
    assert agreement.iloc[0]["kappa (quadratic)"] == f"undefined ({ONE_ITEM})"
    # Three queries with an overlap: the intervals carry the warning.
    add_judgments(project.path, project.annotator_id, {("q2", "q2-d1"): 1, ("q3", "q3-d1"): 0})
    add_judgments(project.path, project.admin_id, {("q2", "q2-d1"): 1, ("q3", "q3-d1"): 1})
    progress = page("progress_page")
    assert [w.value for w in progress.warning] == [WARNING]
    assert WARNING in "\n".join(m.value for m in page("calibration_page").markdown)


def _estimate_project(tmp_path: Path, people: dict, judge: dict) -> Path:
    """A one-query project whose pool's i-th entry has grade ``people[i]`` (people) and ``judge[i]``."""
    from labels_fixtures import make_project
    from labeler.store import access
    from labeler.store.access import OWNER
    from labeler.judges.verdict_files import import_verdicts

    db = make_project(tmp_path / "p.db", n_queries=1, per_query=10)
    pool = db.execute("SELECT query_id, doc_id FROM pool ORDER BY doc_id").fetchall()
    people, judge = ({pool[i]: g for i, g in d.items()} for d in (people, judge))
    access.add_annotator(db, "ann")
    for name, who, grades in (("h", {"annotator": "ann"}, people), ("j", {"judge": "g"}, judge)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"query_id": q, "doc_id": d, "relevance": r}) + "\n" for (q, d), r in grades.items()))
        import_verdicts(db, path, caller=OWNER, **who)
    db.close()
    return tmp_path / "p.db"


def test_a_rate_from_five_labels_stays_inside_zero_and_one(tmp_path: Path) -> None:
    # Five people-labelled items, all relevant; the judge misses one of them and calls the five
    # others relevant. Unclipped, PPI reads 1.2 [0.85, 1.55] and the people-only interval [1, 1].
    path = _estimate_project(tmp_path, dict.fromkeys(range(5), 3), {**dict.fromkeys(range(10), 3), 0: 0})
    data = json.loads(cli_run("estimate", str(path), "--judge", "g", "--metric", "relevant-share", "--json").stdout)
    assert data["n_labelled"] == 5
    for key in ("ppi", "ppi_plus_plus", "human_only"):
        assert 0.0 <= data[key]["low"] <= data[key]["value"] <= data[key]["high"] <= 1.0, (key, data[key])
    assert data["ppi"]["value"] == data["ppi"]["high"] == 1.0
    # Wilson: five out of five is not certainty; PPI++ ignores this judge (lambda 0), so it is people-only.
    assert data["human_only"]["low"] == data["ppi_plus_plus"]["low"] < 0.6 and data["lambda"] == 0
    text = cli_run("estimate", str(path), "--judge", "g", "--metric", "relevant-share").stdout
    assert "-0." not in text and "1.1" not in text
    assert "kept inside the metric's range [0, 1]" in text
    # Grades: mean-relevance stays inside [0, 3].
    data = json.loads(cli_run("estimate", str(path), "--judge", "g", "--metric", "mean-relevance", "--json").stdout)
    for key in ("ppi", "ppi_plus_plus", "human_only"):
        assert 0.0 <= data[key]["low"] <= data[key]["high"] <= 3.0, (key, data[key])


def test_no_printed_number_is_negative_zero() -> None:
    from calibration import Estimate
    from calibration.compare import Comparison, sentence

    assert format_estimate(Estimate("kappa", -0.0004, -0.0002, 0.3, 40)) == "0.000 [0.000, 0.300]"
    assert format_estimate(Estimate("kappa", -0.0, -0.2, 0.0, 40)) == "0.000 [-0.200, 0.000]"
    c = Comparison("A", "B", "nDCG@10", 3, 0.5, 0.5, -0.0001, -0.0002, 0.3, 1.0, 1.0, 0.2, 0.5, {}, "")
    assert sentence(c) == ("B trails A by 0.000 nDCG@10 [0.000, 0.300], p=1.000; this golden set resolves 0.500. "
                           "The difference is below that, so this set cannot tell the two apart.")


def test_a_detectable_difference_beyond_a_metric_scale_is_said_in_words() -> None:
    from calibration.compare import compare_runs

    [c] = compare_runs({"A": {"q1": 0.1, "q2": 0.9}, "B": {"q1": 0.9, "q2": 0.1}}, "nDCG@10", n_permutations=100, n_boot=100)
    assert c.mdd > 1.0
    assert c.sentence.endswith("; no difference on this scale can be detected with n = 2. This set cannot tell the two apart.")


def test_completeness_of_one_query_claims_no_certainty(tmp_path: Path) -> None:
    from golden_fixtures import _run_file, new_project, qrels, run

    db = new_project(tmp_path)
    run("add-run", str(db), str(_run_file(tmp_path / "a.trec", ["q1 Q0 d01 1 3 a", "q1 Q0 d02 2 2 a"])), "--name", "A")
    run("add-run", str(db), str(_run_file(tmp_path / "b.trec", ["q1 Q0 d01 1 3 b", "q1 Q0 d02 2 2 b"])), "--name", "B")
    run("import-judgments", str(db), str(qrels(tmp_path / "l.qrels", {("q1", "d01"): 2, ("q1", "d02"): 1})), "--annotator", "alice")
    run("freeze", str(db), "--version", "v1")
    out = run("completeness", str(db)).splitlines()
    assert out[0] == "v1: the pool's sources found 2 relevant chunks over 1 query (relevance level 1: grade >= 1)."
    assert out[1] == ("Estimated missed: 0.0 (no interval: the bootstrap resamples queries, and one query cannot be "
                      "resampled), from A x B; estimated recall of the pool 100.0%, from a single query: read it as rough.")
    assert "[0.0, 0.0]" not in "\n".join(out)
    data = json.loads(run("completeness", str(db), "--json"))
    assert (data["pairs"][0]["low"], data["pairs"][0]["high"]) == (None, None) and data["interval_note"].startswith("no interval")


def test_a_judge_report_says_an_mdd_beyond_the_scale_in_words() -> None:
    from calibration.judges import Power

    text = Power(3, "items", 0.9, 0.8, "SUPPORTED", 1.8, 1.25).sentence()
    assert "180.0" not in text and "125.0" not in text
    assert text.startswith("With this judge (sensitivity 0.90, specificity 0.80 against people for SUPPORTED) and n = 3 "
                           "items, no difference between two systems on the 100-point scale can be detected; people's "
                           "labels resolve no difference on the 100-point scale")
    assert Power(3, "items", None, None, "SUPPORTED", None, 1.25).sentence().endswith(
        "3 items resolve no difference on the 100-point scale with people's labels.")


def test_perfect_agreement_on_a_few_items_is_not_a_zero_width_interval() -> None:
    import math

    import numpy as np

    from calibration import gwet_ac, krippendorff_alpha, raw_agreement, wilson_interval

    # Three items, both raters agree on each: every bootstrap resample is perfect agreement.
    agreement = raw_agreement([1, 2, 3], [1, 2, 3])
    assert (agreement.low, agreement.high) == wilson_interval(3, 3, 0.95) and agreement.low < 0.5
    assert agreement.method == "wilson"
    for e in (cohen_kappa([1, 2, 3], [1, 2, 3], labels=[0, 1, 2, 3]), gwet_ac([1, 2, 3], [1, 2, 3], labels=[0, 1, 2, 3]),
              krippendorff_alpha(np.array([[1.0, 2, 3], [1, 2, 3]]), "ordinal", value_domain=[0, 1, 2, 3])):
        assert e.value == 1.0 and math.isnan(e.low) and math.isnan(e.high), e
        assert format_estimate(e) == "1.000"
    # With disagreement the bootstrap has spread, and keeps its interval.
    kappa = cohen_kappa([1, 2, 3, 0, 1, 2, 3, 2, 1], [1, 2, 3, 1, 1, 2, 2, 2, 1], labels=[0, 1, 2, 3])
    assert kappa.low < kappa.value < kappa.high

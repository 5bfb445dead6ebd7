"""answer-metrics: per-system generation rates from people, a judge and PPI++, clustered by
question and kept inside [0, 1]; paired comparisons with the MDD; faithfulness never alone."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from calibration.clustered import cluster_variance, clustered_ppi, clustered_rate, effective_n, paired_difference
from calibration.stats import wilson
from labels_fixtures import write_jsonl
from labeler.cli import cli

A = [
    {"answer_id": "a1", "question": "Capital of France?", "response": "Paris. It is large.", "reference": "Paris",
     "contexts": ["Paris is the capital of France."], "claims": ["Paris is the capital.", "It is large."]},
    {"answer_id": "a2", "question": "Capital of Spain?", "response": "Madrid.", "reference": "Madrid",
     "contexts": ["Madrid is in Spain."], "claims": ["Madrid."]},
    {"answer_id": "a3", "question": "Capital of Peru?", "response": "", "reference": "Lima"},  # an abstention
]
B = [
    {"answer_id": "b1", "question": "Capital of France?", "response": "Lyon, I think.", "reference": "Paris",
     "contexts": ["Paris is the capital of France."], "claims": ["Lyon."]},
    {"answer_id": "b2", "question": "Capital of Spain?", "response": "Madrid, a big city.", "reference": "Madrid",
     "contexts": ["Madrid is in Spain."], "claims": ["Madrid.", "It is a big city."]},
    {"answer_id": "b3", "question": "Capital of Peru?", "response": "I don't know.", "reference": "Lima"},
]
PEOPLE = [
    {"item_id": "a1", "verdict": "CORRECT"}, {"item_id": "a1#1", "verdict": "SUPPORTED"},
    {"item_id": "a1#2", "verdict": "UNSUPPORTED"}, {"item_id": "a2#1", "verdict": "SUPPORTED"},
    {"item_id": "a2", "verdict": "CORRECT"}, {"item_id": "a1", "verdict": "ADDRESSES"},
    {"item_id": "b1", "verdict": "INCORRECT"}, {"item_id": "b1#1", "verdict": "UNSUPPORTED"},
    {"item_id": "b2", "verdict": "CORRECT"}, {"item_id": "b2#1", "verdict": "SUPPORTED"},
    {"item_id": "b2#2", "verdict": "NOT_ONE_CLAIM"}, {"item_id": "b3", "verdict": "INCORRECT"},
    {"item_id": "b1", "verdict": "ADDRESSES"},
]


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.output


@pytest.fixture
def project(tmp_path: Path) -> str:
    db = str(tmp_path / "p.db")
    _run("init", db)
    _run("import-answers", db, write_jsonl(tmp_path / "a.jsonl", A), "--system", "A")
    _run("import-answers", db, write_jsonl(tmp_path / "b.jsonl", B), "--system", "B")
    _run("import-verdicts", db, write_jsonl(tmp_path / "v.jsonl", PEOPLE), "--annotator", "ann")
    return db


def test_rates_by_hand_and_the_json_shape(project: str) -> None:
    out = json.loads(_run("answer-metrics", project, "--json"))
    assert set(out) >= {"systems", "pairs"} and set(out["systems"]) == {"A", "B"}
    for metrics in out["systems"].values():
        assert set(metrics) == {"faithfulness", "supported_answers", "correctness", "answer-relevance", "abstention"}
        for metric, sources in metrics.items():
            assert set(sources) == {"people", "judge", "ppi"} | ({"text"} if metric == "abstention" else set())
            assert all({"value", "low", "high", "n"} <= set(v) for v in sources.values())
    a, b = out["systems"]["A"], out["systems"]["B"]
    # A: a1 has 1 of 2 claims supported, a2 1 of 1; a3 is empty (no claims): mean over answers (0.5 + 1) / 2.
    assert (a["faithfulness"]["people"]["value"], a["faithfulness"]["people"]["n"]) == (0.75, 2)
    assert (a["faithfulness"]["people"]["claims"], a["faithfulness"]["people"]["claim_weighted"]) == (3, pytest.approx(2 / 3))
    # B: b1 0 of 1; b2 1 of 1 judged, its second claim flagged as not one claim (left out, counted apart).
    assert (b["faithfulness"]["people"]["value"], b["faithfulness"]["people"]["flagged"]) == (0.5, 1)
    assert b["faithfulness"]["people"]["flag_rate"] == pytest.approx(1 / 3)
    # Correctness: the empty a3 with a reference is incorrect; b3 declines and was judged INCORRECT.
    assert a["correctness"]["people"]["value"] == pytest.approx(2 / 3) and a["correctness"]["people"]["n"] == 3
    assert b["correctness"]["people"]["value"] == pytest.approx(1 / 3)
    # Answer relevance: a1 addresses (the one labelled of the two non-empty answers, a1 and a2);
    # the empty a3 does not, known without a label: 2/3 · 1 + 1/3 · 0.
    assert (a["answer-relevance"]["people"]["value"], a["answer-relevance"]["people"]["n"]) == (pytest.approx(2 / 3), 2)
    assert (a["answer-relevance"]["people"]["n_empty"], a["answer-relevance"]["people"]["n_answers"]) == (1, 3)
    # Abstention by the text rule: the empty a3, and b3 "I don't know."; by people (DECLINES on
    # answer relevance): none marked, the empty a3 declines known without a verdict: 2/3 · 0 + 1/3 · 1.
    assert (a["abstention"]["text"]["value"], b["abstention"]["text"]["value"]) == (pytest.approx(1 / 3),) * 2
    assert (a["abstention"]["people"]["value"], b["abstention"]["people"]["value"]) == (pytest.approx(1 / 3), 0.0)
    assert a["faithfulness"]["people"]["words"] == 2.5 and out["answers"]["B"] == {"n": 3, "words": pytest.approx(10 / 3)}
    assert a["faithfulness"]["judge"]["value"] is None and a["faithfulness"]["ppi"]["undefined"] == "no judge given"
    for metrics in out["systems"].values():
        for sources in metrics.values():
            people = sources["people"]
            assert people["value"] is None or 0.0 <= people["low"] <= people["value"] <= people["high"] <= 1.0


def test_paired_comparison_sign_and_mdd(project: str) -> None:
    pairs = json.loads(_run("answer-metrics", project, "--json"))["pairs"]
    got = {(p["a"], p["b"], p["metric"]): p for p in pairs if p["source"] == "people"}
    c = got[("A", "B", "correctness")]
    # Per question A − B: France 1 − 0, Spain 1 − 1, Peru 0 − 0; SD (n − 1) of the differences sqrt(1/3).
    sd = math.sqrt(1 / 3)
    assert (c["difference"], c["n"]) == (pytest.approx(1 / 3), 3)
    assert c["mdd"] == pytest.approx((1.959964 + 0.841621) * sd / math.sqrt(3), abs=1e-5)
    assert (c["low"], c["high"]) == pytest.approx((1 / 3 - 1.959964 * sd / math.sqrt(3), min(1.0, 1 / 3 + 1.959964 * sd / math.sqrt(3))), abs=1e-5)
    assert got[("A", "B", "faithfulness")]["difference"] == pytest.approx(0.25)  # (0.5 − 0) + (1 − 1), over 2
    reverse = json.loads(_run("answer-metrics", project, "--system", "B", "--system", "A", "--json"))["pairs"]
    flipped = next(p for p in reverse if p["metric"] == "correctness" and p["source"] == "people")
    assert (flipped["a"], flipped["b"], flipped["difference"]) == ("B", "A", pytest.approx(-1 / 3))


def _blocks(text: str) -> list[str]:
    return [b for b in text.split("\n\n") if b.strip()]


def test_faithfulness_is_never_shown_without_correctness_and_abstention(project: str, tmp_path: Path) -> None:
    text = _run("answer-metrics", project, "--html", str(tmp_path / "r.html"))
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    blocks = [b.lower() for b in _blocks(text) if "faithfulness" in b.lower()]
    tables = [t.lower() for t in re.findall(r"<table>.*?</table>", html) if "faithfulness" in t.lower()]
    assert len(blocks) == 4 and len(tables) == 3  # the intro, two systems, one pair
    for part in blocks + tables:
        assert "abstention" in part and ("correctness" in part or "answer relevance" in part), part


def test_names_from_the_data_are_escaped_in_html(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    _run("init", db)
    _run("import-answers", db, write_jsonl(tmp_path / "a.jsonl", A), "--system", "<i>sys</i>")
    _run("import-answers", db, write_jsonl(tmp_path / "b.jsonl", B[:1]), "--system", "other")
    text = _run("answer-metrics", db, "--html", str(tmp_path / "r.html"))
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "&lt;i&gt;sys&lt;/i&gt;" in html and "<i>" not in html
    assert "no paired comparison" in text  # one shared question is not a comparison


def test_estimate_of_faithfulness_says_abstention_and_correctness_beside_it(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    _run("init", db)
    responses = ["It is blue.", "", "I don't know.", "Green.", "Red.", "Blue."]
    items = [{"item_id": f"f{i}", "kind": "faithfulness", "question": "colour?", "contexts": ["blue"], "response": r}
             for i, r in enumerate(responses, 1)]
    _run("import-items", db, write_jsonl(tmp_path / "items.jsonl", items))
    _run("import-verdicts", db, write_jsonl(tmp_path / "p.jsonl", [{"item_id": f"f{i}", "verdict": "SUPPORTED"}
                                                                   for i in (1, 2, 3)]), "--annotator", "ann")
    _run("import-verdicts", db, write_jsonl(tmp_path / "j.jsonl", [{"item_id": f"f{i}", "verdict": "SUPPORTED"}
                                                                   for i in range(1, 7)]), "--judge", "j")
    text = _run("estimate", db, "--judge", "j", "--metric", "faithfulness-rate")
    assert "abstention: 2 of 6 responses (33.3%)" in text
    assert "correctness" in text and "answer relevance" in text
    out = json.loads(_run("estimate", db, "--judge", "j", "--metric", "faithfulness-rate", "--json"))
    assert out["abstention"] == {"abstained": 2, "items": 6, "rate": pytest.approx(1 / 3)}


def test_judge_values_and_ppi_through_the_command(tmp_path: Path) -> None:
    from calibration.ppi import ppi_mean

    rng = np.random.default_rng(7)
    answers = [{"answer_id": f"s{i}", "question": f"q{i}?", "response": f"answer {i}", "reference": "x"} for i in range(40)]
    truth = rng.random(40) < 0.6
    judge = np.where(rng.random(40) < 0.8, truth, True)  # errs towards CORRECT
    labelled = range(15)
    db = str(tmp_path / "p.db")
    _run("init", db)
    _run("import-answers", db, write_jsonl(tmp_path / "s.jsonl", answers), "--system", "S")
    word = lambda ok: "CORRECT" if ok else "INCORRECT"  # noqa: E731
    _run("import-verdicts", db, write_jsonl(tmp_path / "p.jsonl", [{"item_id": f"s{i}", "verdict": word(truth[i])}
                                                                   for i in labelled]), "--annotator", "ann")
    _run("import-verdicts", db, write_jsonl(tmp_path / "j.jsonl", [{"item_id": f"s{i}", "verdict": word(judge[i])}
                                                                   for i in range(40)]), "--judge", "j")
    out = json.loads(_run("answer-metrics", db, "--judge", "j", "--json"))["systems"]["S"]["correctness"]
    # Answer ids sort as strings (s0, s1, s10, ...); PPI does not depend on the order.
    y, f = truth[:15].astype(float), judge[:15].astype(float)
    expected = ppi_mean(y, f, judge[15:].astype(float), bounds=(0.0, 1.0))
    assert out["ppi"]["value"] == pytest.approx(expected.ppi.value)
    assert (out["ppi"]["low"], out["ppi"]["high"]) == pytest.approx((expected.ppi.low, expected.ppi.high))
    assert (out["ppi"]["n_labelled"], out["ppi"]["n_unlabelled"], out["ppi"]["lambda"]) == (15, 25, pytest.approx(expected.lam))
    assert out["judge"]["value"] == pytest.approx(judge.mean()) and out["people"]["value"] == pytest.approx(y.mean())
    text = _run("answer-metrics", db, "--judge", "j")
    assert "PPI++" in text and "15 labelled by people, 25 by the judge only" in text


def test_empty_answers_join_ppi_by_their_known_share_not_as_labelled_ones(tmp_path: Path) -> None:
    from calibration.ppi import ppi_mean

    rng = np.random.default_rng(5)
    truth = rng.random(20) < 0.7
    judge = np.where(rng.random(20) < 0.7, truth, True)
    answers = [{"answer_id": f"s{i:02d}", "question": f"q{i}?", "response": f"answer {i}", "reference": "x"} for i in range(20)]
    answers += [{"answer_id": f"e{i:02d}", "question": f"e{i}?", "response": "", "reference": "x"} for i in range(10)]
    db = str(tmp_path / "p.db")
    _run("init", db)
    _run("import-answers", db, write_jsonl(tmp_path / "s.jsonl", answers), "--system", "S")
    word = lambda ok: "CORRECT" if ok else "INCORRECT"  # noqa: E731
    _run("import-verdicts", db, write_jsonl(tmp_path / "p.jsonl", [{"item_id": f"s{i:02d}", "verdict": word(truth[i])}
                                                                   for i in range(8)]), "--annotator", "ann")
    _run("import-verdicts", db, write_jsonl(tmp_path / "j.jsonl", [{"item_id": f"s{i:02d}", "verdict": word(judge[i])}
                                                                   for i in range(20)]), "--judge", "j")
    ppi = json.loads(_run("answer-metrics", db, "--judge", "j", "--json"))["systems"]["S"]["correctness"]["ppi"]
    inner = ppi_mean(truth[:8].astype(float), judge[:8].astype(float), judge[8:].astype(float), bounds=(0.0, 1.0)).ppi
    # 20 of the 30 answers are estimated; the 10 empty ones are incorrect, known without a label.
    # The variance adds the empty share's own: w² se² + θ² w (1 − w) / 30 (one answer per question).
    w, z = 20 / 30, 1.959964
    se = (inner.high - inner.low) / (2 * z)
    half = z * math.sqrt(w * w * se * se + inner.value ** 2 * w * (1 - w) / 30)
    assert 0 < inner.low and inner.high < 1  # not clipped: the interval gives the standard error back
    assert ppi["value"] == pytest.approx(inner.value * w)
    assert (ppi["low"], ppi["high"]) == pytest.approx((inner.value * w - half, inner.value * w + half), abs=1e-5)
    assert (ppi["n"], ppi["n_labelled"], ppi["n_unlabelled"], ppi["n_empty"]) == (30, 8, 12, 10)


def test_unknown_system_and_silent_judge_are_refused(project: str) -> None:
    result = CliRunner().invoke(cli, ["answer-metrics", project, "--system", "C"])
    assert result.exit_code == 1 and "no system 'C'" in result.output
    result = CliRunner().invoke(cli, ["answer-metrics", project, "--judge", "nobody"])
    assert result.exit_code == 1 and "judge 'nobody' gave no verdict" in result.output


# --- the statistics ----------------------------------------------------------------------------

def test_ppi_equals_ppi_python_on_unclustered_answers() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(3)
    y = (rng.random(60) < 0.7).astype(float)
    f = np.where(rng.random(60) < 0.85, y, 1.0)
    fu = (rng.random(500) < 0.78).astype(float)
    units_l, units_u = [f"l{i}" for i in range(60)], [f"u{i}" for i in range(500)]
    for tuned, lam in ((False, 1), (True, None)):
        r = clustered_ppi(y, f, units_l, fu, units_u, tuned=tuned)
        low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05, **({"lam": lam} if lam is not None else {}))
        assert (r.estimate.low, r.estimate.high) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])))


def test_cluster_variance_matches_a_brute_force_cluster_bootstrap() -> None:
    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 5, size=60)
    units = np.repeat(np.arange(60), sizes)
    effect = rng.normal(0, 1.2, size=60)[units]  # answers to one question move together
    values = (rng.random(len(units)) < 1 / (1 + np.exp(-(0.3 + effect)))).astype(float)
    means = []
    for _ in range(4000):  # resample whole questions, answers of a drawn question together
        drawn = rng.integers(0, 60, size=60)
        taken = np.concatenate([np.flatnonzero(units == g) for g in drawn])
        means.append(values[taken].mean())
    assert cluster_variance(values, units) == pytest.approx(np.var(means), rel=0.12)
    assert cluster_variance(values, units) > np.var(values) / len(values) * 1.2  # clustering widens it


def test_design_effect_wilson_by_hand() -> None:
    # Two questions, two answers each, agreeing within a question: p = 0.5, V = 0.125, n_eff = 2.
    e = clustered_rate([1.0, 1.0, 0.0, 0.0], ["q1", "q1", "q2", "q2"])
    z = 1.959964
    centre, half = (0.5 + z * z / 4) / (1 + z * z / 2), z * math.sqrt(0.25 / 2 + z * z / 16) / (1 + z * z / 2)
    assert effective_n([1.0, 1.0, 0.0, 0.0], ["q1", "q1", "q2", "q2"]) == pytest.approx(2.0)
    assert (e.low, e.high) == pytest.approx((centre - half, centre + half), abs=1e-6)
    alone = clustered_rate([1.0, 1.0, 0.0, 0.0], ["q1", "q2", "q3", "q4"])
    assert alone.high - alone.low < e.high - e.low  # the same values as four questions: narrower
    assert wilson(0.8, 10, z) == pytest.approx((0.4902, 0.9433), abs=1e-4)


def test_with_empty_answers_labelled_in_full_the_rate_is_the_plain_one() -> None:
    from calibration.clustered import stratified_rate

    values = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]  # the last two are empty answers (known 0)
    units = [f"q{i}" for i in range(6)]
    plain = clustered_rate(values, units)
    split = stratified_rate(values[:4], units[:4], units, [True] * 4 + [False] * 2, 0.0)
    assert (split.value, split.low, split.high) == pytest.approx((plain.value, plain.low, plain.high))


@pytest.mark.parametrize("values", [[1.0] * 30, [0.0] * 30, [0.0] * 199 + [1.0], [1.0] * 199 + [0.0], [1.0, 0.98],
                                    [0.999] * 50, [0.001] * 7])
@pytest.mark.parametrize("clustered", [False, True])
def test_an_interval_never_leaves_zero_one(values: list[float], clustered: bool) -> None:
    units = [f"q{i // 5 if clustered else i}" for i in range(len(values))]
    e = clustered_rate(values, units)
    assert 0.0 <= e.low <= e.value <= e.high <= 1.0 and e.high > e.low
    if len(values) >= 4:
        half = len(values) // 2
        f = [min(1.0, v + 0.1) for v in values]  # a judge that says more is good than there is
        r = clustered_ppi(values[:half], f[:half], units[:half], f[half:], units[half:]).estimate
        assert 0.0 <= r.low <= r.value <= r.high <= 1.0


def test_paired_difference_needs_two_shared_questions() -> None:
    assert paired_difference({"q1": 1.0}, {"q1": 0.0, "q2": 1.0}) is None
    d = paired_difference({"q1": 1.0, "q2": 0.0, "q3": 1.0}, {"q1": 0.0, "q2": 0.0, "q3": 0.0})
    assert d.difference == pytest.approx(2 / 3) and -1.0 <= d.low < d.high <= 1.0


def test_a_system_of_empty_answers_only_is_incorrect_with_an_interval(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    _run("init", db)
    answers = [{"answer_id": f"e{i}", "question": f"e{i}?", "response": "", "reference": "x"} for i in range(4)]
    _run("import-answers", db, write_jsonl(tmp_path / "e.jsonl", answers), "--system", "E")
    c = json.loads(_run("answer-metrics", db, "--json"))["systems"]["E"]["correctness"]["people"]
    assert (c["value"], c["low"], c["n"]) == (0.0, 0.0, 4) and 0.0 < c["high"] < 1.0


def test_numbers_from_a_judge_come_with_its_card_line(project: str, tmp_path: Path) -> None:
    judged = [r for r in PEOPLE if r["verdict"] != "NOT_ONE_CLAIM"]  # a judge never flags a claim
    _run("import-verdicts", project, write_jsonl(tmp_path / "j.jsonl", judged), "--judge", "<j>")
    assert "judge <j>: uncalibrated (no card)" in _run("answer-metrics", project, "--judge", "<j>").splitlines()
    out = json.loads(_run("answer-metrics", project, "--judge", "<j>", "--json"))
    assert out["judge_card"] == "judge <j>: uncalibrated (no card)"
    _run("answer-metrics", project, "--judge", "<j>", "--html", str(tmp_path / "r.html"))
    assert "<p>judge &lt;j&gt;: uncalibrated (no card)</p>" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert json.loads(_run("answer-metrics", project, "--json"))["judge_card"] is None


def _judged_project(tmp_path: Path) -> str:
    """Eight answers with claims, people on the claims of five, a judge on every claim: the
    faithfulness PPI++ row has a value (and no claim counts of its own)."""
    answers = [{"answer_id": f"s{i}", "question": f"q{i}?", "response": f"Answer {i}. More {i}.", "reference": "x",
                "contexts": [f"context {i}"], "claims": [f"Answer {i}.", f"More {i}."]} for i in range(8)]
    people = [{"item_id": f"s{i}#{n}", "verdict": "SUPPORTED" if (i + n) % 3 else "UNSUPPORTED"}
              for i in range(5) for n in (1, 2)]
    judge = [{"item_id": f"s{i}#{n}", "verdict": "SUPPORTED" if (i + n) % 4 else "UNSUPPORTED"}
             for i in range(8) for n in (1, 2)]
    db = str(tmp_path / "p.db")
    _run("init", db)
    _run("import-answers", db, write_jsonl(tmp_path / "s.jsonl", answers), "--system", "S")
    _run("import-verdicts", db, write_jsonl(tmp_path / "p.jsonl", people), "--annotator", "ann")
    _run("import-verdicts", db, write_jsonl(tmp_path / "j.jsonl", judge), "--judge", "j")
    return db


def test_judge_text_and_html_print_the_faithfulness_ppi_row(tmp_path: Path) -> None:
    db = _judged_project(tmp_path)
    ppi = json.loads(_run("answer-metrics", db, "--judge", "j", "--json"))["systems"]["S"]["faithfulness"]["ppi"]
    assert ppi["value"] is not None and "claims" not in ppi  # the row the text and HTML once ended on
    text = _run("answer-metrics", db, "--judge", "j", "--html", str(tmp_path / "r.html"))
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Traceback" not in text and "PPI++" in text and "5 labelled by people, 3 by the judge only" in text
    assert html.rstrip().endswith("</html>") and "PPI++" in html


def test_whole_answer_verdicts_import_and_give_supported_answers(project: str, tmp_path: Path) -> None:
    whole = [{"item_id": "a1@faithfulness", "verdict": "SUPPORTED"},  # its claims say otherwise: the whole verdict counts
             {"item_id": "b3", "task": "faithfulness", "verdict": "UNSUPPORTED"}]  # b3 has no claims
    _run("import-verdicts", project, write_jsonl(tmp_path / "w.jsonl", whole), "--annotator", "ann")
    out = json.loads(_run("answer-metrics", project, "--json"))["systems"]
    a, b = out["A"]["supported_answers"]["people"], out["B"]["supported_answers"]["people"]
    # A: a1 by its whole-answer verdict (1), a2 from its one SUPPORTED claim (1); the empty a3 left out.
    assert (a["value"], a["n"], a["from_whole"], a["from_claims"], a["disagree"]) == (1.0, 2, 1, 1, 1)
    assert a["left_out"] == {"empty": 1} and 0.0 <= a["low"] <= 1.0 == a["high"]
    # B: b1 from claims (0), b2 from claims, its flagged claim left out (1), b3 by its whole verdict (0).
    assert (b["value"], b["n"], b["from_whole"], b["disagree"]) == (pytest.approx(1 / 3), 3, 1, 0)
    assert out["A"]["faithfulness"]["people"]["value"] == 0.75  # the claim-based rate stays as it was
    text = _run("answer-metrics", project)
    row = next(line for line in text.splitlines() if line.lstrip().startswith("supported answers"))
    assert "1 from a whole-answer verdict, 1 from claims" in row
    assert "1 answer whose claims say otherwise (the whole-answer verdict counts)" in row
    assert "left out: 1 answer empty" in row


def test_supported_answers_from_a_judge_and_ppi(tmp_path: Path) -> None:
    db = _judged_project(tmp_path)
    _run("import-verdicts", db, write_jsonl(tmp_path / "jw.jsonl", [{"item_id": "s7@faithfulness", "verdict": "SUPPORTED"}]),
         "--judge", "j")
    s = json.loads(_run("answer-metrics", db, "--judge", "j", "--json"))["systems"]["S"]["supported_answers"]
    # People: claims of s0-s4; supported when both claims are: (i + 1) % 3 and (i + 2) % 3 both non-zero: i = 0, 3.
    assert (s["people"]["value"], s["people"]["n"]) == (pytest.approx(2 / 5), 5)
    # The judge: both claims supported when (i + 1) % 4 and (i + 2) % 4: i = 0, 1, 4, 5; s7 by its whole verdict.
    assert (s["judge"]["value"], s["judge"]["n"], s["judge"]["from_whole"]) == (pytest.approx(5 / 8), 8, 1)
    assert s["ppi"]["value"] is not None and (s["ppi"]["n_labelled"], s["ppi"]["n_unlabelled"]) == (5, 3)
    assert 0.0 <= s["ppi"]["low"] <= s["ppi"]["value"] <= s["ppi"]["high"] <= 1.0
    text = _run("answer-metrics", db, "--judge", "j", "--html", str(tmp_path / "r.html"))
    assert "supported answers" in text and "supported answers" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_the_faithfulness_row_says_why_answers_are_left_out(tmp_path: Path) -> None:
    answers = [{"answer_id": f"s{i}", "question": f"q{i}?", "response": f"Answer {i}. More {i}.",
                "contexts": ["c"], "claims": [f"Answer {i}.", f"More {i}."]} for i in range(5)]
    answers.append({"answer_id": "s5", "question": "q5?", "response": "No claims here."})
    people = [{"item_id": "s0#1", "verdict": "SUPPORTED"}, {"item_id": "s0#2", "verdict": "NOT_ONE_CLAIM"},
              {"item_id": "s1#1", "verdict": "SUPPORTED"},  # s1#2 has no verdict yet
              {"item_id": "s3#1", "verdict": "NOT_ONE_CLAIM"}, {"item_id": "s3#2", "verdict": "NOT_ONE_CLAIM"},
              {"item_id": "s4#1", "verdict": "SUPPORTED"}, {"item_id": "s4#2", "verdict": "UNSUPPORTED"}]
    split = [{"item_id": "s2#1", "verdict": "SUPPORTED"}, {"item_id": "s2#2", "verdict": "SUPPORTED"}]
    other = [{"item_id": "s2#1", "verdict": "UNSUPPORTED"}, {"item_id": "s2#2", "verdict": "SUPPORTED"}]
    db = str(tmp_path / "p.db")
    _run("init", db)
    _run("import-answers", db, write_jsonl(tmp_path / "s.jsonl", answers), "--system", "S")
    _run("import-verdicts", db, write_jsonl(tmp_path / "p.jsonl", people + split), "--annotator", "ann")
    _run("import-verdicts", db, write_jsonl(tmp_path / "o.jsonl", other), "--annotator", "bob")
    f = json.loads(_run("answer-metrics", db, "--json"))["systems"]["S"]["faithfulness"]["people"]
    assert (f["value"], f["n"]) == (0.75, 2)  # s0 (1 of 1 judged) and s4 (1 of 2)
    assert f["left_out"] == {"no_claims": 1, "split": 1, "unjudged": 1, "all_flagged": 1}
    # One denominator: the 4 claims of the answers counted, 3 judged and 1 flagged; s3's two apart.
    assert (f["claims"], f["flagged"], f["flag_rate"], f["flagged_left_out"]) == (3, 1, pytest.approx(1 / 4), 2)
    row = next(line for line in _run("answer-metrics", db).splitlines() if line.lstrip().startswith("faithfulness"))
    assert "4 claims in these answers: 3 judged (1.5 per answer)" in row and "1 of the 4 flagged not one claim (25.0%)" in row
    assert ("left out: 1 answer with no claims (split-claims gives them some), 1 answer with a claim people split on "
            "(no majority), 1 answer with a claim people gave no verdict on, 1 answer whose every claim was flagged "
            "not one claim") in row


#: Six answers: the text rule finds d1, d2 (d2 declines late); people mark d1 and d3 DECLINES
#: (d3 declines in words the rule does not know); the judge says DECLINES on d1, d2, d3.
DECLINING = [
    {"answer_id": "d1", "question": "Warranty?", "response": "I don't know."},
    {"answer_id": "d2", "question": "Opening hours?", "response": "Thanks for asking. The hours are not stated in the provided documents."},
    {"answer_id": "d3", "question": "Return fee?", "response": "That lies outside what I was handed."},
    {"answer_id": "d4", "question": "Colour?", "response": "The documents do not say exactly, but it is blue."},
    {"answer_id": "d5", "question": "Size?", "response": "Large."},
    {"answer_id": "d6", "question": "Weight?", "response": ""},
]


def test_abstention_from_text_people_and_judge_with_the_rule_s_agreement(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    _run("init", db)
    _run("import-answers", db, write_jsonl(tmp_path / "a.jsonl", DECLINING), "--system", "S")
    people = {"d1": "DECLINES", "d2": "ADDRESSES", "d3": "DECLINES", "d4": "ADDRESSES", "d5": "ADDRESSES"}
    judge = {**people, "d2": "DECLINES"}
    for who, said in (("--annotator", people), ("--judge", judge)):
        _run("import-verdicts", db, write_jsonl(tmp_path / f"{who}.jsonl", [
            {"item_id": f"{a}@answer-relevance", "verdict": v} for a, v in said.items()]), who, "j" if who == "--judge" else "ann")
    out = json.loads(_run("answer-metrics", db, "--judge", "j", "--json"))["systems"]["S"]
    abst = out["abstention"]
    assert abst["text"]["value"] == pytest.approx(3 / 6)  # d1, d2 and the empty d6
    assert abst["people"]["value"] == pytest.approx(3 / 6)  # d1, d3 and the empty d6
    assert abst["judge"]["value"] == pytest.approx(4 / 6)
    assert abst["ppi"]["value"] is not None or abst["ppi"]["undefined"], abst["ppi"]  # every answer labelled: PPI++ may say why not
    agreement = abst["text"]["agreement"]  # on the five non-empty answers people judged
    assert {k: agreement[k] for k in ("n", "both", "text_only", "people_only", "neither", "agree", "disagree")} == {
        "n": 5, "both": 1, "text_only": 1, "people_only": 1, "neither": 2, "agree": 3, "disagree": 2}
    assert (agreement["sensitivity"], agreement["precision"]) == (0.5, 0.5)
    # kappa: p_o 3/5, p_e (2/5)(2/5) + (3/5)(3/5) = 13/25.
    assert agreement["kappa"] == pytest.approx((3 / 5 - 13 / 25) / (1 - 13 / 25))
    # Answer relevance: DECLINES does not address the question; the empty d6 does not either.
    assert out["answer-relevance"]["people"]["value"] == pytest.approx(3 / 6)
    text = _run("answer-metrics", db, "--judge", "j", "--html", str(tmp_path / "r.html"))
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    line = "against people on 5 answers: agree 3, disagree 2 (rule only 1, people only 1), kappa 0.167"
    assert line in text and line in html
    rows = [r for r in text.splitlines() if r.strip().startswith(("abstention", "text rule", "people", "judge", "PPI++"))]
    assert any(r.split()[:3] == ["abstention", "text", "rule"] for r in rows)

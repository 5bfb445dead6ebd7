"""goldpool gate: the one-sided paired test, the tolerance, the warning, the reports, and bad input."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from click.testing import CliRunner

from calibration import CalibrationError
from calibration.gate import correct, gate_metric, one_sided_p
from gate_fixtures import write_golden, write_runs
from labeler.cli import cli
from labels_fixtures import write_jsonl


def _gate(*args: str) -> object:
    return CliRunner().invoke(cli, ["gate", *args])


# --- the test, by hand -----------------------------------------------------------------------

def test_a_hand_computed_paired_case() -> None:
    # δ = candidate − baseline = (−0.2, −0.1, 0, +0.1, −0.3); the zero cannot change sign, so
    # the 2^4 sign patterns of (0.2, 0.1, 0.1, 0.3) decide. Sums at or below the observed −0.5:
    # with −0.3: (−0.2 −0.1 −0.1) = −0.4, (−0.2 −0.1 +0.1) and (−0.2 +0.1 −0.1) = −0.2, all
    # ≤ −0.2; with +0.3 the rest would need ≤ −0.8 (at least −0.4): none. p = 3/16.
    baseline = [0.5, 0.6, 0.7, 0.4, 0.9]
    candidate = [0.3, 0.5, 0.7, 0.5, 0.6]
    r = gate_metric(baseline, candidate, "nDCG@10", n_boot=0)
    assert r.p_value == 3 / 16
    assert r.drop == pytest.approx(0.1)
    # sd of δ: deviations from −0.1 are −0.1, 0, 0.1, 0.2, −0.2: sqrt(0.10 / 4) = 0.158114.
    assert r.sd == pytest.approx(math.sqrt(0.025))
    # MDD = (1.959964 + 0.841621) · 0.158114 / sqrt(5) = 0.198104.
    assert r.mdd == pytest.approx(2.801585 * math.sqrt(0.025) / math.sqrt(5), abs=1e-6)
    assert (r.status, r.warning) == ("pass", "a drop of 0.100 is below the 0.198 this set resolves")
    # A tolerance of 0.05 and alpha 0.2: 3/16 = 0.1875 < 0.2 and 0.1 >= 0.05, so it fails.
    strict = gate_metric(baseline, candidate, "nDCG@10", alpha=0.2, tolerance=0.05, n_boot=0)
    assert (strict.status, strict.warning) == ("fail", "")
    # At alpha 0.15 the same drop is not significant: it passes, and the warning says why.
    loose = gate_metric(baseline, candidate, "nDCG@10", alpha=0.15, tolerance=0.05, n_boot=0)
    assert (loose.status, loose.warning) == ("pass", "a drop of 0.100 is not significant (one-sided p=0.188, alpha 0.15)")


def test_the_random_sign_flips_agree_with_every_pattern_enumerated() -> None:
    rng = np.random.default_rng(3)
    deltas = (rng.normal(-0.05, 0.3, size=18)).round(3)
    patterns = np.array(list(itertools.product((-1, 1), repeat=deltas.size)), dtype=float)
    exact = float(np.mean(patterns @ deltas <= deltas.sum() + 1e-12))
    assert abs(one_sided_p(deltas, n_permutations=20_000, seed=1) - exact) < 0.01
    assert 0.05 < exact < 0.95  # a case where the two could disagree


def test_twice_the_one_sided_p_is_compares_two_sided_p() -> None:
    # The sign-flip mean is symmetric about 0, so P(|M| >= |m|) = 2 P(M <= -|m|): the
    # one-sided test and `compare`'s two-sided one, two implementations, must agree.
    from calibration.compare import randomisation_p

    rng = np.random.default_rng(5)
    for size in (12, 40):
        deltas = rng.normal(-0.04, 0.25, size=size).round(3)
        assert abs(randomisation_p(deltas, n_permutations=40_000, seed=2)
                   - 2 * one_sided_p(deltas, n_permutations=40_000, seed=3)) < 0.015


def test_the_gate_and_compare_hold_one_record_of_the_paired_test() -> None:
    from calibration.compare import PairedTest, compare_runs

    base, cand = [0.5, 0.25, 1.0, 0.0, 0.75], [0.25, 0.25, 0.5, 0.0, 1.0]
    gate = gate_metric(base, cand, "nDCG@10", n_boot=500, seed=3)
    [c] = compare_runs({"A": dict(zip("abcde", base)), "B": dict(zip("abcde", cand))}, "nDCG@10", n_boot=500, seed=3)
    assert type(gate.test) is PairedTest and isinstance(c, PairedTest)
    same = ("n", "mean_baseline", "mean_run", "delta", "low", "high", "sd", "mdd")
    assert [getattr(gate.test, f) for f in same] == [getattr(c, f) for f in same]
    # The gate reads it as a drop: the candidate's difference, negated, and its interval flipped.
    assert (gate.drop, gate.low, gate.high, gate.mean_candidate) == (-c.delta, -c.high, -c.low, c.mean_run)
    assert gate.p_value == one_sided_p([b - a for a, b in zip(base, cand)]) != c.p_value


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=12))
def test_the_exact_p_of_a_difference_and_of_its_reverse_cover_every_pattern(values: list[int]) -> None:
    # P(M <= m) + P(M <= -m) = P(M <= m) + P(M >= m) = 1 + P(M = m): at least 1, and the
    # p of the reverse is 1 when nothing dropped.
    deltas = [v / 10 for v in values]
    p, reverse = one_sided_p(deltas), one_sided_p([-d for d in deltas])
    assert 0 < p <= 1 and 0 < reverse <= 1
    assert p + reverse >= 1
    if sum(values) >= 0:
        assert p >= 0.5


def test_no_drop_and_a_better_candidate_pass_without_a_warning() -> None:
    same = gate_metric([0.2, 0.4, 0.6], [0.2, 0.4, 0.6], "RR", n_boot=0)
    assert (same.status, same.warning, same.p_value, same.mdd) == ("pass", "", 1.0, 0.0)
    better = gate_metric([0.2, 0.4, 0.6, 0.1], [0.3, 0.6, 0.9, 0.1], "RR", n_boot=0)
    assert (better.status, better.warning) == ("pass", "")
    assert better.drop < 0


def test_several_metrics_are_holm_corrected() -> None:
    a = [1.0] * 6 + [0.0] * 2
    b = [0.0] * 6 + [0.0] * 2  # p = 1/64 alone
    first = gate_metric(a, b, "m1", tolerance=0.0, n_boot=0)
    second = gate_metric([0.5] * 8, [0.5] * 8, "m2", n_boot=0)
    assert first.p_value == 1 / 64 and first.failed
    both = correct([first, second])
    assert both[0].p_adjusted == pytest.approx(2 / 64) and both[0].failed
    assert both[1].p_adjusted == 1.0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tolerance": -0.1}, "tolerance=-0.1"),
    ({"alpha": 1.0}, "alpha=1.0"),
])
def test_bad_parameters_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(CalibrationError, match=message):
        gate_metric([0.1, 0.2], [0.1, 0.2], "P@10", **kwargs)
    with pytest.raises(CalibrationError, match="1 paired question"):
        gate_metric([0.1], [0.2], "P@10")


# --- the command on TREC runs ----------------------------------------------------------------

@pytest.fixture
def runs(tmp_path: Path) -> Path:
    write_golden(tmp_path / "golden")
    write_runs(tmp_path, 5, candidate="pr5.trec")
    write_runs(tmp_path, 2, candidate="pr2.trec")
    return tmp_path


def test_exit_codes_on_a_five_and_a_two_point_drop(runs: Path) -> None:
    five = _gate(str(runs / "golden"), "--baseline", str(runs / "main.trec"), "--candidate", str(runs / "pr5.trec"),
                 "--metric", "nDCG@10")
    assert five.exit_code == 1, five.output
    assert "nDCG@10 dropped by 0.050 (0.666 → 0.616), one-sided p<0.001, at least the 0.036 this set resolves." in five.stdout
    assert five.stdout.rstrip().endswith("gate: FAIL")
    two = _gate(str(runs / "golden"), "--baseline", str(runs / "main.trec"), "--candidate", str(runs / "pr2.trec"),
                "--metric", "nDCG@10")
    assert two.exit_code == 0, two.output
    assert "warning: nDCG@10: a drop of 0.020 is below the 0.037 this set resolves" in two.stderr
    assert two.stdout.rstrip().endswith("gate: PASS")


def test_a_tolerance_replaces_the_mdd(runs: Path) -> None:
    base = [str(runs / "golden"), "--baseline", str(runs / "main.trec"), "--metric", "nDCG@10"]
    # The 5-point drop is below a tolerance of 0.06: it passes, and says both numbers.
    high = _gate(*base, "--candidate", str(runs / "pr5.trec"), "--tolerance", "0.06")
    assert high.exit_code == 0, high.output
    assert "a drop of 0.050 is below the tolerance 0.060 (this set resolves 0.036)" in high.stderr
    # The 2-point drop is over a tolerance of 0.01, but not significant at 0.05 (p = 0.088)...
    low = _gate(*base, "--candidate", str(runs / "pr2.trec"), "--tolerance", "0.01")
    assert low.exit_code == 0, low.output
    assert "a drop of 0.020 is not significant (one-sided p=0.088, alpha 0.05)" in low.stderr
    # ...and is at alpha 0.1.
    assert _gate(*base, "--candidate", str(runs / "pr2.trec"), "--tolerance", "0.01", "--alpha", "0.1").exit_code == 1


def test_a_question_a_run_lacks_scores_zero(runs: Path) -> None:
    # The candidate leaves out 10 questions whose relevant chunk the baseline ranks first
    # (nDCG@10 1.0 each): as trec_eval -c, each scores 0, a drop of exactly 10/200.
    lines = (runs / "main.trec").read_text().splitlines()
    dropped = {f"q{i:03d}" for i in range(10)}
    (runs / "short.trec").write_text("\n".join(x for x in lines if x.split()[0] not in dropped) + "\n")
    result = _gate(str(runs / "golden"), "--baseline", str(runs / "main.trec"), "--candidate", str(runs / "short.trec"),
                   "--metric", "nDCG@10", "--summary", str(runs / "s.md"))
    assert result.exit_code == 1, result.output
    assert "nDCG@10 dropped by 0.050" in result.stdout
    assert "questions a side does not answer score 0 there (as trec_eval -c): baseline lacks 0, candidate lacks 10" \
        in result.stdout


def test_the_junit_report_has_one_testcase_per_metric_and_a_failure_on_the_drop(runs: Path) -> None:
    out = runs / "gate.xml"
    result = _gate(str(runs / "golden"), "--baseline", str(runs / "main.trec"), "--candidate", str(runs / "pr5.trec"),
                   "--metric", "nDCG@10", "--metric", "P@10", "--junit", str(out))
    assert result.exit_code == 1, result.output
    root = ET.parse(out).getroot()
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "2", "1")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert list(cases) == ["nDCG@10", "P@10"]
    failure = cases["nDCG@10"].find("failure")
    assert failure is not None and failure.get("message").startswith("nDCG@10 dropped by 0.050")
    assert "p 0.0006" in failure.text  # Holm over two metrics: 2 × 0.0003
    assert cases["P@10"].find("failure") is None  # one relevant chunk in the top 10 either way
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["golden"] == str(runs / "golden") and len(props["content_hash"]) == 64


def test_the_markdown_summary_escapes_names_and_carries_the_warning(runs: Path) -> None:
    odd = runs / "pr|<b>x.trec"
    odd.write_text((runs / "pr2.trec").read_text())
    out = runs / "summary.md"
    result = _gate(str(runs / "golden"), "--baseline", str(runs / "main.trec"), "--candidate", str(odd),
                   "--metric", "nDCG@10", "--summary", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert text.startswith("## goldpool gate: PASS\n")
    assert "pr\\|&lt;b&gt;x.trec" in text and "<b>" not in text
    assert "| nDCG@10 | pass, with a warning | 0.6664 | 0.6464 | 0.0200 |" in text
    assert "- **Warning** nDCG@10: a drop of 0.020 is below the 0.037 this set resolves." in text


# --- bad input: exit 2 -----------------------------------------------------------------------

def test_bad_input_exits_2_naming_file_line_and_field(runs: Path) -> None:
    golden, main = str(runs / "golden"), str(runs / "main.trec")
    bad = runs / "bad.trec"
    bad.write_text("q000 Q0 q000-rel 1 1.0 pr\nq001 Q0 q001-rel one 1.0 pr\n")
    result = _gate(golden, "--baseline", main, "--candidate", str(bad), "--metric", "nDCG@10")
    assert result.exit_code == 2
    assert f"{bad}, line 2, field 'rank'" in result.output
    unknown = _gate(golden, "--baseline", main, "--candidate", str(runs / "pr5.trec"), "--metric", "nDGC@10")
    assert unknown.exit_code == 2 and "metric 'nDGC@10': not a measure name" in unknown.output
    missing = _gate(golden, "--baseline", main, "--candidate", "nowhere.trec", "--metric", "nDCG@10")
    assert missing.exit_code == 2 and "nowhere.trec: no such run file" in missing.output
    judge = _gate(golden, "--baseline", main, "--candidate", main, "--metric", "nDCG@10", "--judge", "j")
    assert judge.exit_code == 2 and "--judge is for generation metrics" in judge.output
    alpha = _gate(golden, "--baseline", main, "--candidate", main, "--metric", "nDCG@10", "--alpha", "1.5")
    assert alpha.exit_code == 2
    generation = _gate(golden, "--baseline", main, "--candidate", main, "--metric", "correctness")
    assert generation.exit_code == 2 and "give DB or DB@VERSION as GOLDEN" in generation.output


def test_an_export_changed_after_it_was_written_exits_2(runs: Path) -> None:
    qrels = runs / "golden" / "qrels.txt"
    qrels.write_text(qrels.read_text().replace("q000\t0\tq000-rel\t2", "q000\t0\tq000-rel\t3"))
    result = _gate(str(runs / "golden"), "--baseline", str(runs / "main.trec"), "--candidate", str(runs / "pr5.trec"),
                   "--metric", "nDCG@10")
    assert result.exit_code == 2
    assert "qrels.txt: its sha256 is not the one manifest.json lists" in result.output
    # Grades changed and the manifest's file digest made to match: the content hash still tells.
    manifest = json.loads((runs / "golden" / "manifest.json").read_text())
    manifest["files"]["qrels.txt"] = hashlib.sha256(qrels.read_bytes()).hexdigest()
    (runs / "golden" / "manifest.json").write_text(json.dumps(manifest))
    rehashed = _gate(str(runs / "golden"), "--baseline", str(runs / "main.trec"), "--candidate", str(runs / "pr5.trec"),
                     "--metric", "nDCG@10")
    assert rehashed.exit_code == 2
    assert "qrels.txt: its grades do not give the content hash manifest.json records" in rehashed.output
    (runs / "empty").mkdir()
    empty = _gate(str(runs / "empty"), "--baseline", str(runs / "main.trec"), "--candidate", str(runs / "pr5.trec"),
                  "--metric", "nDCG@10")
    assert empty.exit_code == 2 and "no qrels.txt in this folder" in empty.output


def test_an_unsafe_report_path_exits_2_and_writes_nothing(runs: Path) -> None:
    target = runs / "elsewhere.md"
    target.write_text("keep")
    (runs / "link.md").symlink_to(target)
    result = _gate(str(runs / "golden"), "--baseline", str(runs / "main.trec"), "--candidate", str(runs / "pr2.trec"),
                   "--metric", "nDCG@10", "--summary", str(runs / "link.md"))
    assert result.exit_code == 2, result.output
    assert target.read_text() == "keep"


# --- systems: retrieval from retrieved_ids, generation from verdicts ---------------------------

@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Eight questions q1..q8, chunk d_i relevant (grade 2) to q_i. System sys-a answers all
    eight correctly, retrieving d_i first. sys-b: q1..q4 wrong, retrieving d_i second; q5 wrong
    by a judge only (no person judged it); q6, q7 right; q8 not answered."""
    runner = CliRunner()
    db = str(tmp_path / "p.db")
    write_jsonl(tmp_path / "c.jsonl", [{"doc_id": f"d{i}", "text": f"text {i}"} for i in range(1, 10)])
    write_jsonl(tmp_path / "q.jsonl", [{"query_id": f"q{i}", "text": f"question {i}"} for i in range(1, 9)])
    (tmp_path / "qrels.txt").write_text("".join(f"q{i} 0 d{i} 2\nq{i} 0 d9 0\n" for i in range(1, 9)))
    a = [{"answer_id": f"a{i}", "query_id": f"q{i}", "response": f"answer {i}", "reference": f"ref {i}",
          "retrieved_ids": [f"d{i}", "d9"]} for i in range(1, 9)]
    b = [{"answer_id": f"b{i}", "query_id": f"q{i}", "response": f"other {i}", "reference": f"ref {i}",
          "retrieved_ids": ["d9", f"d{i}"] if i <= 4 else [f"d{i}"]} for i in range(1, 8)]
    write_jsonl(tmp_path / "a.jsonl", a)
    write_jsonl(tmp_path / "b.jsonl", b)
    people = [{"item_id": f"a{i}", "verdict": "CORRECT"} for i in range(1, 9)]
    people += [{"item_id": f"b{i}", "verdict": "INCORRECT"} for i in range(1, 5)]
    people += [{"item_id": f"b{i}", "verdict": "CORRECT"} for i in (6, 7)]
    write_jsonl(tmp_path / "people.jsonl", people)
    write_jsonl(tmp_path / "judge.jsonl", [{"item_id": "b5", "verdict": "INCORRECT"}, {"item_id": "b6", "verdict": "INCORRECT"}])
    for args in (["init", db], ["import-corpus", db, str(tmp_path / "c.jsonl")], ["import-queries", db, str(tmp_path / "q.jsonl")],
                 ["import-judgments", db, str(tmp_path / "qrels.txt"), "--annotator", "ada"],
                 ["freeze", db, "--version", "v1"],
                 ["import-answers", db, str(tmp_path / "a.jsonl"), "--system", "sys-a"],
                 ["import-answers", db, str(tmp_path / "b.jsonl"), "--system", "sys-b"],
                 ["import-verdicts", db, str(tmp_path / "people.jsonl"), "--annotator", "ada"],
                 ["import-verdicts", db, str(tmp_path / "judge.jsonl"), "--judge", "j1"]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, (args, result.output)
    return tmp_path


def test_systems_are_gated_on_their_retrieved_ids(project: Path) -> None:
    from labeler.diagnosis.gate import run_gate
    from labeler.store.access import OWNER

    gate = run_gate(f"{project / 'p.db'}@v1", "sys-a", "sys-b", ["nDCG@10"], caller=OWNER)
    r = gate.results[0]
    # q1..q4: d_i second, 1/log2(3) = 0.6309 instead of 1; q5..q7 equal; q8 unanswered: 0.
    assert r.n == 8 and r.missing == {"baseline": 0, "candidate": 1}
    assert r.drop == pytest.approx((4 * (1 - 1 / math.log2(3)) + 1) / 8)
    assert gate.content_hash is not None


def test_generation_metrics_take_peoples_verdicts_then_the_judges(project: Path) -> None:
    from labeler.diagnosis.gate import run_gate
    from labeler.store.access import OWNER

    db = f"{project / 'p.db'}@v1"
    people = run_gate(db, "sys-a", "sys-b", ["correctness"], caller=OWNER).results[0]
    # δ: q1..q4 −1, q6 q7 0, q8 −1 (not answered); q5 has no person's verdict: left out.
    # 5 non-zero differences, only the observed sign pattern reaches −5: p = 1/32.
    assert (people.n, people.p_value, people.drop) == (7, 1 / 32, pytest.approx(5 / 7))
    assert people.left_out == {"sys-b answers without a correctness value": 1,
                               "questions left out: an answer without a value": 1}
    assert people.source == "people's verdicts (14 answers)"
    with_judge = run_gate(db, "sys-a", "sys-b", ["correctness"], judge="j1", caller=OWNER).results[0]
    # The judge fills in q5 (INCORRECT); its verdict on b6 does not replace people's CORRECT.
    assert (with_judge.n, with_judge.p_value, with_judge.drop) == (8, 1 / 64, pytest.approx(6 / 8))
    assert with_judge.source == "people's verdicts (14 answers), judge j1 where people gave none (1 answer)"
    result = _gate(str(project / "p.db"), "--baseline", "sys-a", "--candidate", "sys-b", "--metric", "correctness",
                   "--judge", "j1")
    assert result.exit_code == 1, result.output
    assert "values from people's verdicts (14 answers), judge j1 where people gave none (1 answer)" in result.stdout
    assert "judge j1: uncalibrated (no card)" in result.stdout.splitlines()  # the numbers rest on an unchecked judge
    unknown = _gate(str(project / "p.db"), "--baseline", "sys-a", "--candidate", "sys-c", "--metric", "correctness")
    assert unknown.exit_code == 2 and "no system 'sys-c'" in unknown.output
    plain = _gate(str(project / "p.db"), "--baseline", "sys-a", "--candidate", "sys-b", "--metric", "nDCG@10")
    assert plain.exit_code == 2 and "name a frozen version" in plain.output
    nobody = _gate(str(project / "p.db"), "--baseline", "sys-a", "--candidate", "sys-b", "--metric", "correctness",
                   "--judge", "j9")
    assert nobody.exit_code == 2 and "no judge 'j9'" in nobody.output


def test_the_gate_prints_json_with_the_same_exit_status(project: Path) -> None:
    result = _gate(str(project / "p.db"), "--baseline", "sys-a", "--candidate", "sys-b", "--metric", "correctness",
                   "--json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert (data["status"], data["baseline"], data["candidate"]) == ("fail", "sys-a", "sys-b")
    (r,) = data["results"]
    assert (r["metric"], r["n"], r["p_value"], r["status"]) == ("correctness", 7, 1 / 32, "fail")
    assert r["missing"] == {"baseline": 0, "candidate": 1} and r["reason"].startswith("correctness dropped by 0.714")


def test_a_folder_goldpool_export_wrote_is_a_golden_set_for_gate_and_eval(project: Path) -> None:
    runner = CliRunner()
    db = str(project / "p.db")
    out = project / "golden"
    assert runner.invoke(cli, ["export", f"{db}@v1", "--format", "all", "-o", str(out)]).exit_code == 0
    (project / "a.trec").write_text("".join(f"q{i} Q0 d{i} 1 2.0 a\nq{i} Q0 d9 2 1.0 a\n" for i in range(1, 9)))
    (project / "b.trec").write_text("".join(f"q{i} Q0 d9 1 2.0 b\nq{i} Q0 d{i} 2 1.0 b\n" for i in range(1, 9)))
    from labeler.diagnosis.gate import run_gate
    from labeler.store.access import OWNER

    from_folder = run_gate(str(out), str(project / "a.trec"), str(project / "b.trec"), ["nDCG@10"], caller=OWNER)
    from_db = run_gate(f"{db}@v1", str(project / "a.trec"), str(project / "b.trec"), ["nDCG@10"], caller=OWNER)
    assert from_folder.content_hash == from_db.content_hash
    assert from_folder.results[0].drop == from_db.results[0].drop == pytest.approx(1 - 1 / math.log2(3))
    # Eight questions all 0.369 worse: only the observed one of 2^8 sign patterns reaches it.
    assert from_folder.results[0].p_value == 1 / 256 and from_folder.failed
    scored = runner.invoke(cli, ["eval", str(out), str(project / "a.trec"), "--metric", "nDCG@10", "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["content_hash"] == from_db.content_hash


def test_faithfulness_is_gated_with_abstention_and_correctness_beside_it(tmp_path: Path) -> None:
    """One claim per answer; sys-b abstains on q4 and its other claims are unsupported."""
    db = str(tmp_path / "p.db")
    a = [{"answer_id": f"a{i}", "question": f"question {i}", "response": f"answer {i}.", "reference": "r",
          "claims": [f"answer {i}."]} for i in range(1, 5)]
    b = [{"answer_id": f"b{i}", "question": f"question {i}", "response": "" if i == 4 else f"other {i}.",
          "reference": "r", "claims": [] if i == 4 else [f"other {i}."]} for i in range(1, 5)]
    people = ([{"item_id": f"a{i}#1", "verdict": "SUPPORTED"} for i in range(1, 5)]
              + [{"item_id": f"b{i}#1", "verdict": "UNSUPPORTED"} for i in range(1, 4)]
              + [{"item_id": f"a{i}", "verdict": "CORRECT"} for i in range(1, 5)]
              + [{"item_id": f"b{i}", "verdict": "CORRECT"} for i in (1, 2)] + [{"item_id": "b3", "verdict": "INCORRECT"}])
    runner = CliRunner()
    for args in (["init", db], ["import-answers", db, str(write_jsonl(tmp_path / "a.jsonl", a)), "--system", "sys-a"],
                 ["import-answers", db, str(write_jsonl(tmp_path / "b.jsonl", b)), "--system", "sys-b"],
                 ["import-verdicts", db, str(write_jsonl(tmp_path / "v.jsonl", people)), "--annotator", "ada"]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, (args, result.output)
    result = _gate(db, "--baseline", "sys-a", "--candidate", "sys-b", "--metric", "faithfulness",
                   "--summary", str(tmp_path / "s.md"))
    beside = ("beside faithfulness, baseline → candidate: abstention 0.000 → 0.250, correctness 1.000 → 0.500, "
              "answer relevance n/a → 0.000")  # the empty answer misses the question; nobody judged the rest
    assert beside in [line.strip() for line in result.stdout.splitlines()]
    assert beside in (tmp_path / "s.md").read_text(encoding="utf-8").replace("\\", "")

"""The calibration commands: exact output on tiny inputs, numbers against references."""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path
from statistics import NormalDist

import krippendorff
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from app_fixtures import function_test
from labeler.cli import cli

from labeler.store import init_db, now

#: (query_id, doc_id) -> {annotator: grade}; the latest labels after LATER below is applied.
GRADES: dict[tuple[str, str], dict[str, int]] = {
    ("q1", "d1"): {"alice": 3, "bob": 3},
    ("q1", "d2"): {"alice": 2, "bob": 1, "carol": 2},
    ("q1", "d3"): {"alice": 0},
    ("q2", "d1"): {"alice": 1, "bob": 1},
    ("q2", "d4"): {"alice": 0, "bob": 1},
    ("q3", "d2"): {"alice": 3, "carol": 2},
    ("q3", "d5"): {"bob": 0, "carol": 0},
    ("q4", "d3"): {"alice": 2, "bob": 3},
}

#: A first label that a later row replaces: only the later one may count.
EARLIER: tuple[str, str, str, int] = ("q2", "d4", "bob", 3)

ANNOTATORS = {"alice": "annotator", "bob": "annotator", "carol": "admin"}


def build_project(directory: Path) -> Path:
    """Create ``directory/project.db`` holding GRADES (and one superseded label)."""
    path = directory / "project.db"
    db = init_db(path)
    at = now()
    queries = sorted({q for q, _ in GRADES})
    docs = sorted({d for _, d in GRADES})
    db["queries"].insert_all({"query_id": q, "text": f"query {q}", "meta": "{}", "content_hash": q} for q in queries)
    db["documents"].insert_all({"doc_id": d, "title": "", "text": f"chunk {d}", "meta": "{}", "content_hash": d} for d in docs)
    db["pool"].insert_all(
        {"query_id": q, "doc_id": d, "sources": json.dumps({"bm25": 1}), "priority": 0.5, "position": i + 1, "added_at": at}
        for i, (q, d) in enumerate(sorted(GRADES))
    )
    ids = {}
    for name, role in ANNOTATORS.items():
        ids[name] = db["annotators"].insert(
            {"name": name, "role": role, "token_salt": "s", "token_hash": "h", "active": 1, "created_at": at}
        ).last_pk
    q, d, who, grade = EARLIER
    rows = [{"query_id": q, "doc_id": d, "annotator_id": ids[who], "relevance": grade, "at": at}]
    for (q, d), grades in sorted(GRADES.items()):
        for who, grade in sorted(grades.items()):
            rows.append({"query_id": q, "doc_id": d, "annotator_id": ids[who], "relevance": grade, "at": now()})
    db["judgments"].insert_all(rows)
    db.close()
    return path


def pooled_pairs() -> tuple[list[int], list[int], list[str]]:
    """Every annotator pair (by name) on every shared item: the pairs the report pools."""
    a, b, groups = [], [], []
    for (q, _), grades in sorted(GRADES.items()):
        names = sorted(grades)
        for i, x in enumerate(names):
            for y in names[i + 1 :]:
                a.append(grades[x])
                b.append(grades[y])
                groups.append(q)
    return a, b, groups


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# --- plan -----------------------------------------------------------------------------------


def test_plan_one_accuracy_exact_output():
    result = run("plan", "--n", "100", "--p", "0.7")
    assert result.exit_code == 0
    assert result.output == (
        "With 100 questions an accuracy near 70% is known to ±9.0 points, and two systems on different "
        "questions to ±12.7 points; the minimum detectable difference is 18.2 points (unpaired, p=0.7, "
        "80% power, α=0.05).\n"
        "half-width, one accuracy (p=0.7): ±9.0 points\n"
        "half-width, unpaired difference (p=0.7): ±12.7 points\n"
        "minimum detectable difference (unpaired): 18.2 points\n"
    )


def test_plan_paired_exact_output():
    # 1.96 * sqrt(0.2 / 200) = 6.2 points; unpaired 1.96 * sqrt(0.42 / 200) = 9.0; 9.0 / 6.2 = 1.45.
    result = run("plan", "--n", "200", "--p", "0.7", "--paired", "--discordant", "0.2")
    assert result.exit_code == 0
    assert result.output == (
        "With 200 questions a paired comparison is known to ±6.2 points, 1.45 times narrower than "
        "unpaired (±9.0); the minimum detectable difference is 8.9 points (paired, d=0.2, 80% power, α=0.05).\n"
        "half-width, one accuracy (p=0.7): ±6.4 points\n"
        "half-width, unpaired difference (p=0.7): ±9.0 points\n"
        "half-width, paired difference (d=0.2): ±6.2 points\n"
        "minimum detectable difference (paired): 8.9 points\n"
    )


def test_plan_says_whether_a_change_can_be_resolved():
    result = run("plan", "--n", "200", "--paired", "--discordant", "0.2", "--delta", "0.03")
    first = result.output.splitlines()[0]
    assert first == (
        "With 200 questions you cannot resolve a 3-point change: the minimum detectable difference is "
        "8.9 points (paired, d=0.2, 80% power, α=0.05); 1745 questions would detect it."
    )


def test_plan_json_with_a_judge():
    result = run("plan", "--n", "200", "--paired", "--discordant", "0.2", "--delta", "0.03",
                 "--judge-sensitivity", "0.9", "--judge-specificity", "0.8", "--json")
    data = json.loads(result.output)
    z = 1.959963984540054 + 0.8416212335729143
    assert data["half_width"]["paired"] == pytest.approx(1.959963984540054 * math.sqrt(0.2 / 200) / 0.7)
    assert data["mdd"] == pytest.approx(z * math.sqrt(0.2 / 200) / 0.7)
    assert data["n_required"] == math.ceil(0.2 * (z / (0.03 * 0.7)) ** 2)


def test_plan_with_only_n_assumes_p_one_half():
    alone = run("plan", "--n", "200", "--json")
    assert alone.exit_code == 0
    data = json.loads(alone.output)
    assert data == json.loads(run("plan", "--n", "200", "--p", "0.5", "--json").output)
    # The widest accuracy interval: z * sqrt(0.5 * 0.5 / 200).
    z = NormalDist().inv_cdf(0.975)
    assert data["half_width"]["accuracy"] == pytest.approx(z * math.sqrt(0.25 / 200))


def test_readme_plan_example_prints_what_the_readme_says():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("goldpool plan --n 200"):]
    command, said = [], []
    for line in block.splitlines():
        if line.startswith("```"):
            break
        if line.startswith("# "):
            said.append(line[2:])
        else:
            command.append(line.rstrip("\\ ").strip())
    args = " ".join(command).split()[1:]
    assert run(*args).output.splitlines() == said


def test_plan_refuses_incomplete_or_wrong_input():
    assert "--paired needs --discordant" in run("plan", "--n", "100", "--paired").output
    result = run("plan", "--n", "100", "--p", "70")
    assert result.exit_code == 1 and result.output == "Error: p=70.0: give a proportion between 0 and 1 (0.7, not 70)\n"


# --- agree ----------------------------------------------------------------------------------

HUMAN = "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 1\nq2 0 d2 0\nq3 0 d1 2\nq3 0 d2 3\nq3 0 d9 1\n"
JUDGE = "q1 Q0 d1 2\nq1 Q0 d2 0\nq1 Q0 d3 2\nq2 Q0 d1 2\nq2 Q0 d2 0\nq3 Q0 d1 1\nq3 Q0 d2 3\nq4 Q0 d1 0\nq4 Q0 d2 1\n"
# Joined on 7 keys; human d9 of q3 and judge q4/d1, q4/d2 are on one side only.
A = [3, 0, 2, 1, 0, 2, 3]
B = [2, 0, 2, 2, 0, 1, 3]


def test_agree_on_trec_qrels_json(tmp_path):
    (tmp_path / "human.txt").write_text(HUMAN)
    (tmp_path / "judge.txt").write_text(JUDGE)
    result = run("agree", str(tmp_path / "human.txt"), str(tmp_path / "judge.txt"), "--json", "--n-boot", "300")
    data = json.loads(result.output)
    assert (data["n"], data["only_a"], data["only_b"]) == (7, 1, 2)
    for name, weights in [("kappa", None), ("kappa_linear", "linear"), ("kappa_quadratic", "quadratic")]:
        assert data[name]["value"] == pytest.approx(cohen_kappa_score(A, B, weights=weights))
        assert data[name]["n"] == 7 and data[name]["low"] <= data[name]["value"] <= data[name]["high"]
    assert data["alpha_ordinal"]["value"] == pytest.approx(krippendorff.alpha([A, B], level_of_measurement="ordinal"))
    assert data["agreement"]["value"] == pytest.approx(4 / 7)
    assert data["resampled"] == "queries" and data["n_groups"] == 3


def test_agree_text_header(tmp_path):
    (tmp_path / "human.txt").write_text(HUMAN)
    (tmp_path / "judge.txt").write_text(JUDGE)
    out = run("agree", str(tmp_path / "human.txt"), str(tmp_path / "judge.txt"), "--n-boot", "100", "--seed", "3").output
    lines = out.splitlines()
    assert lines[2:4] == [
        "joined 7 items (only in A: 1, only in B: 2)",
        "Intervals: 95% percentile, cluster bootstrap over 3 queries, 100 resamples, seed 3. Warning: only 3 "
        "queries; intervals from fewer than 10 queries are too narrow to trust (read them as rough).",
    ]
    assert lines[5].split() == ["statistic", "value", "[95%", "interval]", "n"]
    assert lines[6].split()[0] == "agreement" and lines[6].split()[-1] == "7"


def test_agree_jsonl_and_csv_with_own_column_names(tmp_path):
    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"qid": q, "pid": d, "grade": g}) + "\n" for q, d, g in [("1", "x", 1), ("1", "y", 0), ("2", "x", 1)]))
    (tmp_path / "b.csv").write_text("qid,pid,grade\n1,x,1\n1,y,1\n2,x,1\n")
    result = run("agree", str(tmp_path / "a.jsonl"), str(tmp_path / "b.csv"), "--key", "qid", "--key", "pid",
                 "--label", "grade", "--json", "--n-boot", "0", "--resample", "items")
    data = json.loads(result.stdout)
    assert data["n"] == 3 and data["agreement"]["value"] == pytest.approx(2 / 3)
    assert data["agreement"]["low"] is None and data["resampled"] == "items"


def test_agree_with_a_human_ceiling(tmp_path):
    (tmp_path / "human.txt").write_text(HUMAN)
    (tmp_path / "judge.txt").write_text(JUDGE)
    (tmp_path / "second.txt").write_text("q1 0 d1 3\nq1 0 d2 1\nq2 0 d1 1\nq3 0 d2 2\n")
    data = json.loads(run("agree", str(tmp_path / "human.txt"), str(tmp_path / "judge.txt"), "--ceiling",
                          str(tmp_path / "second.txt"), "--json", "--n-boot", "0").output)
    # Items all three label: q1/d1, q1/d2, q2/d1, q3/d2. Human (3, 0, 1, 3); judge (2, 0, 2, 3); second (3, 1, 1, 2).
    assert data["ceiling"]["agreement"] == {"value": 0.5, "low": None, "high": None, "n": 4}
    assert data["agreement"]["value"] == pytest.approx(2 / 4)
    assert data["kappa_quadratic"]["value"] == pytest.approx(cohen_kappa_score([3, 0, 1, 3], [2, 0, 2, 3], weights="quadratic"))


def test_agree_reads_a_csv_with_a_byte_order_mark_like_the_corpus_reader(tmp_path):
    # Spreadsheet programs write a UTF-8 BOM before the header; the one reader drops it.
    (tmp_path / "human.txt").write_text(HUMAN)
    rows = "".join(f"{q},{d},{g}\n" for q, d, g in [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d1", 1)])
    (tmp_path / "judge.csv").write_bytes(b"\xef\xbb\xbf" + f"query_id,doc_id,relevance\n{rows}".encode())
    data = json.loads(run("agree", str(tmp_path / "human.txt"), str(tmp_path / "judge.csv"), "--json", "--n-boot", "0").stdout)
    # Joined: q1/d1 (3 vs 2), q1/d2 (0 vs 0), q2/d1 (1 vs 1): 2 of 3 agree.
    assert (data["n"], data["only_a"], data["only_b"]) == (3, 5, 0)
    assert data["agreement"]["value"] == pytest.approx(2 / 3)


def test_agree_reads_tsv_as_tab_separated_with_a_header_as_the_corpus_reader_does(tmp_path):
    (tmp_path / "human.txt").write_text(HUMAN)
    (tmp_path / "judge.tsv").write_text("query_id\tdoc_id\trelevance\nq1\td1\t3\nq1\td2\t1\n")
    data = json.loads(run("agree", str(tmp_path / "human.txt"), str(tmp_path / "judge.tsv"), "--json", "--n-boot", "0").stdout)
    assert data["n"] == 2 and data["agreement"]["value"] == pytest.approx(1 / 2)
    # A headerless qrels file named .tsv is refused by name, and read with --format trec.
    (tmp_path / "qrels.tsv").write_text("q1\t0\td1\t3\nq1\t0\td2\t0\n")
    refused = run("agree", str(tmp_path / "human.txt"), str(tmp_path / "qrels.tsv"))
    assert refused.exit_code == 1 and "qrels.tsv, line 1: no column 'query_id'" in refused.output
    data = json.loads(run("agree", str(tmp_path / "human.txt"), str(tmp_path / "qrels.tsv"), "--format", "trec",
                          "--json", "--n-boot", "0").stdout)
    assert data["n"] == 2 and data["agreement"]["value"] == 1.0


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.txt", "q1 0 d1 3\nq1 0 d2\n", "bad.txt, line 2: expected 4 fields (query_id iteration doc_id relevance), found 3"),
        ("bad.txt", "q1 0 d1 3\nq1 0 d2 high\n", "bad.txt, line 2, field 'relevance': 'high' is not a number"),
        ("bad.txt", "q1 0 d1 3\n\nq1 0 d1 2\n", "bad.txt, line 3, field 'query_id, doc_id': key ('q1', 'd1') already given on line 1"),
        ("bad.jsonl", '{"query_id": "q1", "doc_id": "d1", "relevance": 1}\n{"query_id": "q1", "relevance": 2}\n', "bad.jsonl, line 2, field 'doc_id': missing"),
        ("bad.jsonl", '{"query_id": "q1", "doc_id": "d1", "relevance": 1}\n{oops\n', "bad.jsonl, line 2: malformed JSON"),
        ("bad.csv", "query_id,doc_id,grade\nq1,d1,1\n", "bad.csv, line 1: no column 'relevance' (columns: query_id, doc_id, grade)"),
    ],
)
def test_agree_bad_input_names_file_line_and_field(tmp_path, name, content, message):
    (tmp_path / name).write_text(content)
    (tmp_path / "ok.txt").write_text(HUMAN)
    result = run("agree", str(tmp_path / name), str(tmp_path / "ok.txt"))
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("judge.txt", b"q1 0 d1 3\nq1 0 d\xe92 1\n"),
        ("judge.jsonl", b'{"query_id": "q1", "doc_id": "d1", "relevance": 3}\n{"query_id": "q1", "doc_id": "d\xe92", "relevance": 1}\n'),
        ("judge.csv", b"query_id,doc_id,relevance\nq1,d\xe92,1\n"),
    ],
)
def test_agree_on_a_file_that_is_not_utf8_names_file_and_line(tmp_path, name, content):
    (tmp_path / name).write_bytes(content)
    (tmp_path / "ok.txt").write_text(HUMAN)
    result = run("agree", str(tmp_path / "ok.txt"), str(tmp_path / name))
    assert result.exit_code == 1
    byte = content.splitlines()[1].index(b"\xe9") + 1
    assert result.output == f"Error: {tmp_path / name}, line 2: not valid UTF-8 (byte {byte} of the line); re-save the file as UTF-8\n"


# --- calibrate ------------------------------------------------------------------------------


def test_calibrate_json_from_a_project(tmp_path):
    path = build_project(tmp_path)
    data = json.loads(run("calibrate", str(path), "--json", "--n-boot", "300").output)
    a, b, _ = pooled_pairs()
    kappa = data["agreement"]["kappa_quadratic"]
    assert kappa["value"] == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic"))
    assert kappa["n"] == len(a) == 9
    shared = [k for k, v in sorted(GRADES.items()) if len(v) > 1]
    matrix = [[GRADES[k].get(name, math.nan) for k in shared] for name in sorted(ANNOTATORS)]
    expected_alpha = krippendorff.alpha(matrix, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert data["agreement"]["alpha_ordinal"]["value"] == pytest.approx(expected_alpha)
    # bob: q1/d1 3, q1/d2 1, q2/d1 1, q2/d4 1, q3/d5 0, q4/d3 3. His superseded grade 3 on
    # q2/d4 does not count (else "3" would be 3 and "1" would be 2).
    assert data["distributions"]["bob"] == {"0": 1, "1": 3, "2": 0, "3": 2}
    assert (data["n_judgments"], data["n_items"], data["n_queries"], data["n_overlap_items"]) == (16, 8, 4, 7)
    assert data["interval"]["resampled"] == "queries" and data["power"]["n"] == 4


def test_calibrate_text_and_html(tmp_path):
    path = build_project(tmp_path)
    html = tmp_path / "report.html"
    out = run("calibrate", str(path), "--html", str(html), "--n-boot", "200").output
    assert out.startswith("Calibration report\n==================\n\n16 relevance judgments on 8 pool entries of 4 queries "
                          "by 3 annotators; 7 items labelled by two or more annotators.\n")
    assert "cluster bootstrap over 4 queries" in out and "With 4 labelled queries" in out
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 3 and "<script" not in page


def test_calibrate_prints_plain_text_without_markdown_escapes(tmp_path):
    path = build_project(tmp_path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE annotators SET name = 'bob_2.0*' WHERE name = 'bob'")
    conn.close()
    out = run("calibrate", str(path), "--n-boot", "50").output
    assert "\\" not in out and "|" not in out and "#" not in out
    rows = [line.split() for line in out.splitlines()]
    assert ["bob_2.0*", "6"] == next(r for r in rows if r[:1] == ["bob_2.0*"])[:2]  # name, labels
    assert ["annotator", "0", "1", "2", "3", "total"] in rows and ["bob_2.0*", "1", "3", "0", "2", "6"] in rows


@pytest.mark.parametrize("level", [1, 2, 3])
def test_calibrate_judge_splits_relevance_at_the_relevance_level(tmp_path, level):
    path = build_project(tmp_path)
    judge = {("q1", "d1"): 3, ("q1", "d2"): 1, ("q1", "d3"): 1, ("q2", "d1"): 2, ("q2", "d4"): 0, ("q3", "d2"): 2,
             ("q3", "d5"): 0, ("q4", "d3"): 3}
    (tmp_path / "judge.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted(judge.items())))
    assert run("import-verdicts", str(path), str(tmp_path / "judge.qrels"), "--judge", "j").exit_code == 0
    args = ("calibrate", str(path), "--judge", "j", "--n-boot", "0", *(("--relevance-level", str(level)) if level > 1 else ()))
    data = json.loads(run(*args, "--json").output)
    pairs = [(g >= level, judge[k] >= level) for k, grades in sorted(GRADES.items()) for g in grades.values()]
    se = sum(h and j for h, j in pairs) / sum(h for h, _ in pairs)
    sp = sum(not h and not j for h, j in pairs) / sum(not h for h, _ in pairs)
    power = data["judges"]["j"]["relevance"]["power"]
    assert data["relevance_level"] == level
    assert (power["sensitivity"], power["specificity"]) == pytest.approx((se, sp))
    assert power["positive"] == f"grade ≥ {level} (relevance level {level})"
    assert f"for grade ≥ {level} (relevance level {level})" in run(*args).output


def test_calibrate_html_to_an_unwritable_path_is_one_line(tmp_path):
    path = build_project(tmp_path)
    html = tmp_path / "missing" / "report.html"
    result = run("calibrate", str(path), "--html", str(html), "--n-boot", "50")
    assert result.exit_code == 1
    assert result.output == f"Error: {html}: cannot write (No such file or directory)\n"


def test_calibrate_refuses_a_missing_project(tmp_path):
    result = run("calibrate", str(tmp_path / "nope.db"))
    assert result.exit_code == 1 and "no such project database" in result.output


# --- every command ---------------------------------------------------------------------------


def test_calibration_imports_without_streamlit():
    code = "import sys, calibration, calibration.report, calibration.report_html, labeler.commands.calibrate; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- the admin page ---------------------------------------------------------------------------


def _page(path: str, role: str) -> None:
    from labeler.ui.pages.calibration import render
    from labeler.store import connect
    from labeler.store.vocabulary import Annotator

    with connect(path) as db:
        user_id = db.execute("SELECT id FROM annotators WHERE role = ? ORDER BY id LIMIT 1", [role]).fetchone()[0]
        render(db, Annotator(user_id, role, role, True))


def test_admin_page_shows_the_report(tmp_path):
    path = build_project(tmp_path)
    at = function_test(_page, str(path), "admin").run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Calibration"]
    text = "\n".join(m.value for m in at.markdown)
    assert "cluster bootstrap over 4 queries" in text and "| kappa_quadratic |" in text
    assert len(at.error) == 0


def test_annotator_is_refused_the_calibration_page(tmp_path):
    from labeler.ui.pages import ADMIN_REFUSAL

    path = build_project(tmp_path)
    at = function_test(_page, str(path), "annotator").run()
    assert [e.value for e in at.error] == [ADMIN_REFUSAL]
    assert len(at.title) == 0 and len(at.markdown) == 0
    assert not at.exception


def test_calibrate_counts_every_tasks_verdicts_and_their_agreement(tmp_path):
    """A project with claim verdicts only once printed "0 judgments on 0 items" and nothing else."""
    from labels_fixtures import write_jsonl

    db = str(tmp_path / "p.db")
    answers = [{"answer_id": f"a{i}", "question": f"q{i}?", "response": f"One {i}. Two {i}.", "contexts": ["c"],
                "claims": [f"One {i}.", f"Two {i}."]} for i in range(4)]
    ann = [{"item_id": f"a{i}#{n}", "verdict": "SUPPORTED"} for i in range(4) for n in (1, 2)]
    bob = [{"item_id": f"a{i}#1", "verdict": "SUPPORTED" if i < 3 else "UNSUPPORTED"} for i in range(4)]
    whole = [{"item_id": "a0@faithfulness", "verdict": "SUPPORTED"}]
    for args in (("init", db), ("import-answers", db, write_jsonl(tmp_path / "a.jsonl", answers), "--system", "S"),
                 ("import-verdicts", db, write_jsonl(tmp_path / "ann.jsonl", ann), "--annotator", "ann"),
                 ("import-verdicts", db, write_jsonl(tmp_path / "bob.jsonl", bob), "--annotator", "bob")):
        assert run(*map(str, args)).exit_code == 0
    assert "Beside them: 12 claims verdicts on 8 items (see" in run("calibrate", db, "--n-boot", "50").output
    assert run("import-verdicts", db, str(write_jsonl(tmp_path / "w.jsonl", whole)), "--annotator", "ann").exit_code == 0
    out = run("calibrate", db, "--n-boot", "50").output
    assert "0 relevance judgments on 0 pool entries" in out
    assert "Beside them: 12 claims verdicts on 8 items, 1 faithfulness verdict on 1 item" in out
    row = next(line.split() for line in out.splitlines() if line.startswith("claims "))
    assert row[:6] == ["claims", "12", "8", "2", "4", "4"]  # verdicts, items, annotators, items twice, pairs
    tasks = json.loads(run("calibrate", db, "--n-boot", "50", "--json").output)["tasks"]
    claims = tasks["claims"]
    assert (claims["n_verdicts"], claims["n_items"], claims["n_overlap_items"], claims["n_pairs"]) == (12, 8, 4, 4)
    assert claims["agreement"]["value"] == pytest.approx(3 / 4) and claims["agreement"]["n"] == 4
    assert tasks["faithfulness"]["n_verdicts"] == 1 and tasks["faithfulness"]["agreement"] is None


def test_calibrate_judge_says_what_its_confusion_matrix_counts_beside_its_n(tmp_path):
    path = build_project(tmp_path)
    judge = {("q1", "d1"): 3, ("q1", "d2"): 1, ("q1", "d3"): 1, ("q2", "d1"): 2, ("q2", "d4"): 0, ("q3", "d2"): 2,
             ("q3", "d5"): 0, ("q4", "d3"): 3}
    (tmp_path / "judge.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted(judge.items())))
    assert run("import-verdicts", str(path), str(tmp_path / "judge.qrels"), "--judge", "j").exit_code == 0
    data = json.loads(run("calibrate", str(path), "--judge", "j", "--n-boot", "0", "--json").output)["judges"]["j"]
    relevance = data["relevance"]
    assert (relevance["n"], relevance["n_pairs"]) == (8, 16)
    assert sum(map(sum, relevance["confusion"]["table"])) == relevance["n_pairs"] == relevance["agreement"]["n"]
    out = run("calibrate", str(path), "--judge", "j", "--n-boot", "0").output
    assert ("Confusion (rows people, columns judge): one count per person's verdict on an item the judge also judged: "
            "16 comparisons on the n = 8 items above (an item two people labelled counts twice); agreement and kappa "
            "are over the same comparisons.") in out

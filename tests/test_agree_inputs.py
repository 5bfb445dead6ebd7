"""`goldpool agree`: a declared grade scale, warnings without one, and goldpool's own export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from labeler.retrieval import scheduling
from labeler.cli import cli
from labeler.store import access, labels, review
from labeler.store.vocabulary import OWNER
from labels_fixtures import make_project

HUMAN = "q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 1\n"


def agree(*args: str):
    return CliRunner().invoke(cli, ["agree", *args], catch_exceptions=False)


def test_declared_scale_refuses_other_grades_with_file_line_and_field(tmp_path: Path) -> None:
    (tmp_path / "human.txt").write_text(HUMAN)
    (tmp_path / "judge.txt").write_text("q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 7\nq2 0 d1 1\n")
    result = agree(str(tmp_path / "human.txt"), str(tmp_path / "judge.txt"), "--grades", "0,1,2,3")
    assert result.exit_code == 1
    assert result.output == f"Error: {tmp_path / 'judge.txt'}, line 3, field 'relevance': grade 7 is not on the declared scale (0, 1, 2, 3)\n"
    (tmp_path / "judge.jsonl").write_text(json.dumps({"query_id": "q1", "doc_id": "d1", "relevance": -1}) + "\n")
    result = agree(str(tmp_path / "human.txt"), str(tmp_path / "judge.jsonl"), "--grades", "0,1,2,3")
    assert result.output == f"Error: {tmp_path / 'judge.jsonl'}, line 1, field 'relevance': grade -1 is not on the declared scale (0, 1, 2, 3)\n"
    bad = agree(str(tmp_path / "human.txt"), str(tmp_path / "human.txt"), "--grades", "0,1,two")
    assert bad.exit_code == 2 and "--grades: '0,1,two': give whole numbers separated by commas" in bad.output


def test_without_a_scale_odd_grades_are_warned_about_with_their_lines(tmp_path: Path) -> None:
    (tmp_path / "human.txt").write_text(HUMAN)
    (tmp_path / "judge.txt").write_text("q1 0 d1 3\nq1 0 d2 -1\nq1 0 d3 7\nq2 0 d1 7\n")
    result = agree(str(tmp_path / "human.txt"), str(tmp_path / "judge.txt"), "--n-boot", "0", "--json")
    assert result.exit_code == 0
    human, judge = tmp_path / "human.txt", tmp_path / "judge.txt"
    assert result.stderr.splitlines() == [
        f"warning: {human}, line 2: grade 0 appears only in this file, not in {judge}",
        f"warning: {human}, line 4: grade 1 appears only in this file, not in {judge}",
        f"warning: {human}, line 3: grade 2 appears only in this file, not in {judge}",
        f"warning: {judge}, line 2: grade -1 is negative",
        f"warning: {judge}, line 2: grade -1 appears only in this file, not in {human}",
        f"warning: {judge}, lines 3, 4: grade 7 appears only in this file, not in {human}",
    ]
    assert json.loads(result.stdout)["n"] == 4


@pytest.fixture
def export(tmp_path: Path) -> tuple[Path, dict[str, dict[tuple[str, str], int]], dict[tuple[str, str], int]]:
    """A real project: ada and bob label every item of 2 queries (4 each); ada changes one label;
    an admin adjudicates one item they disagree on. Returns the export, the current labels and
    the final grades."""
    db = make_project(tmp_path / "p.db", n_queries=2, per_query=4, overlap=1.0, overlap_k=2)
    ada, _ = access.add_annotator(db, "ada")
    bob, _ = access.add_annotator(db, "bob")
    boss, _ = access.add_annotator(db, "boss", "admin")
    grade = {"ada": lambda d: int(d[-1]) % 4, "bob": lambda d: min(3, int(d[-1]))}
    idle: set[str] = set()
    while len(idle) < 2:  # in turns, as two people labelling at the same time
        for who in (ada, bob):
            if (item := scheduling.next_item(db, who.id)) is None:
                idle.add(who.name)
                continue
            labels.record_judgment(db, who.id, item.query_id, item.doc_id, grade[who.name](item.doc_id), 1.0)
    labels.record_judgment(db, ada.id, "q001", "q001-d001", 3, 1.0)  # a change: history in the export
    review.record_adjudication(db, "q002", "q002-d004", 2, caller=boss)
    out = tmp_path / "judgments.jsonl"
    with out.open("w", encoding="utf-8") as handle:
        review.export_judgments(db, handle, caller=OWNER)
    current: dict[str, dict[tuple[str, str], int]] = {}
    for j in labels.latest_judgments(db, caller=OWNER):
        current.setdefault(j.annotator, {})[(j.query_id, j.doc_id)] = j.relevance
    final = {k: v for k, v in current["ada"].items() if current["bob"][k] == v}
    final[("q002", "q002-d004")] = 2
    return out, current, final


def _judge(tmp_path: Path, items: list[tuple[str, str]]) -> Path:
    path = tmp_path / "judge.qrels"
    path.write_text("".join(f"{q} 0 {d} {int(d[-1]) % 3}\n" for q, d in items))
    return path


def test_agree_reads_the_export_one_table_per_annotator_by_default(tmp_path: Path, export) -> None:
    out, current, _ = export
    judge = _judge(tmp_path, sorted(current["ada"]))
    text = agree(str(out), str(judge), "--n-boot", "0").stdout
    assert f"A: {out} [ada]\nB: {judge}\n" in text and f"A: {out} [bob]\nB: {judge}\n" in text
    data = json.loads(agree(str(out), str(judge), "--n-boot", "0", "--json").stdout)
    assert [(p["a"], p["b"], p["n"]) for p in data["pairs"]] == [(f"{out} [ada]", str(judge), 8), (f"{out} [bob]", str(judge), 8)]
    judged = {(q, d): int(d[-1]) % 3 for q, d in current["ada"]}
    for pair, name in zip(data["pairs"], ("ada", "bob"), strict=True):
        keys = sorted(judged)
        expected = cohen_kappa_score([current[name][k] for k in keys], [judged[k] for k in keys])
        assert pair["kappa"]["value"] == pytest.approx(expected)


def test_agree_with_one_annotator_compares_their_latest_labels(tmp_path: Path, export) -> None:
    out, current, _ = export
    judge = _judge(tmp_path, sorted(current["ada"]))
    data = json.loads(agree(str(out), str(judge), "--annotator", "ada", "--n-boot", "0", "--json").stdout)
    keys = sorted(current["ada"])
    assert data["a"] == f"{out} [ada]" and data["n"] == 8
    assert current["ada"][("q001", "q001-d001")] == 3  # the changed label is the one compared
    expected = sum(current["ada"][k] == int(k[1][-1]) % 3 for k in keys) / len(keys)
    assert data["agreement"]["value"] == pytest.approx(expected)
    unknown = agree(str(out), str(judge), "--annotator", "eve")
    assert unknown.exit_code == 1 and unknown.output == f"Error: {out}: no annotator 'eve' in the file (annotators: ada, bob)\n"


def test_agree_on_the_export_alone_compares_every_pair_of_annotators(export) -> None:
    out, current, _ = export
    data = json.loads(agree(str(out), str(out), "--n-boot", "0", "--json").stdout)
    keys = sorted(current["ada"])
    assert (data["a"], data["b"], data["n"]) == (f"{out} [ada]", f"{out} [bob]", 8)
    ada, bob = ([current[n][k] for k in keys] for n in ("ada", "bob"))
    assert data["kappa_quadratic"]["value"] == pytest.approx(cohen_kappa_score(ada, bob, weights="quadratic"))


def test_agree_with_the_adjudicated_grade_as_a_rater(tmp_path: Path, export) -> None:
    out, current, final = export
    judge = _judge(tmp_path, sorted(current["ada"]))
    data = json.loads(agree(str(out), str(judge), "--adjudicated", "--n-boot", "0", "--json").stdout)
    keys = sorted(final)
    assert data["a"] == f"{out} [adjudicated]" and data["n"] == len(final) and data["only_b"] == 8 - len(final)
    expected = sum(final[k] == int(k[1][-1]) % 3 for k in keys) / len(keys)
    assert data["agreement"]["value"] == pytest.approx(expected)
    both = json.loads(agree(str(out), str(judge), "--adjudicated", "--annotator", "bob", "--n-boot", "0", "--json").stdout)
    assert [p["a"] for p in both["pairs"]] == [f"{out} [bob]", f"{out} [adjudicated]"]
    plain = agree(str(judge), str(judge), "--adjudicated")
    assert plain.exit_code == 2 and "--annotator and --adjudicated apply to a goldpool export-judgments file" in plain.output

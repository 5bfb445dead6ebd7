"""Imported labels and verdicts count for their annotator: the store's counts, the Progress
and Annotators pages, and ``goldpool stats``, for every task."""

from __future__ import annotations

from click.testing import CliRunner

from app_fixtures import JUDGE_NAME, Project, add_judgments, add_verdict_items, open_page
from labels_fixtures import write_jsonl
from labeler.cli import cli
from labeler.store import connect, review
from labeler.store.access import OWNER
from labeler.judges.verdict_files import import_verdicts

#: bob's imported relevance labels (none of them assigned to him), faithfulness and pairwise verdicts.
IMPORTED = {("q1", "q1-d1"): 2, ("q1", "q1-d2"): 0, ("q2", "q2-d1"): 3}
BOB_VERDICTS = [{"item_id": "f1", "verdict": "SUPPORTED"}, {"item_id": "f2", "verdict": "UNSUPPORTED"},
                {"item_id": "p1", "verdict": "A", "order": "AB"}]
ADA_VERDICTS = [{"item_id": "f1", "verdict": "UNSUPPORTED"}]


def _imported(project: Project) -> None:
    """bob's labels and verdicts come from files; ada labels one pool entry in the app's table."""
    add_verdict_items(project.path)  # 4 faithfulness, 8 pairwise items, and the judge's verdicts on all
    tmp = project.path.parent
    with connect(project.path) as db:
        relevance = [{"query_id": q, "doc_id": d, "relevance": g} for (q, d), g in IMPORTED.items()]
        import_verdicts(db, write_jsonl(tmp / "bob-rel.jsonl", relevance), annotator="bob", caller=OWNER)
        import_verdicts(db, write_jsonl(tmp / "bob.jsonl", BOB_VERDICTS), annotator="bob", caller=OWNER)
        import_verdicts(db, write_jsonl(tmp / "ada.jsonl", ADA_VERDICTS), annotator="ada", caller=OWNER)
    add_judgments(project.path, project.admin_id, {("q1", "q1-d1"): 2})


def test_the_store_counts_imported_labels_and_every_task(project: Project) -> None:
    _imported(project)
    with connect(project.path) as db:
        report = review.progress_report(db, caller=OWNER)
    ada, bob = report.annotators
    assert (bob.done, bob.assigned) == (3, 0) and (ada.done, ada.assigned) == (1, 0)
    with connect(project.path) as db:
        counts = review.labelled_counts(db, caller=OWNER)
    none = {"claims": 0, "correctness": 0, "answer-relevance": 0, "nuggets": 0}  # the project has no answers
    assert counts[project.annotator_id] == {"relevance": 3, "faithfulness": 2, "pairwise": 1} | none
    assert counts[project.admin_id] == {"relevance": 1, "faithfulness": 1, "pairwise": 0} | none
    by_task = {t.task: (t.items, t.labelled, t.overlap_done, t.per_annotator) for t in report.tasks}
    assert by_task == {
        "relevance": (15, 3, 1, (("ada", 1), ("bob", 3))),
        "faithfulness": (4, 2, 1, (("ada", 1), ("bob", 2))),
        "pairwise": (8, 1, 0, (("ada", 0), ("bob", 1))),
        **{task: (0, 0, 0, (("ada", 0), ("bob", 0))) for task in ("claims", "correctness", "answer-relevance", "nuggets")},
    }


def test_the_progress_page_shows_imported_work_per_task(project: Project) -> None:
    _imported(project)
    at = open_page(project.path, "progress_page", project.admin_token)
    assert not at.exception
    people = at.dataframe[0].value.set_index("annotator")
    assert people.loc["bob", ["done", "assigned", "faithfulness", "pairwise"]].tolist() == [3, 0, 2, 1]
    assert people.loc["ada", ["done", "faithfulness", "pairwise"]].tolist() == [1, 1, 0]
    tasks = at.table[0].value
    assert tasks.loc["relevance"].tolist() == [15, 3, 1, "ada 1, bob 3"]
    assert tasks.loc["faithfulness"].tolist() == [4, 2, 1, "ada 1, bob 2"]
    assert tasks.loc["pairwise"].tolist() == [8, 1, 0, "bob 1"]
    assert list(tasks.columns) == ["items", "labelled", "overlap done (≥2)", "per annotator"]


def test_the_annotators_page_shows_what_each_person_labelled(project: Project) -> None:
    _imported(project)
    at = open_page(project.path, "annotators_page", project.admin_token)
    assert not at.exception
    assert [t.value for t in at.text] == ["1 labelled · faithfulness 1", "3 labelled · faithfulness 2 · pairwise 1"]


def test_stats_mentions_items_verdicts_and_judges(project: Project) -> None:
    from labeler.store.verdicts import verdict_counts

    _imported(project)
    with connect(project.path) as db:
        counts = verdict_counts(db, caller=OWNER)
    none = ("claims", "correctness", "answer-relevance", "nuggets")  # the project has no answers
    assert counts.items == {"faithfulness": 4, "pairwise": 8} | dict.fromkeys(none, 0)
    assert counts.human == {"faithfulness": (3, 2), "pairwise": (1, 1)} | dict.fromkeys(none, (0, 0))
    assert counts.judges == {JUDGE_NAME: {"faithfulness": 4, "pairwise": 8}}
    out = CliRunner().invoke(cli, ["stats", str(project.path)]).output.splitlines()
    assert "judged_entries: 3" in out
    start = out.index("verdict items: faithfulness 4, pairwise 8")
    assert out[start + 1:start + 4] == [
        "human verdicts: faithfulness 3 on 2 items, pairwise 1 on 1 item",
        "judges: 1",
        f"  {JUDGE_NAME}: faithfulness 4, pairwise 8 verdicts",
    ]


def test_the_annotators_command_counts_imported_labels(project: Project) -> None:
    _imported(project)
    assert CliRunner().invoke(cli, ["annotators", str(project.path)]).output == (
        "   1  ada  admin      active    1 labelled, 0 assigned, faithfulness 1\n"
        "   2  bob  annotator  active    3 labelled, 0 assigned, faithfulness 2, pairwise 1\n"
    )

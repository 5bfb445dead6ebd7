"""Judge-assisted evaluation end to end, with a person in real Chromium: a project built
through the CLI, judged from the scripted server, a sample of its queries labelled by keyboard
in `goldpool serve`, frozen, and every run's metrics estimated with intervals.

Needs Debian's Chromium, ``chromium`` on the PATH; skipped, loudly, where it is missing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from app_fixtures import Project
from browser_helpers import BROWSER, NARROW, idle, judgments, launch, new_page, serving, sign_in
from judge_server import JudgeServer
from labeler.cli import cli

pytestmark = [*BROWSER]

TOPICS = {
    "q1": "boiling point of water",
    "q2": "capital city of australia",
    "q3": "who painted the night watch",
    "q4": "speed of light in a vacuum",
    "q5": "largest ocean on earth",
    "q6": "tallest mountain in africa",
    "q7": "inventor of the telephone",
    "q8": "longest river in europe",
}
PER_QUERY = 4
RUNS = ("a.trec", "b.trec")
#: Each chunk names itself (``q3-d2``): the scripted judge grades it from that, and the test
#: reads on screen which entry the app handed out.
ENTRY = re.compile(r"\b(q\d)-d(\d)\b")


def _cli(*args: str, **env: str) -> str:
    result = CliRunner().invoke(cli, list(args), env=env or None, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _files(directory: Path) -> None:
    """Chunks, queries, and two runs ranking each query's chunks in opposite orders."""
    chunks = [{"doc_id": f"{q}-d{n}", "text": f"Passage {q}-d{n} on the {topic}."}
              for q, topic in TOPICS.items() for n in range(1, PER_QUERY + 1)]
    (directory / "chunks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in chunks), encoding="utf-8")
    (directory / "queries.jsonl").write_text(
        "".join(json.dumps({"query_id": q, "text": t}) + "\n" for q, t in TOPICS.items()), encoding="utf-8")
    for name, reverse in ((RUNS[0], False), (RUNS[1], True)):
        lines = [f"{q} Q0 {q}-d{n} {i + 1} {10 - i} {name}\n" for q in TOPICS
                 for i, n in enumerate(sorted(range(1, PER_QUERY + 1), reverse=reverse))]
        (directory / name).write_text("".join(lines), encoding="utf-8")


def _build(directory: Path) -> Project:
    """The project, through the CLI: corpus, queries, two runs, their pool, an admin and an annotator."""
    _files(directory)
    db = str(directory / "project.db")
    _cli("init", db)
    _cli("import-corpus", db, str(directory / "chunks.jsonl"))
    _cli("import-queries", db, str(directory / "queries.jsonl"))
    for name in RUNS:
        _cli("import-run", db, str(directory / name), "--name", name)
    _cli("build-pool", db, "--bm25-depth", "0", "--dense-depth", "0", "--run-depth", str(PER_QUERY), "--no-progress")
    people = {}
    for name, role in (("ada", "admin"), ("bob", "annotator")):
        out = _cli("add-annotator", db, name, "--role", role)
        people[name] = (int(re.search(r"\(id (\d+)\)", out)[1]), re.search(r"(gp\d+\.\S+)", out)[1])
    (admin_id, admin_token), (annotator_id, annotator_token) = people["ada"], people["bob"]
    return Project(Path(db), admin_token, annotator_token, admin_id, annotator_id, len(TOPICS) * PER_QUERY)


def _judge(query_id: str, doc_id: str) -> int:
    """The judge's grade: it differs from query to query, so the metrics do too."""
    return (int(query_id[1:]) + int(doc_id[-1])) % 4


def _person(query_id: str, doc_id: str) -> int:
    """The person's grade: the judge's on three entries of each query, 0 on the fourth."""
    return 0 if doc_id.endswith(f"-d{PER_QUERY}") else _judge(query_id, doc_id)


def _judge_reply(message: str) -> str:
    return str(_judge(*_entry(message)))


def _entry(text: str) -> tuple[str, str]:
    """The (query_id, doc_id) a chunk names."""
    query_id, number = ENTRY.search(text).groups()
    return query_id, f"{query_id}-d{number}"


def test_sample_labelled_in_chromium_then_eval_with_intervals(tmp_path: Path, server: JudgeServer) -> None:
    """Build, judge the pool, plan a `queries` sample and hand out only it; a person labels by
    keyboard every entry handed out; freeze; `eval --judge --sample` gives every run and
    metric an estimate inside its interval, from the people's labels on exactly the sample."""
    from playwright.sync_api import expect, sync_playwright

    project = _build(tmp_path)
    db = str(project.path)
    server.answer = _judge_reply
    _cli("run-judge", db, "--judge", "j", "--model", "m", "--base-url", server.url, "--task", "relevance",
         OPENAI_API_KEY="k")
    assert server.count == project.n_items
    planned = json.loads(_cli("plan-sample", db, "--name", "s", "--design", "queries", "--share", "0.5",
                              "--seed", "4", "--json"))
    sample = {(i["query_id"], i["doc_id"]) for i in planned["items"]}
    sampled_queries = {q for q, _ in sample}
    assert planned["design"] == "queries" and len(sampled_queries) == len(TOPICS) // 2
    assert sample == {(q, f"{q}-d{n}") for q in sampled_queries for n in range(1, PER_QUERY + 1)}
    assert planned["judgments"] == len(sample)
    _cli("label-settings", db, "sample=s", "overlap=0")

    shown: list[tuple[str, str]] = []  # the entry on screen at each key press
    with serving(project, tmp_path / "serve.log") as url, sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser, NARROW)
            sign_in(page, url, project.annotator_token)
            expect(page.get_by_text("you: 0 labelled", exact=False)).to_be_visible()
            for done in range(1, len(sample) + 1):
                idle(page)
                shown.append(_entry(page.locator(".gp-chunk").inner_text()))
                page.keyboard.press(str(_person(*shown[-1])))
                expect(page.get_by_text(f"you: {done} labelled", exact=False)).to_be_visible()
            expect(page.get_by_text("Nothing left to label")).to_be_visible()
        finally:
            browser.close()

    assert len(shown) == len(set(shown)) and set(shown) == sample  # handed out: the sample, each entry once
    rows = judgments(project)
    assert {(r["query_id"], r["doc_id"]) for r in rows} == sample and len(rows) == len(sample)
    assert all(r["relevance"] == _person(r["query_id"], r["doc_id"]) for r in rows)

    _cli("freeze", db, "--version", "v1")
    result = json.loads(_cli("eval", f"{db}@v1", *(str(tmp_path / name) for name in RUNS), "--judge", "j",
                             "--sample", "s", "--json"))
    assert result["design"] == "queries" and set(result["runs"]) == set(RUNS)
    assert any(f"only {len(sampled_queries)} labelled queries" in w for w in result["warnings"])
    metrics = set(result["runs"][RUNS[0]])
    assert "nDCG@10" in metrics
    for run in RUNS:
        assert set(result["runs"][run]) == metrics
        for metric, cell in result["runs"][run].items():
            assert None not in (cell["value"], cell["low"], cell["high"]), (run, metric, cell)
            assert cell["low"] <= cell["value"] <= cell["high"], (run, metric, cell)
            assert (cell["n_people"], cell["n_judge"]) == (len(sample), project.n_items), (run, metric, cell)
        # The sampled queries' nDCG differ, so its interval has a width.
        assert result["runs"][run]["nDCG@10"]["low"] < result["runs"][run]["nDCG@10"]["high"]

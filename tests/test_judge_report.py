"""calibrate --judge: a judge against people, checked against scikit-learn and hand counts."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from labels_fixtures import make_project, write_jsonl
from labeler.cli import cli
from labeler.judges.report import judge_report, to_dict
from labeler.store import access
from labeler.store.access import OWNER
from labeler.judges.verdict_files import import_items, import_verdicts


@pytest.fixture
def project(tmp_path: Path):
    """12 pairwise items over 4 questions; two people; a judge with a first-slot habit."""
    db = make_project(tmp_path / "p.db", n_queries=3, per_query=8)
    rng = random.Random(7)
    items = [{"item_id": f"p{i:02d}", "kind": "pairwise", "question": f"question {i % 4}",
              "response_a": "word " * (3 + i), "response_b": "word " * (8 - i % 5),
              "model_a": "gpt-4o" if i % 3 == 0 else "llama-3", "model_b": "mistral-7b"} for i in range(12)]
    import_items(db, write_jsonl(tmp_path / "items.jsonl", items), caller=OWNER)
    people = {name: {it["item_id"]: rng.choice("AAB") for it in items} for name in ("ann", "bob")}
    ab = {it["item_id"]: rng.choice("AAB") for it in items}
    ba = {k: (v if rng.random() < 0.6 else ("A" if v == "B" else "B")) for k, v in ab.items()}
    for name, verdicts in people.items():
        access.add_annotator(db, name)
        import_verdicts(db, write_jsonl(tmp_path / f"{name}.jsonl", [{"item_id": k, "verdict": v} for k, v in verdicts.items()]),
                        annotator=name, caller=OWNER)
    judge_rows = [{"item_id": k, "verdict": v, "order": "AB", "model": "gpt-4o-mini", "tokens_in": 100, "tokens_out": 1}
                  for k, v in ab.items()]
    judge_rows += [{"item_id": k, "verdict": v, "order": "BA", "model": "gpt-4o-mini", "tokens_in": 110, "tokens_out": 1}
                   for k, v in ba.items()]
    import_verdicts(db, write_jsonl(tmp_path / "judge.jsonl", judge_rows), judge="g", caller=OWNER)
    # Relevance: grades of 24 pool entries by both people and the judge.
    pool = db.execute("SELECT query_id, doc_id FROM pool ORDER BY query_id, doc_id").fetchall()
    grades = {name: {k: rng.randint(0, 3) for k in pool} for name in ("ann", "bob")}
    judge_grades = {k: min(3, max(0, grades["ann"][k] + rng.choice([-1, 0, 0, 1]))) for k in pool}
    for name, g in grades.items():
        import_verdicts(db, write_jsonl(tmp_path / f"{name}-rel.jsonl", [{"query_id": q, "doc_id": d, "relevance": r} for (q, d), r in g.items()]),
                        annotator=name, caller=OWNER)
    import_verdicts(db, write_jsonl(tmp_path / "judge-rel.jsonl", [{"query_id": q, "doc_id": d, "relevance": r} for (q, d), r in judge_grades.items()]),
                    judge="g", caller=OWNER)
    return db, people, ab, ba, grades, judge_grades


def test_pairwise_statistics_equal_independent_counts(project) -> None:
    db, people, ab, ba, _, _ = project
    t = to_dict(judge_report(db, ["g"], caller=OWNER, n_boot=200))["judges"]["g"]["pairwise"]
    combined = {k: (ab[k] if ab[k] == ba[k] else "TIE") for k in ab}
    human = [people[name][k] for k in sorted(ab) for name in ("ann", "bob")]
    judge = [combined[k] for k in sorted(ab) for _ in ("ann", "bob")]
    assert t["n"] == 12 and t["agreement"]["n"] == 24
    assert t["agreement"]["value"] == pytest.approx(sum(h == j for h, j in zip(human, judge)) / 24)
    assert t["kappa"]["value"] == pytest.approx(cohen_kappa_score(human, judge, labels=["A", "B", "TIE"]))
    assert t["kappa"]["low"] <= t["kappa"]["value"] <= t["kappa"]["high"]
    consistent = sum(ab[k] == ba[k] for k in ab)
    assert t["position_consistency"] == {"value": consistent / 12, "low": pytest.approx(t["position_consistency"]["low"]),
                                         "high": pytest.approx(t["position_consistency"]["high"]), "n": 12}
    first_slot = sum(ab[k] == "A" and ba[k] == "B" for k in ab)
    assert t["first_slot_preference"]["value"] == pytest.approx(first_slot / (12 - consistent))
    ceiling = [(people["ann"][k], people["bob"][k]) for k in sorted(ab)]
    assert t["human_ceiling"]["kappa"]["value"] == pytest.approx(cohen_kappa_score(*zip(*ceiling)))
    assert t["tokens_per_verdict"] == pytest.approx((101 + 111) / 2)
    assert t["unparseable_rate"]["value"] == 0.0
    assert len(t["disagreements"]) == sum(h != j for h, j in zip(human, judge))
    assert t["judge_family"] == "gpt" and t["self_preference"] is not None
    power = t["power"]
    chance = power["sensitivity"] + power["specificity"] <= 1
    assert ("no better than chance" in power["sentence"]) == chance == (power["mdd_judge"] is None)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_relevance_uses_quadratic_kappa_with_query_clusters(project, level: int) -> None:
    db, _, _, _, grades, judge_grades = project
    report = to_dict(judge_report(db, ["g"], caller=OWNER, n_boot=300, relevance_level=level))
    assert report["relevance_level"] == level
    t = report["judges"]["g"]["relevance"]
    keys = sorted(judge_grades)
    human = [grades[name][k] for k in keys for name in ("ann", "bob")]
    judge = [judge_grades[k] for k in keys for _ in ("ann", "bob")]
    assert t["kappa"]["value"] == pytest.approx(cohen_kappa_score(human, judge, weights="quadratic"))
    assert t["kappa_unweighted"]["value"] == pytest.approx(cohen_kappa_score(human, judge))
    ceiling = cohen_kappa_score([grades["ann"][k] for k in keys], [grades["bob"][k] for k in keys], weights="quadratic")
    assert t["human_ceiling"]["kappa"]["value"] == pytest.approx(ceiling)
    assert t["position_consistency"] is None
    se_pairs = [(h >= level, j >= level) for h, j in zip(human, judge)]
    se = sum(h and j for h, j in se_pairs) / sum(h for h, _ in se_pairs)
    sp = sum(not h and not j for h, j in se_pairs) / sum(not h for h, _ in se_pairs)
    assert (t["power"]["sensitivity"], t["power"]["specificity"]) == pytest.approx((se, sp))
    assert f"grade ≥ {level} (relevance level {level})" in t["power"]["sentence"]
    assert t["power"]["n"] == 3 and t["power"]["mdd_judge"] > t["power"]["mdd_people"]


def test_a_flip_is_a_tie_and_an_unparseable_order_is_counted(project, tmp_path: Path) -> None:
    db = project[0]
    import_verdicts(db, write_jsonl(tmp_path / "j2.jsonl", [
        {"item_id": "p00", "verdict": "A", "order": "AB"}, {"item_id": "p00", "verdict": "B", "order": "BA"},
        {"item_id": "p01", "verdict": "B", "order": "AB"}, {"item_id": "p01", "verdict": None, "order": "BA", "raw": "both"},
    ]), judge="h", caller=OWNER)
    t = to_dict(judge_report(db, ["h"], caller=OWNER, n_boot=0))["judges"]["h"]["pairwise"]
    assert t["n"] == 1 and t["unparseable_rate"]["value"] == 0.25
    assert {d["judge"] for d in t["disagreements"]} <= {"TIE"}
    assert t["position"] == {"wins_a": 0, "wins_b": 0, "flips": 1, "n_excluded": 0}


def test_cli_judges_side_by_side(project, tmp_path: Path) -> None:
    db = project[0]
    import_verdicts(db, write_jsonl(tmp_path / "j3.jsonl", [{"item_id": "p03", "verdict": "A", "order": "AB"},
                                                      {"item_id": "p03", "verdict": "A", "order": "BA"}]),
                    judge="k<script>", caller=OWNER)
    path = str(tmp_path / "p.db")
    runner = CliRunner()
    result = runner.invoke(cli, ["calibrate", path, "--judge", "g", "--judge", "k<script>", "--json", "--n-boot", "50",
                                 "--html", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out["judges"]) == {"g", "k<script>"}
    assert set(out["judges"]["g"]) == {"pairwise", "relevance"}
    for key in ("n", "agreement", "kappa", "position_consistency", "first_slot_preference"):
        assert key in out["judges"]["g"]["pairwise"]
    assert set(out["judges"]["g"]["pairwise"]["agreement"]) == {"value", "low", "high", "n"}
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "k&lt;script&gt;" in html and "<script>" not in html
    text = runner.invoke(cli, ["calibrate", path, "--judge", "g", "--judge", "k<script>", "--n-boot", "50"]).output
    assert "human ceiling" in text and ["g", "pairwise", "12"] in [line.split()[:3] for line in text.splitlines()]
    # A terminal shows text as written: no Markdown escapes, pipes or hashes.
    assert "k<script>: pairwise\n------------------" in text
    assert "\\" not in text and "|" not in text and "#" not in text
    missing = runner.invoke(cli, ["calibrate", path, "--judge", "nobody"])
    assert missing.exit_code == 1 and "no verdict" in missing.output


def _long_named_judge(project, tmp_path: Path) -> tuple[object, str]:
    """The fixture's project with its pairwise and relevance verdicts also given by a judge of
    a long name (the leaderboard's widest case)."""
    db, _, ab, ba, _, judge_grades = project
    name = "qwen2.5-7b-instruct-judge-v1"
    rows = [{"item_id": k, "verdict": v, "order": "AB"} for k, v in ab.items()]
    rows += [{"item_id": k, "verdict": v, "order": "BA"} for k, v in ba.items()]
    rows += [{"query_id": q, "doc_id": d, "relevance": r} for (q, d), r in judge_grades.items()]
    import_verdicts(db, write_jsonl(tmp_path / "long.jsonl", rows), judge=name, caller=OWNER)
    return db, name


def test_html_folds_the_disagreements_and_scrolls_wide_tables_in_their_own_box(project, tmp_path: Path) -> None:
    from html.parser import HTMLParser

    from calibration.report_judges import to_html

    db, name = _long_named_judge(project, tmp_path)
    report = judge_report(db, ["g", name], caller=OWNER, n_boot=0)
    page = to_html(report)

    class Outline(HTMLParser):
        """Where each table sits: inside which <details> (open or not) and which boxes."""

        def __init__(self) -> None:
            super().__init__()
            self.stack: list[tuple[str, dict]] = []
            self.tables: list[list[tuple[str, dict]]] = []
            self.summaries: list[str] = []
            self._in_summary = False

        def handle_starttag(self, tag, attrs):
            self.stack.append((tag, dict(attrs)))
            if tag == "table":
                self.tables.append(list(self.stack[:-1]))
            self._in_summary = tag == "summary"

        def handle_endtag(self, tag):
            while self.stack and self.stack.pop()[0] != tag:
                pass
            self._in_summary = False

        def handle_data(self, data):
            if self._in_summary:
                self.summaries.append(data)

    outline = Outline()
    outline.feed(page)
    board, *lists = outline.tables
    assert ("div", {"class": "wide"}) in board
    counts = [len(to_dict(report)["judges"][j][t]["disagreements"]) for j in ("g", name) for t in ("pairwise", "relevance")]
    assert len(lists) == 4 and all(counts)
    for parents in lists:  # every list of disagreements folded (closed) in a bounded box
        details = [attrs for tag, attrs in parents if tag == "details"]
        assert details == [{}] and ("div", {"class": "list"}) in parents
    assert sorted(int(text.split()[0].replace(",", "")) for text in outline.summaries) == sorted(counts)
    assert ".wide{max-width:100%;overflow-x:auto}" in page and ".list{max-height:30em;overflow:auto" in page


@pytest.mark.browser
@pytest.mark.skipif(shutil.which("chromium") is None, reason="BROWSER TEST SKIPPED: no `chromium` on the PATH")
def test_html_fits_a_1400_px_window_in_chromium(project, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from browser_helpers import WIDE, launch, new_page
    from calibration.report_judges import to_html

    db, name = _long_named_judge(project, tmp_path)
    page_file = tmp_path / "report.html"
    page_file.write_text(to_html(judge_report(db, ["g", name], caller=OWNER, n_boot=0)), encoding="utf-8")
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = new_page(browser, WIDE)
            page.goto(page_file.as_uri())
            assert page.evaluate("document.documentElement.scrollWidth") <= WIDE["width"]
            board = page.locator("table").first.bounding_box()
            assert board is not None and board["x"] + board["width"] <= WIDE["width"]
            rows = page.locator("details tr")
            assert rows.count() > 0 and not rows.first.is_visible()  # folded until opened
            for summary in page.locator("summary").all():
                summary.click()
            assert rows.first.is_visible()
            # Opened, each list stays within 30em (480 px) and scrolls inside its box: the longest is longer.
            sizes = page.evaluate("[...document.querySelectorAll('details .list')]"
                                  ".map(e => [e.clientHeight, e.scrollHeight])")
            assert max(h for h, _ in sizes) <= 30 * 16 and max(s for _, s in sizes) > 30 * 16
            assert page.evaluate("document.documentElement.scrollWidth") <= WIDE["width"]
        finally:
            browser.close()


def test_the_reports_flag_is_the_claims_pages_flag() -> None:
    from calibration.report_judges import FLAG, flag_note
    from labeler.store.vocabulary import NOT_ONE_CLAIM, VERDICTS

    assert FLAG == NOT_ONE_CLAIM and FLAG in VERDICTS["claims"]
    assert f"({NOT_ONE_CLAIM})" in flag_note(2)


def test_calibrate_judge_html_draws_each_judge_beside_the_people_ceiling(project, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    path = str(tmp_path / "p.db")
    runner = CliRunner()
    result = runner.invoke(cli, ["calibrate", path, "--judge", "g", "--json", "--n-boot", "50",
                                 "--html", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    pairwise = json.loads(result.output)["judges"]["g"]["pairwise"]
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert page.index("</h1>") < page.index("<svg") < page.index("<table")
    svg = page[page.index("<svg"):page.index("</svg>") + len("</svg>")]
    texts = [t.text or "" for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
    assert texts[0] == "Judges against people (95% intervals)"
    assert {"g: pairwise", "g: relevance", "agreement", "kappa"} <= set(texts)
    agreement = pairwise["agreement"]
    assert any(f"{agreement['value']:.3g} [" in t for t in texts), texts

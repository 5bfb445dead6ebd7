"""The reports' pictures where the reports are written: ``answer-metrics --html`` and ``compare
--html`` open with their forest plots, drawn from the numbers the reports print."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from calibration.report_figures import estimate_figures, with_figures
from labels_fixtures import write_jsonl
from labeler.cli import cli

SVG = "{http://www.w3.org/2000/svg}"


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _svgs(page: str) -> list[ET.Element]:
    found, at = [], 0
    while (start := page.find("<svg", at)) >= 0:
        end = page.index("</svg>", start) + len("</svg>")
        found.append(ET.fromstring(page[start:end]))
        at = end
    return found


def _texts(svg: ET.Element) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{SVG}text")]


def test_answer_metrics_html_opens_with_the_systems_and_their_paired_differences(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    _run("init", db)
    verdicts = []
    for system, right in (("A", {0, 1, 2, 3, 4, 5, 6, 7}), ("<i>B</i>", {0, 1, 2, 3})):
        answers = [{"answer_id": f"{system[-3:-2] if system != 'A' else 'A'}{i}", "question": f"Q{i}?",
                    "response": "r", "reference": "R"} for i in range(10)]
        _run("import-answers", db, str(write_jsonl(tmp_path / f"{len(verdicts)}.jsonl", answers)), "--system", system)
        verdicts += [{"item_id": f"{a['answer_id']}@correctness", "verdict": "CORRECT" if i in right else "INCORRECT"}
                     for i, a in enumerate(answers)]
    _run("import-verdicts", db, str(write_jsonl(tmp_path / "v.jsonl", verdicts)), "--annotator", "ada")
    _run("answer-metrics", db, "--html", str(tmp_path / "m.html"))
    page = (tmp_path / "m.html").read_text(encoding="utf-8")
    assert page.index("<svg") > page.index("</h1>")  # under the heading, before the tables
    rates, *differences = _svgs(page)
    texts = _texts(rates)
    assert [t for t in texts if t in ("A", "<i>B</i>")] == ["A", "<i>B</i>"]  # sorted: A's correctness is higher
    assert any(t.startswith("correctness (people): 0.8 [") for t in texts)
    correctness = next(d for d in differences if "Paired differences in correctness" in _texts(d)[0])
    labels = " ".join(_texts(correctness))
    assert "<i>B</i> − A" in labels and "-0.4 [" in labels and "MDD ±" in labels
    assert "<i>B</i>" not in page.replace("&lt;i&gt;B&lt;/i&gt;", "")


def test_compare_html_opens_with_the_differences_and_their_mdd(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    (tmp_path / "q.jsonl").write_text("".join(f'{{"query_id": "q{i}", "text": "t{i}"}}\n' for i in range(6)))
    (tmp_path / "c.jsonl").write_text("".join(f'{{"doc_id": "d{i}", "text": "x{i}"}}\n' for i in range(12)))
    (tmp_path / "qrels").write_text("".join(f"q{i} 0 d{2 * i} 1\nq{i} 0 d{2 * i + 1} 0\n" for i in range(6)))
    for name, good in (("a", range(6)), ("b", range(3))):
        (tmp_path / f"{name}.trec").write_text("".join(
            f"q{i} Q0 d{2 * i if i in good else 2 * i + 1} 1 2.0 {name}\nq{i} Q0 d{2 * i + 1 if i in good else 2 * i} 2 1.0 {name}\n"
            for i in range(6)))
    for args in (["init", db], ["import-queries", db, str(tmp_path / "q.jsonl")],
                 ["import-corpus", db, str(tmp_path / "c.jsonl")],
                 ["import-judgments", db, str(tmp_path / "qrels"), "--annotator", "ann"], ["freeze", db, "--version", "v1"]):
        _run(*args)
    _run("compare", f"{db}@v1", str(tmp_path / "a.trec"), str(tmp_path / "b.trec"), "--metric", "RR", "--html",
         str(tmp_path / "c.html"))
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    figure = _svgs(page)[0]
    texts = _texts(figure)
    assert texts[0] == "RR: paired differences from the baseline"
    assert "b.trec − a.trec" in texts and any(t.startswith("-0.25 [") and "MDD ±" in t for t in texts)


def test_estimate_figures_and_where_figures_go() -> None:
    runs = {"bm25": {"nDCG@10": {"value": 0.41, "low": 0.35, "high": 0.47, "n_people": 80}},
            "dense": {"nDCG@10": {"value": 0.52, "low": 0.45, "high": 0.58, "n_people": 80}}}
    (svg,) = estimate_figures(runs)
    assert [t for t in _texts(ET.fromstring(svg)) if t in ("bm25", "dense")] == ["dense", "bm25"]
    (diff,) = estimate_figures({"dense": runs["dense"]}, baseline="bm25")
    assert "dense − bm25" in _texts(ET.fromstring(diff))
    assert with_figures("<html><body><h1>T</h1><p>x</p></body></html>", ["<svg/>"]) == \
        "<html><body><h1>T</h1><section class='figures'><svg/></section><p>x</p></body></html>"
    assert with_figures("<body>x</body>", []) == "<body>x</body>"
    assert with_figures("<body>x</body>", ["<svg/>"]) == "<body>x<section class='figures'><svg/></section></body>"

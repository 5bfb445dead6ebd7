"""Inputs the gate, eval and compare refuse: nothing compared is never a PASS.

Each case once passed (exit 0), ended in a traceback (exit 1) or aborted in pytrec_eval's C code
(exit 134); now the gate exits 2 naming what is wrong and still writes --junit and --summary,
and eval and compare refuse the same inputs with one line.
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate_fixtures import write_golden, write_runs
from labeler.cli import cli


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    write_golden(tmp_path / "golden")
    write_runs(tmp_path, 5)
    main = (tmp_path / "main.trec").read_text(encoding="utf-8").splitlines()
    # The same run with query ids of another numbering (q001 -> 1): shares no golden query.
    (tmp_path / "renumbered.trec").write_text(
        "".join(f"{line.split(' ', 1)[0].lstrip('q0') or '0'} {line.split(' ', 1)[1]}\n" for line in main), encoding="utf-8")
    (tmp_path / "blank.trec").write_text("\n  \n\n", encoding="utf-8")
    (tmp_path / "empty.trec").write_text("", encoding="utf-8")
    first = main[0].split(" ")
    for name, bad in (("nul", "d\x00x"), ("zero-width", "d\u200bx")):
        (tmp_path / f"{name}.trec").write_text(" ".join([first[0], "Q0", bad, *first[3:]]) + "\n" + "\n".join(main[1:]) + "\n",
                                               encoding="utf-8")
    shutil.copytree(tmp_path / "golden", tmp_path / "no-manifest")
    (tmp_path / "no-manifest" / "manifest.json").unlink()
    return tmp_path


#: (case, golden, baseline, candidate, metric, what the message says)
BAD = [
    ("no golden query in the candidate", "golden", "main.trec", "renumbered.trec", "nDCG@10", "none of its"),
    ("no golden query in either", "golden", "renumbered.trec", "renumbered.trec", "nDCG@10", "none of its"),
    ("a blank run", "golden", "blank.trec", "pr.trec", "nDCG@10", "no run lines"),
    ("an empty run", "golden", "main.trec", "empty.trec", "nDCG@10", "no run lines"),
    ("cutoff 0 of P", "golden", "main.trec", "pr.trec", "P@0", "cutoff 0"),
    ("cutoff 0 of nDCG", "golden", "main.trec", "pr.trec", "nDCG@0", "cutoff 0"),
    ("a NUL in a doc id", "golden", "main.trec", "nul.trec", "nDCG@10", "U+0000"),
    ("a zero-width doc id", "golden", "main.trec", "zero-width.trec", "nDCG@10", "U+200B"),
    ("a level above the scale", "golden", "main.trec", "pr.trec", "P(rel=9)@10", "above every grade"),
    ("an export without its manifest", "no-manifest", "main.trec", "pr.trec", "nDCG@10", "no manifest.json"),
]


@pytest.mark.parametrize(("case", "golden", "baseline", "candidate", "metric", "says"), BAD, ids=[b[0] for b in BAD])
def test_the_gate_exits_2_and_still_writes_its_reports(work: Path, case: str, golden: str, baseline: str,
                                                        candidate: str, metric: str, says: str) -> None:
    summary, junit = work / "summary.md", work / "junit.xml"
    summary.write_text("## goldpool gate: PASS\n(the previous run's)\n", encoding="utf-8")
    junit.write_text("<testsuites/>", encoding="utf-8")
    result = _invoke("gate", str(work / golden), "--baseline", str(work / baseline), "--candidate",
                     str(work / candidate), "--metric", metric, "--summary", str(summary), "--junit", str(junit))
    assert result.exit_code == 2, (case, result.exit_code, result.output)
    assert says in result.output and "Traceback" not in result.output and "PASS" not in result.output
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## goldpool gate: BAD INPUT") and "nothing was compared" in text and "previous" not in text
    [error] = ET.parse(junit).getroot().iter("error")
    assert says in error.get("message")


@pytest.mark.parametrize(("case", "golden", "baseline", "candidate", "metric", "says"), BAD, ids=[b[0] for b in BAD])
def test_eval_and_compare_refuse_the_same_inputs(work: Path, case: str, golden: str, baseline: str,
                                                  candidate: str, metric: str, says: str) -> None:
    runs = [str(work / baseline), str(work / candidate)]
    for args in (["eval", str(work / golden), *runs, "--metric", metric],
                 ["compare", str(work / golden), *runs, "--metric", metric]):
        result = _invoke(*args)
        assert result.exit_code != 0 and says in result.output, (case, args[0], result.output)
        assert not isinstance(result.exception, (IndexError, KeyError)) and "Traceback" not in result.output


def test_a_folder_s_qrels_file_given_itself_is_scored_as_plain_qrels(work: Path) -> None:
    result = _invoke("gate", str(work / "no-manifest" / "qrels.txt"), "--baseline", str(work / "main.trec"),
                     "--candidate", str(work / "pr.trec"), "--metric", "nDCG@10")
    assert result.exit_code == 1, result.output  # the 5-point drop, found
    assert "content hash" not in result.output


def test_several_metrics_say_their_p_is_holm_adjusted(work: Path) -> None:
    summary = work / "summary.md"
    result = _invoke("gate", str(work / "golden"), "--baseline", str(work / "main.trec"), "--candidate",
                     str(work / "pr.trec"), "--metric", "nDCG@10", "--metric", "P@10", "--summary", str(summary))
    assert "p (1-sided, Holm-adjusted)" in result.stdout
    assert "| p (one-sided, Holm-adjusted) |" in summary.read_text(encoding="utf-8")
    one = _invoke("gate", str(work / "golden"), "--baseline", str(work / "main.trec"), "--candidate",
                  str(work / "pr.trec"), "--metric", "nDCG@10")
    assert "Holm" not in one.stdout


def test_the_markdown_summary_prints_each_line_once() -> None:
    from calibration.gate import gate_metric
    from labeler.commands.reports.gate import markdown
    from labeler.diagnosis.gate import Gate, _with

    result = _with(gate_metric([1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0], "faithfulness"),
                   beside="beside faithfulness: abstention 0.250 (baseline) and 0.500 (candidate)")
    text = markdown(Gate("p.db@v1", None, "A", "B", (result,), 1, None, None))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert sum("beside faithfulness" in line for line in lines) == 1, text

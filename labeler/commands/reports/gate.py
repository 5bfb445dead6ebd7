"""The reports of ``goldpool gate`` (:class:`labeler.diagnosis.gate.Gate`): the lines it prints,
the Markdown of a CI job summary and JUnit XML; and both of a gate that could not compare
(exit 2), so a CI step never shows a previous run's report.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING

from calibration.formatting import JOB_SUMMARY_SPECIAL, fixed, markdown_escape

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

    from calibration.gate import GateResult
    from labeler.diagnosis.gate import Gate

#: Text from the data (names, reasons) inside the job summary: HTML escaped, Markdown's
#: punctuation taken literally, on one line.
_md = partial(markdown_escape, special=JOB_SUMMARY_SPECIAL, entities=True, one_line=True)


def _num(x: float, digits: int = 4) -> str:
    return fixed(x, digits, missing="n/a")


def _interval(r: GateResult) -> str:
    if math.isnan(r.low) or math.isnan(r.high):
        return "n/a"
    return f"[{_num(r.low)}, {_num(r.high)}]"


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 0.0001 else "<0.0001"


def _tolerance(r: GateResult) -> str:
    return f"{_num(r.tolerance)} (the MDD)" if r.tolerance_is_mdd else _num(r.tolerance)


def _p_header(gate: Gate, head: str) -> str:
    """The p column's header: with several metrics it holds Holm-adjusted p-values, and says so."""
    return f"{head}, Holm-adjusted)" if len(gate.results) > 1 else f"{head})"


def _xml(suites: ET.Element) -> str:
    import xml.etree.ElementTree as ET  # lazy: start-up

    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def bad_input_markdown(message: str, golden: str, baseline: str, candidate: str) -> str:
    """The job summary of a gate that could not compare (exit 2): what is wrong, and that
    nothing was compared."""
    return "\n".join([
        "## goldpool gate: BAD INPUT", "",
        f"Candidate **{_md(candidate)}** against baseline **{_md(baseline)}** on the golden set {_md(golden)}: "
        "nothing was compared.", "", f"- {_md(message)}", ""])


def bad_input_junit(message: str, golden: str, baseline: str, candidate: str) -> str:
    """JUnit XML of a gate that could not compare: one testcase with an ``error``."""
    import xml.etree.ElementTree as ET  # lazy: start-up

    suites = ET.Element("testsuites", name="goldpool gate", tests="1", failures="0", errors="1")
    suite = ET.SubElement(suites, "testsuite", name=f"goldpool gate: {candidate} against {baseline}",
                          tests="1", failures="0", errors="1", skipped="0")
    props = ET.SubElement(suite, "properties")
    for name, value in (("golden", golden), ("baseline", baseline), ("candidate", candidate)):
        ET.SubElement(props, "property", name=name, value=value)
    case = ET.SubElement(suite, "testcase", classname="goldpool.gate", name="input")
    error = ET.SubElement(case, "error", message=message, type="BadInput")
    error.text = message
    return _xml(suites)


def text_report(gate: Gate) -> list[str]:
    """The lines ``goldpool gate`` prints."""
    w = max(16, *(len(r.metric) + 2 for r in gate.results))
    lines = [f"golden: {gate.golden}" + (f" (content hash {gate.content_hash[:12]})" if gate.content_hash else ""),
             f"baseline: {gate.baseline}   candidate: {gate.candidate}",
             f"{'metric':<{w}}{'verdict':<9}{'baseline':>10}{'candidate':>11}{'drop':>9}  {'95% interval':<20}"
             f"{_p_header(gate, 'p (1-sided'):>12}{'MDD':>9}{'tolerance':>11}{'n':>6}"]
    for r in gate.results:
        lines.append(f"{r.metric:<{w}}{r.status.upper():<9}{_num(r.mean_baseline):>10}{_num(r.mean_candidate):>11}"
                     f"{_num(r.drop):>9}  {_interval(r):<20}{_p(r.p_adjusted):>12}{_num(r.mdd):>9}{_num(r.tolerance):>11}"
                     f"{r.n:>6}")
    for r in gate.results:
        lines.append(r.reason)
        lines.extend(f"  {line}" for line in _details(r))
    lines.append(_method(gate))
    if gate.judge_card:
        lines.append(gate.judge_card)
    lines.append(f"gate: {'FAIL' if gate.failed else 'PASS'}")
    return lines


def _details(r: GateResult) -> list[str]:
    out = []
    if r.source:
        out.append(f"values from {r.source}")
    if r.beside:
        out.append(r.beside)
    if any(r.missing.values()):
        out.append("questions a side does not answer score 0 there (as trec_eval -c): "
                   + ", ".join(f"{role} lacks {n}" for role, n in r.missing.items()))
    for reason, n in r.left_out.items():
        out.append(f"left out: {n} {reason}")
    return out


def _method(gate: Gate) -> str:
    r = gate.results[0]
    several = len(gate.results) > 1
    return (f"test: one-sided paired randomisation test at alpha {r.alpha:g}"
            + (f", Holm-corrected over {len(gate.results)} metrics" if several else "")
            + f"; MDD at {r.power:.0%} power from the SD of the per-question differences; "
            "fails when the drop is significant and at least the tolerance")


def markdown(gate: Gate) -> str:
    """The report as GitHub-flavoured Markdown, fit for a CI job summary."""
    verdict = "FAIL" if gate.failed else "PASS"
    golden = _md(gate.golden) + (f" (content hash {_md(gate.content_hash[:12])})" if gate.content_hash else "")
    lines = [f"## goldpool gate: {verdict}", "",
             f"Candidate **{_md(gate.candidate)}** against baseline **{_md(gate.baseline)}** on the golden set "
             f"{golden}.", "",
             f"| metric | verdict | baseline | candidate | drop | 95% interval of the drop | {_p_header(gate, 'p (one-sided')} | "
             "this set resolves (MDD) | tolerance | questions |",
             "|---|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in gate.results:
        status = "**fail**" if r.failed else ("pass, with a warning" if r.warning else "pass")
        lines.append(f"| {_md(r.metric)} | {status} | {_num(r.mean_baseline)} | {_num(r.mean_candidate)} | "
                     f"{_num(r.drop)} | {_interval(r)} | {_p(r.p_adjusted)} | {_num(r.mdd)} | {_tolerance(r)} | {r.n} |")
    lines.append("")
    for r in gate.results:
        lines.append(f"- **Warning** {_md(r.reason)}" if r.warning else f"- {_md(r.reason)}")
        lines.extend(f"  - {_md(d)}" for d in _details(r))
    lines += ["", _md(_method(gate)) + ".", ""]
    if gate.judge_card:
        lines += [_md(gate.judge_card), ""]
    return "\n".join(lines)


def junit(gate: Gate) -> str:
    """The report as JUnit XML: one testcase per metric, a ``failure`` on each metric that failed."""
    import xml.etree.ElementTree as ET  # lazy: start-up

    failures = sum(r.failed for r in gate.results)
    suites = ET.Element("testsuites", name="goldpool gate", tests=str(len(gate.results)), failures=str(failures),
                        errors="0")
    suite = ET.SubElement(suites, "testsuite", name=f"goldpool gate: {gate.candidate} against {gate.baseline}",
                          tests=str(len(gate.results)), failures=str(failures), errors="0", skipped="0")
    props = ET.SubElement(suite, "properties")
    for name, value in (("golden", gate.golden), ("content_hash", gate.content_hash or ""),
                        ("baseline", gate.baseline), ("candidate", gate.candidate), ("judge", gate.judge or "")):
        ET.SubElement(props, "property", name=name, value=value)
    for r in gate.results:
        case = ET.SubElement(suite, "testcase", classname="goldpool.gate", name=r.metric)
        details = "\n".join([
            f"baseline {_num(r.mean_baseline)}, candidate {_num(r.mean_candidate)}, drop {_num(r.drop)} {_interval(r)}",
            f"one-sided p {_p(r.p_adjusted)} (alpha {r.alpha:g}), MDD {_num(r.mdd)}, tolerance {_tolerance(r)}, "
            f"{r.n} questions", *_details(r)])
        if r.failed:
            failure = ET.SubElement(case, "failure", message=r.reason, type="MetricDropped")
            failure.text = details
        out = ET.SubElement(case, "system-out")
        out.text = (f"warning: {r.warning}\n" if r.warning else "") + details
    return _xml(suites)

"""``goldpool gate``: per-question values of a baseline and a candidate, the verdict of
:mod:`calibration.gate` on each metric, and the reports a CI job shows (Markdown, JUnit XML).

A side is a TREC run file or a system whose answers were imported. Retrieval metrics (any
ir-measures name) score a run file, or a system's ``retrieved_ids`` in order, against the
golden set; every golden query with a relevant document is a question, and a question a side
does not answer scores 0 there (``trec_eval -c``). Generation metrics (``correctness``,
``answer-relevance``, ``faithfulness``) take each answer's value from
:func:`labeler.generation.outcomes.outcomes`: people's verdicts, and where people gave none the
judge's when one is named; a question's value is the mean over its answers. A question one
system never answered scores 0 for it; an answer without a verdict (or, for faithfulness, with
claims not all judged) is left out of the pair and counted, since unjudged is not wrong. The
nugget scores (``all``, ``vital``, ``strict_all``, ``strict_vital``) are generation metrics too,
on the nuggets GOLDEN's version froze (the current ones for DB alone).
"""

from __future__ import annotations

import html
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibration import CalibrationError
from calibration.gate import GateResult, correct, gate_metric, paired_values
from labeler.generation.nuggets import METRICS as NUGGET_SCORES
from labeler.generation.nuggets import gate_values
from labeler.store.vocabulary import Caller

#: Generation metrics: name -> the :class:`labeler.generation.outcomes.Outcome` value it is a mean of.
GENERATION = {"correctness": "correct", "answer-relevance": "addresses", "faithfulness": "faithfulness"}
#: The task whose verdicts a generation metric rests on, where its name differs.
_TASK = {"faithfulness": "claims", **dict.fromkeys(NUGGET_SCORES, "nuggets")}


@dataclass(frozen=True, slots=True)
class Gate:
    """A gate's inputs and each metric's verdict.

    Attributes:
        golden: the golden set's label (``DB@VERSION``, a qrels file or an export folder).
        content_hash: the frozen version's content hash, when known.
        baseline, candidate: the two sides as given.
        results: one per metric, in the order given.
        relevance_level: the grade from which a document counts as relevant.
        judge: the judge whose verdicts fill in for people's (generation metrics), if any.
    """

    golden: str
    content_hash: str | None
    baseline: str
    candidate: str
    results: tuple[GateResult, ...]
    relevance_level: int
    judge: str | None = None
    judge_card: str | None = None  # the judge's calibration card line, when a judge's verdicts are used

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.results)

    @property
    def warnings(self) -> list[str]:
        return [f"{r.metric}: {r.warning}" for r in self.results if r.warning]

    def as_dict(self) -> dict[str, Any]:
        return {"golden": self.golden, "content_hash": self.content_hash, "baseline": self.baseline,
                "candidate": self.candidate, "relevance_level": self.relevance_level, "judge": self.judge,
                "judge_card": self.judge_card, "status": "fail" if self.failed else "pass", "results": [r.as_dict() for r in self.results]}


# --- the two sides ---------------------------------------------------------------------------

def _project_path(golden: str) -> str | None:
    """The project database GOLDEN names (``DB@VERSION`` or ``DB``), or None for a qrels file or folder."""
    from labeler.project import parse_golden

    base, version = parse_golden(golden)
    if version is not None:
        return base
    if Path(golden).is_file() and _is_sqlite(Path(golden)):
        return golden
    return None


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _is_run_file(side: str) -> bool:
    return Path(side).is_file()


def _system_rankings(db: Any, system: str) -> tuple[dict[str, list[str]], dict[str, int]]:
    """query_id -> the system's retrieved_ids, best first; and what was left out, by reason."""
    from labeler.store import StoreError
    from labeler.store.answers import list_answers, require_system

    require_system(db, system)
    ranked: dict[str, list[str]] = {}
    left: dict[str, int] = defaultdict(int)
    answers = list_answers(db, system)
    if not any(a.retrieved_ids for a in answers):
        raise StoreError(f"system {system!r}: no answer has retrieved_ids, so it has no ranking to score; "
                         "import its answers with retrieved_ids (the doc_ids it retrieved, best first)")
    for a in answers:
        if a.query_id is None:
            left[f"answers of {system} without a query_id"] += 1
            continue
        if not a.retrieved_ids:
            continue  # retrieved nothing: the question scores 0
        seen = ranked.setdefault(a.query_id, list(a.retrieved_ids))
        if seen != list(a.retrieved_ids):
            raise StoreError(f"system {system!r}: answers to query {a.query_id!r} retrieved different documents "
                             f"(answer {a.answer_id!r} among them); a retrieval metric needs one ranking per query")
    return ranked, dict(left)


def _retrieval_values(golden: Any, sides: dict[str, str], metrics: Sequence[str], relevance_level: int,
                      db: Any) -> tuple[dict[str, dict[str, dict[str, float]]], list[str], dict[str, int]]:
    """metric -> side -> question -> value; the questions (golden queries with a relevant
    document); what was left out of the rankings."""
    from calibration.metrics import check_scoring, evaluate_many, parse_metrics
    from pooling.ranked_runs import read_ranked_run

    rankings: dict[str, dict[str, list[str]]] = {}
    left: dict[str, int] = {}
    for role, side in sides.items():
        if _is_run_file(side):
            rankings[role] = read_ranked_run(side)
        else:
            if db is None:
                raise CalibrationError(f"{side}: no such run file (a system's name needs GOLDEN to be DB@VERSION)")
            rankings[role], reasons = _system_rankings(db, side)
            left.update(reasons)
    named = {sides[role] if _is_run_file(sides[role]) else f"{role} {sides[role]!r}": r for role, r in rankings.items()}
    check_scoring(golden.qrels, named, parse_metrics(metrics, relevance_level), relevance_level, label=golden.label)
    scores = evaluate_many(golden.qrels, rankings, metrics, relevance_level=relevance_level)
    questions = sorted(q for q, docs in golden.qrels.items() if any(g >= relevance_level for g in docs.values()))
    if not questions:
        raise CalibrationError(f"{golden.label}: no query has a document graded {relevance_level} or more; "
                               "nothing to gate on")
    for role in sides:
        unknown = len(scores[role].unknown)
        if unknown:
            left[f"{role} queries not in the golden set"] = unknown
    values = {m: {role: {q: v[m] for q, v in scores[role].per_query.items() if m in v} for role in sides}
              for m in metrics}
    return values, questions, left


def _generation_values(db: Any, sides: dict[str, str], metric: str, judge: str | None, *,
                       caller: Caller) -> tuple[dict[str, dict[str, float]], list[str], dict[str, int], str]:
    """side -> question -> value for one generation metric; the questions; what was left out;
    where the values came from."""
    from labeler.generation.outcomes import outcomes
    from labeler.store import StoreError
    from labeler.store.verdicts import judges

    attribute = GENERATION[metric]
    if judge is not None and judge not in judges(db, caller=caller):
        raise StoreError(f"no judge {judge!r} in the project; known: {', '.join(judges(db, caller=caller)) or 'none'}")
    values: dict[str, dict[str, float]] = {}
    answered: dict[str, set[str]] = {}
    left: dict[str, int] = defaultdict(int)
    counts = {"people": 0, "judge": 0}
    for role, system in sides.items():
        people = outcomes(db, system, caller=caller)
        by_judge = {o.answer_id: o for o in outcomes(db, system, judge=judge, caller=caller)} if judge else {}
        per_question: dict[str, list[float]] = defaultdict(list)
        answered[role] = set()
        for o in people:
            answered[role].add(o.unit)
            value = getattr(o, attribute)
            source = "people"
            if value is None and o.answer_id in by_judge:
                value, source = getattr(by_judge[o.answer_id], attribute), "judge"
            if value is None:
                left[f"{system} answers without a {metric} value"] += 1
                continue
            counts[source] += 1
            per_question[o.unit].append(float(value))
        values[role] = {q: sum(v) / len(v) for q, v in per_question.items()}
    questions = sorted(answered["baseline"] | answered["candidate"])
    # A question a system answered, but whose answers have no value, is unjudged there, not 0:
    # it leaves the pair. A question a system never answered scores 0 for it.
    unjudged = {q for role in sides for q in answered[role] if q not in values[role]}
    if unjudged:
        left["questions left out: an answer without a value"] = len(unjudged)
    questions = [q for q in questions if q not in unjudged]
    def answers(n: int) -> str:
        return f"{n} answer" + ("" if n == 1 else "s")

    source = f"people's verdicts ({answers(counts['people'])})"
    if judge:
        source += f", judge {judge} where people gave none ({answers(counts['judge'])})"
    return values, questions, dict(left), source


def _beside(db: Any, sides: dict[str, str], judge: str | None, *, caller: Caller) -> str:
    """The abstention, correctness and answer relevance rates of both sides, one line: an "I
    don't know" is perfectly faithful, so faithfulness is never reported without them."""
    from labeler.generation.outcomes import outcomes

    def rate(values: list[bool | None]) -> str:
        known = [v for v in values if v is not None]
        return f"{sum(known) / len(known):.3f}" if known else "n/a"

    rates: dict[str, dict[str, str]] = {}
    for role, system in sides.items():
        people = outcomes(db, system, caller=caller)
        by_judge = {o.answer_id: o for o in outcomes(db, system, judge=judge, caller=caller)} if judge else {}

        def value(o: Any, attribute: str) -> bool | None:
            own = getattr(o, attribute)
            return getattr(by_judge[o.answer_id], attribute) if own is None and o.answer_id in by_judge else own

        rates[role] = {"abstention": rate([o.abstained for o in people]),
                       "correctness": rate([value(o, "correct") for o in people]),
                       "answer relevance": rate([value(o, "addresses") for o in people])}
    return "beside faithfulness, baseline → candidate: " + ", ".join(
        f"{name} {rates['baseline'][name]} → {rates['candidate'][name]}" for name in rates["baseline"])


# --- the gate --------------------------------------------------------------------------------

def run_gate(
    golden: str,
    baseline: str,
    candidate: str,
    metrics: Sequence[str],
    *,
    alpha: float = 0.05,
    tolerance: float | None = None,
    relevance_level: int = 1,
    judge: str | None = None,
    seed: int | None = 0,
    caller: Caller,
) -> Gate:
    """Each metric's verdict on ``candidate`` against ``baseline`` (several metrics: Holm-corrected).

    Raises:
        CalibrationError, StoreError, PoolingError: bad input (the message names file, line
            and field where there is one).
    """
    from calibration.metrics import parse_metrics
    from labeler.retrieval.golden_set import load_golden
    from labeler.store import connect

    wanted = list(dict.fromkeys(m.strip() for m in metrics if m.strip()))
    if not wanted:
        raise CalibrationError("no metric given (--metric nDCG@10, or correctness)")
    generation = [m for m in wanted if m in GENERATION or m in NUGGET_SCORES]
    retrieval = [m for m in wanted if m not in generation]
    names = list(parse_metrics(retrieval, relevance_level)) if retrieval else []
    if len(names) != len(retrieval):
        raise CalibrationError(f"--metric {', '.join(retrieval)} stands for {len(names)} measures ({', '.join(names)}): "
                               "give one measure per --metric")
    if judge is not None and not generation:
        raise CalibrationError("--judge is for generation metrics (correctness, answer-relevance, faithfulness)")
    sides = {"baseline": baseline, "candidate": candidate}
    project = _project_path(golden)
    if generation:
        if project is None:
            raise CalibrationError(f"{golden}: generation metrics ({', '.join(generation)}) read the answers in the "
                                   "project: give DB or DB@VERSION as GOLDEN")
        files = [s for s in sides.values() if _is_run_file(s)]
        if files:
            raise CalibrationError(f"{files[0]}: a run file has no answers; generation metrics need imported systems")
    if names and project is not None and project == golden:
        raise CalibrationError(f"{golden}: a project has no golden set of its own; name a frozen version "
                               f"({golden}@VERSION) for {', '.join(names)}")
    db = connect(project) if project is not None else None
    card = None
    try:
        raw: list[GateResult] = []
        label, content_hash = golden, None
        if names:
            gold = load_golden(golden, caller=caller)
            label, content_hash = gold.label, gold.content_hash
            values, questions, left = _retrieval_values(gold, sides, names, relevance_level, db)
            for m in names:
                a, b, missing = paired_values(values[m]["baseline"], values[m]["candidate"], questions)
                raw.append(_with(gate_metric(a, b, m, alpha=alpha, tolerance=tolerance, seed=seed),
                                 missing=missing, left_out=left))
        for m in generation:
            if m in NUGGET_SCORES:
                by_side, questions, left, source = gate_values(db, golden, sides, m, judge, caller=caller)
            else:
                by_side, questions, left, source = _generation_values(db, sides, m, judge, caller=caller)
            a, b, missing = paired_values(by_side["baseline"], by_side["candidate"], questions)
            beside = _beside(db, sides, judge, caller=caller) if m == "faithfulness" else ""
            raw.append(_with(gate_metric(a, b, m, alpha=alpha, tolerance=tolerance, seed=seed),
                             missing=missing, left_out=left, source=source, beside=beside))
        if judge is not None and db is not None:
            from labeler.judges.card import card_line

            card = "; ".join(dict.fromkeys(card_line(db, judge, _TASK.get(m, m)) for m in generation))
    finally:
        if db is not None:
            db.close()
    order = {m: i for i, m in enumerate(names + generation)}
    results = correct(sorted(raw, key=lambda r: order[r.metric]))
    return Gate(label, content_hash, baseline, candidate, tuple(results), relevance_level, judge, card)


def _with(result: GateResult, **changes: Any) -> GateResult:
    from dataclasses import replace

    return replace(result, **changes)


# --- reports ---------------------------------------------------------------------------------

def _num(x: float, digits: int = 4) -> str:
    from calibration.formatting import fixed

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


def bad_input_markdown(message: str, golden: str, baseline: str, candidate: str) -> str:
    """The job summary of a gate that could not compare (exit 2): what is wrong, and that
    nothing was compared, so a CI step never shows the previous run's report."""
    return "\n".join([
        "## goldpool gate: BAD INPUT", "",
        f"Candidate **{_md(candidate)}** against baseline **{_md(baseline)}** on the golden set {_md(golden)}: "
        "nothing was compared.", "", f"- {_md(message)}", ""])


def bad_input_junit(message: str, golden: str, baseline: str, candidate: str) -> str:
    """JUnit XML of a gate that could not compare: one testcase with an ``error``."""
    import xml.etree.ElementTree as ET

    suites = ET.Element("testsuites", name="goldpool gate", tests="1", failures="0", errors="1")
    suite = ET.SubElement(suites, "testsuite", name=f"goldpool gate: {candidate} against {baseline}",
                          tests="1", failures="0", errors="1", skipped="0")
    props = ET.SubElement(suite, "properties")
    for name, value in (("golden", golden), ("baseline", baseline), ("candidate", candidate)):
        ET.SubElement(props, "property", name=name, value=value)
    case = ET.SubElement(suite, "testcase", classname="goldpool.gate", name="input")
    error = ET.SubElement(case, "error", message=message, type="BadInput")
    error.text = message
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


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


def _md(text: str) -> str:
    """``text`` safe inside Markdown: HTML escaped, Markdown's punctuation taken literally."""
    escaped = html.escape(str(text), quote=False)
    return "".join("\\" + ch if ch in "\\`*_[]|#!~" else ch for ch in escaped).replace("\n", " ")


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
    import xml.etree.ElementTree as ET

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
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"

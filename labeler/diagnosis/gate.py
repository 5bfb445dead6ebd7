"""``goldpool gate``: per-question values of a baseline and a candidate, and the verdict of
:mod:`calibration.gate` on each metric (the reports a CI job shows: :mod:`labeler.commands.reports.gate`).

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

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from calibration import CalibrationError
from calibration.gate import GateResult, correct, gate_metric, paired_values
from calibration.metrics import check_scoring, evaluate_many, parse_metrics
from labeler.generation.nuggets import gate_values
from labeler.generation.outcomes import Outcome, outcomes
from labeler.generation.registry import BESIDE_FAITHFULNESS, BY_NAME, GATE_METRICS, LABELS
from labeler.judges.card import card_line
from labeler.project import parse_golden
from labeler.retrieval.golden_set import load_golden
from labeler.store import StoreError, connect
from labeler.store.answers import list_answers, require_system
from labeler.store.verdicts import judges
from labeler.store.vocabulary import Caller
from pooling.ranked_runs import read_ranked_run


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


def _answers(n: int) -> str:
    return f"{n} answer" + ("" if n == 1 else "s")


def _filled(people: Sequence[Outcome], by_judge: dict[str, Outcome], attribute: str) -> list[tuple[Outcome, Any, str]]:
    """Each answer with its value of ``attribute``: people's, else the judge's; and whose it is."""
    out = []
    for o in people:
        value = getattr(o, attribute)
        if value is None and o.answer_id in by_judge:
            out.append((o, getattr(by_judge[o.answer_id], attribute), "judge"))
        else:
            out.append((o, value, "people"))
    return out


def _sources(db: Any, system: str, judge: str | None, caller: Caller) -> tuple[list[Outcome], dict[str, Outcome]]:
    """The system's outcomes by people, and by ``judge`` (answer_id -> outcome; empty without one)."""
    people = outcomes(db, system, caller=caller)
    return people, {o.answer_id: o for o in outcomes(db, system, judge=judge, caller=caller)} if judge else {}


def _generation_values(db: Any, sides: dict[str, str], metric: str, judge: str | None, *,
                       caller: Caller) -> tuple[dict[str, dict[str, float]], list[str], dict[str, int], str]:
    """side -> question -> value for one generation metric; the questions; what was left out;
    where the values came from."""
    attribute = GATE_METRICS[metric].value
    if judge is not None and judge not in judges(db, caller=caller):
        raise StoreError(f"no judge {judge!r} in the project; known: {', '.join(judges(db, caller=caller)) or 'none'}")
    values: dict[str, dict[str, float]] = {}
    answered: dict[str, set[str]] = {}
    left: dict[str, int] = defaultdict(int)
    counts = {"people": 0, "judge": 0}
    for role, system in sides.items():
        per_question: dict[str, list[float]] = defaultdict(list)
        answered[role] = set()
        for o, value, source in _filled(*_sources(db, system, judge, caller), attribute):  # type: ignore[arg-type]
            answered[role].add(o.unit)
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
    source = f"people's verdicts ({_answers(counts['people'])})"
    if judge:
        source += f", judge {judge} where people gave none ({_answers(counts['judge'])})"
    return values, questions, dict(left), source


def _beside(db: Any, sides: dict[str, str], judge: str | None, *, caller: Caller) -> str:
    """The abstention, correctness and answer relevance rates of both sides, one line: an "I
    don't know" is perfectly faithful, so faithfulness is never reported without them."""
    def rate(values: list[Any]) -> str:
        known = [v for v in values if v is not None]
        return f"{sum(known) / len(known):.3f}" if known else "n/a"

    rates: dict[str, dict[str, str]] = {}
    for role, system in sides.items():
        people, by_judge = _sources(db, system, judge, caller)
        rates[role] = {LABELS[name]: rate([v for _, v, _ in _filled(people, by_judge, BY_NAME[name].value)])  # type: ignore[arg-type]
                       for name in BESIDE_FAITHFULNESS}
    return "beside faithfulness, baseline → candidate: " + ", ".join(
        f"{name} {rates['baseline'][name]} → {rates['candidate'][name]}" for name in rates["baseline"])


# --- the gate --------------------------------------------------------------------------------

def _split_metrics(golden: str, sides: dict[str, str], metrics: Sequence[str], relevance_level: int,
                   judge: str | None) -> tuple[list[str], list[str], str | None]:
    """The retrieval measures and the generation metrics asked for, and the project GOLDEN
    names (None for a qrels file or folder), checked against what each kind needs."""
    wanted = list(dict.fromkeys(m.strip() for m in metrics if m.strip()))
    if not wanted:
        raise CalibrationError("no metric given (--metric nDCG@10, or correctness)")
    generation = [m for m in wanted if m in GATE_METRICS]
    retrieval = [m for m in wanted if m not in GATE_METRICS]
    names = list(parse_metrics(retrieval, relevance_level)) if retrieval else []
    if len(names) != len(retrieval):
        raise CalibrationError(f"--metric {', '.join(retrieval)} stands for {len(names)} measures ({', '.join(names)}): "
                               "give one measure per --metric")
    if judge is not None and not generation:
        raise CalibrationError("--judge is for generation metrics (correctness, answer-relevance, faithfulness)")
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
    return names, generation, project


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
    sides = {"baseline": baseline, "candidate": candidate}
    names, generation, project = _split_metrics(golden, sides, metrics, relevance_level, judge)
    test = {"alpha": alpha, "tolerance": tolerance, "seed": seed}
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
                raw.append(_with(gate_metric(a, b, m, **test), missing=missing, left_out=left))
        for m in generation:
            if GATE_METRICS[m].nugget:
                by_side, questions, left, source = gate_values(db, golden, sides, m, judge, caller=caller)
            else:
                by_side, questions, left, source = _generation_values(db, sides, m, judge, caller=caller)
            a, b, missing = paired_values(by_side["baseline"], by_side["candidate"], questions)
            beside = _beside(db, sides, judge, caller=caller) if m == "faithfulness" else ""
            raw.append(_with(gate_metric(a, b, m, **test), missing=missing, left_out=left, source=source, beside=beside))
        if judge is not None and db is not None:
            card = "; ".join(dict.fromkeys(card_line(db, judge, GATE_METRICS[m].task) for m in generation))
    finally:
        if db is not None:
            db.close()
    order = {m: i for i, m in enumerate(names + generation)}
    results = correct(sorted(raw, key=lambda r: order[r.metric]))
    return Gate(label, content_hash, baseline, candidate, tuple(results), relevance_level, judge, card)


def _with(result: GateResult, **changes: Any) -> GateResult:
    return replace(result, **changes)

"""Nugget scores per answer and per system, from people, from a judge, and by PPI++.

Per answer (TREC 2024 RAG; Pradeep et al. 2024; castorini's ``nuggetizer``, whose
``calculate_nugget_scores`` is the test reference), with support s = 1, partial support 0.5,
no support 0 for each nugget of the answer's question:

- ``all`` = Σ s / number of nuggets; ``vital`` = the same over the vital nuggets;
- ``strict_all`` and ``strict_vital`` count full support only (partial support scores 0).

An answer to a question with no nugget has no score: it is left out and counted
(``no_nuggets``), as recall leaves out a query with no relevant chunk; nuggetizer scores it 0.
An answer to a question with nuggets but no vital one has no ``vital`` and ``strict_vital``
(``no_vital``; nuggetizer scores 0 there too). An empty answer supports nothing: it scores 0
without a label. An answer's value from a source needs that source's label on every nugget of
its question (``unjudged`` otherwise); people's label on a nugget is the majority of the
annotators who gave one, a tie leaving it without one (``split``).

Per system each score is the mean over answers (each answer weighs the same), with the
question-clustered intervals, PPI++ (people on the questions they labelled, the judge on all:
label a random sample of whole questions) and paired comparisons with their MDD of
:mod:`calibration.clustered`, and the answers' mean length in words beside each: the
:class:`~labeler.generation.metrics.Rate` and :class:`~labeler.generation.metrics.Pair` of
``answer-metrics``, in the same JSON shape. Empty answers join each mean by their share, known
without a label, as ``answer-metrics`` counts them.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import sqlite_utils

from calibration import CalibrationError
from calibration.clustered import paired_difference, ppi_paired_difference, unit_means
from calibration.rates import labelled_rate, ppi_rate
from labeler.generation.metrics import Pair, Rate
from labeler.generation.registry import NUGGET_METRICS
from labeler.project import parse_golden
from labeler.store import answers as answer_store
from labeler.store import nuggets as store
from labeler.store.access import require_admin
from labeler.store.errors import StoreError
from labeler.store.nugget_support import support_labels
from labeler.store.versions import get_version
from labeler.store.vocabulary import SUPPORT, SUPPORT_SCORE, Caller
from pooling.nugget_readers import read_nuggets

#: The four scores, in the order TREC reports them.
METRICS = NUGGET_METRICS
#: Why an answer has no value, in the order they are checked.
LEFT_OUT = ("no_nuggets", "no_vital", "split", "unjudged")


def nugget_scores(importances: Sequence[str], verdicts: Sequence[str]) -> dict[str, float | None]:
    """The four scores of one answer: ``importances[i]`` (vital, okay) and ``verdicts[i]``
    (SUPPORT, PARTIAL_SUPPORT, NOT_SUPPORT) of its question's nugget i.

    ``all = Σ s_i / n``, s = 1, 0.5, 0; ``vital`` over the vital nuggets; the strict ones with
    partial support 0. None where there is no nugget (no vital one, for the vital scores).

    >>> nugget_scores(["vital", "vital", "okay"], ["SUPPORT", "PARTIAL_SUPPORT", "NOT_SUPPORT"])
    {'all': 0.5, 'vital': 0.75, 'strict_all': 0.3333333333333333, 'strict_vital': 0.5}
    """
    if len(importances) != len(verdicts):
        raise ValueError(f"one verdict per nugget: {len(importances)} nuggets, {len(verdicts)} verdicts")
    vital = [v for i, v in zip(importances, verdicts) if i == "vital"]

    def score(metric: str) -> float | None:  # strict_*: partial support 0; *vital: the vital nuggets only
        over = vital if metric.endswith("vital") else verdicts
        values = [float(v == SUPPORT) if metric.startswith("strict_") else SUPPORT_SCORE[v] for v in over]
        return sum(values) / len(values) if values else None

    return {metric: score(metric) for metric in METRICS}


@dataclass(frozen=True, slots=True)
class AnswerScore:
    """One answer's four scores from one source; None with the reason in ``why``."""

    answer_id: str
    system: str
    unit: str  # the question (its query): the cluster of every interval
    words: int
    empty: bool
    nuggets: int  # of its question (0: none)
    vital_nuggets: int
    scores: Mapping[str, float | None]
    why: str | None = None  # no_nuggets, split, unjudged (no_vital: only the vital scores are None)


def _majority(verdicts: Sequence[str]) -> str | None:
    counts = Counter(verdicts).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def answer_scores(answer: answer_store.Answer, nuggets: Sequence[store.Nugget],
                  labels: Mapping[str, Sequence[str]]) -> AnswerScore:
    """``answer``'s scores from one source's ``labels`` (nugget_id -> its verdicts: several
    people's, or one judge's) on its question's ``nuggets``."""
    unit = answer.query_id if answer.query_id is not None else f"question:{answer.question}"
    words, empty = len(answer.response.split()), answer.response == ""
    vital = sum(n.importance == "vital" for n in nuggets)
    base = {"answer_id": answer.answer_id, "system": answer.system, "unit": unit, "words": words, "empty": empty,
            "nuggets": len(nuggets), "vital_nuggets": vital}
    if not nuggets:
        return AnswerScore(**base, scores=dict.fromkeys(METRICS), why="no_nuggets")
    if empty:
        return AnswerScore(**base, scores={m: (None if m.endswith("vital") and not vital else 0.0) for m in METRICS})
    verdicts = [_majority(labels.get(n.nugget_id, ())) for n in nuggets]
    if any(v is None for v in verdicts):
        split = any(labels.get(n.nugget_id) and v is None for n, v in zip(nuggets, verdicts))
        return AnswerScore(**base, scores=dict.fromkeys(METRICS), why="split" if split else "unjudged")
    return AnswerScore(**base, scores=nugget_scores([n.importance for n in nuggets], verdicts))  # type: ignore[arg-type]


# --- per system ------------------------------------------------------------------------------


def _left_out(found: Sequence[AnswerScore], metric: str) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for a in found:
        if a.scores[metric] is None:
            counts[a.why or ("no_vital" if a.nuggets and not a.vital_nuggets else "unjudged")] += 1
    return {k: counts[k] for k in LEFT_OUT if counts[k]}


def _asked(found: Sequence[AnswerScore], metric: str) -> list[AnswerScore]:
    """The answers ``metric`` is defined for whoever labels them: a nugget (a vital one) exists."""
    return [a for a in found if a.nuggets and (a.vital_nuggets or not metric.endswith("vital"))]


def _mean_words(found: Sequence[AnswerScore]) -> float | None:
    return sum(a.words for a in found) / len(found) if found else None


def _rate(found: Sequence[AnswerScore], metric: str, ci: float) -> Rate:
    """One source's mean of ``metric`` over the answers it is defined for; the empty answers
    (0, known without a label) join by their share (:func:`calibration.rates.labelled_rate`)."""
    asked = _asked(found, metric)
    extra: dict[str, Any] = {"left_out": _left_out(found, metric)}
    if not asked:
        return _missing("no answer with a label on every nugget", extra=extra)
    r = labelled_rate([a.scores[metric] for a in asked], [a.unit for a in asked], [a.empty for a in asked], ci=ci)
    e = r.estimate
    if math.isnan(e.value):
        return _missing("no answer with a label on every nugget", extra=extra)
    if r.n_known:
        extra |= {"n_empty": r.n_known, "n_answers": len(asked)}
    chosen = [a for a in asked if a.scores[metric] is not None]
    return Rate(e.value, _num(e.low), _num(e.high), e.n, _mean_words(chosen), e.n_groups or 0, e.method, extra=extra)


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _ppi(people: Sequence[AnswerScore], judged: Sequence[AnswerScore], metric: str, ci: float) -> Rate:
    """People's scores where they labelled every nugget of an answer, the judge's on all: the
    PPI++ mean, the empty answers joined by their share (:func:`calibration.rates.ppi_rate`)."""
    y = {a.answer_id: a.scores[metric] for a in people}
    chosen = [a for a in _asked(judged, metric) if a.scores[metric] is not None]
    if not any(not a.empty for a in chosen):
        return _missing("no answer the judge labelled on every nugget")
    try:
        r = ppi_rate([y.get(a.answer_id) for a in chosen], [a.scores[metric] for a in chosen],  # type: ignore[misc]
                     [a.unit for a in chosen], [a.empty for a in chosen], ci=ci)
    except CalibrationError as exc:
        return _missing(str(exc), len(chosen))
    e = r.estimate
    return Rate(e.value, e.low, e.high, e.n, _mean_words(chosen), e.n_groups or 0, e.method,
                extra={"n_labelled": r.n_labelled, "n_unlabelled": r.n_unlabelled, "n_empty": r.n_known,
                       "lambda": r.lam})


def _missing(why: str, n: int = 0, extra: Mapping[str, Any] | None = None) -> Rate:
    return Rate(None, None, None, n, None, why=why, extra=extra or {})


@dataclass(frozen=True, slots=True)
class SystemNuggets:
    """One system's four scores by source, and its answers' scores."""

    system: str
    answers: int
    words: float | None
    rates: Mapping[str, Mapping[str, Rate]]  # metric -> source -> rate
    people: Sequence[AnswerScore]
    judged: Sequence[AnswerScore] | None


@dataclass(frozen=True, slots=True)
class NuggetMetrics:
    """Every system's nugget scores and every paired comparison (the shape of ``answer-metrics``)."""

    systems: Sequence[SystemNuggets]
    pairs: Sequence[Pair]
    judge: str | None
    ci: float
    version: str | None
    nuggets: Mapping[str, Any] = field(default_factory=dict)  # queries, nuggets, vital, hash

    def as_dict(self) -> dict[str, Any]:
        """``{"systems": {NAME: {METRIC: {SOURCE: {value, low, high, n, words, ...}}}}, "pairs",
        "answers": {NAME: {n, words, no_nuggets}}, "judge", "ci", "metrics", "version", "nuggets"}``."""
        return {
            "systems": {s.system: {m: {src: r.as_dict() for src, r in s.rates[m].items()} for m in METRICS}
                        for s in self.systems},
            "pairs": [p.as_dict() for p in self.pairs],
            "answers": {s.system: {"n": s.answers, "words": s.words,
                                   "no_nuggets": sum(a.why == "no_nuggets" for a in s.people)} for s in self.systems},
            "judge": self.judge, "ci": self.ci, "metrics": list(METRICS), "version": self.version,
            "nuggets": dict(self.nuggets),
        }


def system_nuggets(system: str, people: Sequence[AnswerScore], judged: Sequence[AnswerScore] | None,
                   ci: float = 0.95) -> SystemNuggets:
    """One system's rates from its answers' scores by people and (optionally) by a judge."""
    rates: dict[str, dict[str, Rate]] = {}
    for metric in METRICS:
        mine = {"people": _rate(people, metric, ci)}
        if judged is None:
            mine["judge"] = mine["ppi"] = _missing("no judge given")
        else:
            mine["judge"] = _rate(judged, metric, ci)
            mine["ppi"] = _ppi(people, judged, metric, ci)
        rates[metric] = mine
    return SystemNuggets(system, len(people), _mean_words(people), rates, people, judged)


def unit_values(found: Sequence[AnswerScore], metric: str) -> dict[str, float]:
    """Per question, the mean of the answers' values of ``metric`` that are defined."""
    values = {a.answer_id: a.scores[metric] for a in found if a.scores[metric] is not None}
    return unit_means(values, {a.answer_id: a.unit for a in found})  # type: ignore[arg-type]


def compare(a: SystemNuggets, b: SystemNuggets, ci: float = 0.95) -> list[Pair]:
    """Systems ``a`` and ``b`` paired on the questions both have a value on, every score and source."""
    out = []
    for metric in METRICS:
        found = {"people": paired_difference(unit_values(a.people, metric), unit_values(b.people, metric), ci=ci)}
        if a.judged is not None and b.judged is not None:
            found["judge"] = paired_difference(unit_values(a.judged, metric), unit_values(b.judged, metric), ci=ci)
            found["ppi"] = ppi_paired_difference(_differences(a.people, b.people, metric),
                                                 _differences(a.judged, b.judged, metric), ci=ci)
        for source, d in found.items():
            out.append(Pair(a.system, b.system, metric, source, None, None, None, None, 0,
                            why="fewer than 2 questions with a value for both systems") if d is None else
                       Pair(a.system, b.system, metric, source, d.difference, d.low, d.high, d.mdd, d.n))
    return out


def _differences(x: Sequence[AnswerScore], y: Sequence[AnswerScore], metric: str) -> dict[str, float]:
    left, right = unit_values(x, metric), unit_values(y, metric)
    return {u: left[u] - right[u] for u in left if u in right}


# --- from the project ------------------------------------------------------------------------


def _labels(db: sqlite_utils.Database, judge: str | None, caller: Caller) -> dict[str, dict[str, list[str]]]:
    """answer_id -> nugget_id -> the source's current verdicts."""
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for label in support_labels(db, judge=judge, caller=caller):
        found[label.answer_id][label.nugget_id].append(label.verdict)
    return found


def _nuggets(db: sqlite_utils.Database, version: str | None, caller: Caller) -> list[store.Nugget]:
    if version is None:
        return store.list_nuggets(db)
    get_version(db, version, caller=caller)
    frozen = store.version_nuggets(db, version)
    if not frozen:
        raise StoreError(f"golden version {version!r} froze no nuggets (freeze a version after importing nuggets "
                         "with `goldpool import-nuggets`)")
    return frozen


def scores_of(db: sqlite_utils.Database, systems: Sequence[str], *, version: str | None = None,
              judge: str | None = None, caller: Caller
              ) -> tuple[list[store.Nugget], dict[str, tuple[list[AnswerScore], list[AnswerScore] | None]]]:
    """The nuggets scored against, and per system its answers' scores by people and by ``judge``.

    Raises:
        StoreError: an unknown version, a version without nuggets, no nugget at all, a judge
            with no support verdict.
    """
    nuggets = _nuggets(db, version, caller)
    if not nuggets:
        raise StoreError("no nuggets in the project: import them with `goldpool import-nuggets` or propose them "
                         "with `goldpool nuggetize`")
    by_query: dict[str, list[store.Nugget]] = defaultdict(list)
    for n in nuggets:
        by_query[n.query_id].append(n)
    people_labels = _labels(db, None, caller)
    judge_labels = None if judge is None else _labels(db, judge, caller)
    if judge_labels is not None and not judge_labels:
        raise StoreError(f"judge {judge!r} gave no support verdict (run-judge --task nuggets, or import-verdicts --judge)")

    def score(a: answer_store.Answer, labels: Mapping[str, Mapping[str, Sequence[str]]]) -> AnswerScore:
        return answer_scores(a, by_query.get(a.query_id or "", []), labels.get(a.answer_id, {}))

    out = {}
    for name in systems:
        answers = answer_store.list_answers(db, name)
        out[name] = ([score(a, people_labels) for a in answers],
                     None if judge_labels is None else [score(a, judge_labels) for a in answers])
    return nuggets, out


def nugget_metrics(db: sqlite_utils.Database, systems: Sequence[str] = (), *, version: str | None = None,
                   judge: str | None = None, ci: float = 0.95, caller: Caller) -> NuggetMetrics:
    """The nugget scores of ``systems`` (every imported one when empty), on the current nuggets
    or those ``version`` froze, from people, ``judge`` and PPI++ (admin only).

    Raises:
        StoreError: no answers, an unknown system or version, a version without nuggets, no
            nugget at all, a judge with no support verdict; the caller is not an admin.
    """
    require_admin(db, caller)
    names = list(dict.fromkeys(systems)) or answer_store.systems(db)
    if not names:
        raise StoreError("no answers in the project: import a system's answers with `goldpool import-answers`")
    for name in names:
        answer_store.require_system(db, name)
    nuggets, scored = scores_of(db, names, version=version, judge=judge, caller=caller)
    out = [system_nuggets(name, people, judged, ci) for name, (people, judged) in scored.items()]
    pairs = [p for a, b in combinations(out, 2) for p in compare(a, b, ci)
             if len({x.unit for x in a.people} & {x.unit for x in b.people}) >= 2]
    summary = {"queries": len({n.query_id for n in nuggets}), "nuggets": len(nuggets), "vital": sum(n.importance == "vital" for n in nuggets),
               "hash": store.nuggets_hash(nuggets)}
    return NuggetMetrics(out, pairs, judge, ci, version, summary)


def gate_values(db: sqlite_utils.Database, golden: str, sides: dict[str, str], metric: str, judge: str | None, *,
                   caller: Caller) -> tuple[dict[str, dict[str, float]], list[str], dict[str, int], str]:
    """``goldpool gate``'s values of a nugget score (:func:`labeler.diagnosis.gate.run_gate`):
    side -> question -> the mean of its answers' values, on the nuggets GOLDEN (``DB@VERSION``)
    froze, the current ones for DB; people's labels, the judge's where people gave none. A question
    without nuggets (without a vital one, for the vital scores) is no question of the pair; one
    with an answer without a value leaves it. Returns the values, the questions, what was left
    out and where the values came from."""
    _, scored = scores_of(db, list(sides.values()), version=parse_golden(golden)[1], judge=judge, caller=caller)
    values: dict[str, dict[str, float]] = {}
    left: dict[str, int] = defaultdict(int)
    counts = {"people": 0, "judge": 0}
    unjudged: set[str] = set()
    answered: set[str] = set()
    for role, system in sides.items():
        people, judged = scored[system]
        by_judge = {a.answer_id: a for a in judged or []}
        per_question: dict[str, list[float]] = defaultdict(list)
        for a in people:
            value, source = a.scores[metric], "people"
            if value is None and a.answer_id in by_judge and by_judge[a.answer_id].scores[metric] is not None:
                value, source = by_judge[a.answer_id].scores[metric], "judge"
            if value is None and (not a.nuggets or (metric.endswith("vital") and not a.vital_nuggets)):
                left[f"{system} answers to questions without {'vital ' if metric.endswith('vital') else ''}nuggets"] += 1
                continue
            answered.add(a.unit)
            if value is None:
                left[f"{system} answers without a {metric} value"] += 1
                unjudged.add(a.unit)
                continue
            counts[source] += 1
            per_question[a.unit].append(value)
        values[role] = {q: sum(v) / len(v) for q, v in per_question.items()}
    if unjudged:
        left["questions left out: an answer without a value"] = len(unjudged)
    source = f"people's support labels ({counts['people']} answers)"
    if judge:
        source += f", judge {judge} where people gave none ({counts['judge']} answers)"
    return values, sorted(answered - unjudged), dict(left), source


def import_nuggets(db: sqlite_utils.Database, path: str | Path, *, caller: Caller) -> store.NuggetImport:
    """Add people's nuggets from a JSONL file (admin only), the whole file checked first.

    Raises:
        PoolingError: a malformed record, a bad id, text or importance, a nugget_id twice.
        StoreError: an unknown query or document, a nugget_id stored with other content.
    """
    require_admin(db, caller)
    return store.add_nuggets(db, path, list(read_nuggets(path)), caller=caller)

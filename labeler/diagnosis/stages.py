"""Which stage of a RAG system a number belongs to: retrieval, then generation given what was
retrieved, then the answer end to end, against one frozen golden version.

For a system whose answers were imported with ``retrieved_ids`` and linked to the version's
queries (one answer per question: the first by answer_id when a question has several):

- **retrieval**: recall@k, nDCG@k and P@k of the retrieved ids against the version, computed
  by ir-measures (:mod:`calibration.metrics`); a chunk counts as relevant from grade
  ``relevance_level`` (1 by default, as for every command; 2 counts only chunks that at least
  partly answer). A question whose version has
  no relevant chunk is left out of retrieval (undefined) and of the split below, and counted;
- **generation given retrieval**: correctness on the questions with a relevant chunk among the
  top k, and apart on those without one. "Correct given a relevant chunk" is what the
  generator does with the right context in hand;
- **faithfulness**: the mean per-answer faithfulness (answers whose every claim is judged);
- **end to end**: correctness over every question of the version the system answered;
- **nugget recall**, when the version froze nuggets: the answer's ``all`` nugget score (the
  share of its question's nuggets it supports, partial support 0.5;
  :mod:`labeler.generation.nuggets`), beside correctness: what a question needs said, without
  a reference answer.

Verdicts are people's (the majority of annotators); with ``judge``, an answer people have no
verdict on takes that judge's, and how many values came from each is reported.

Two systems are compared paired, question by question (:func:`calibration.compare.compare_runs`):
mean difference with a bootstrap interval over questions, a randomisation-test p and the
minimum detectable difference; "correct given a relevant chunk" is paired on the questions
where both systems retrieved one. :func:`attribution` turns the stages into one sentence
saying where the change is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlite_utils

from calibration import CalibrationError
from calibration.compare import bootstrap_interval, compare_runs
from calibration.metrics import evaluate_many
from calibration.formatting import fixed
from labeler.diagnosis.golden_answers import GoldenSpec, answer_values, by_question, relevant_in_top, version_qrels
from labeler.generation.nuggets import scores_of
from labeler.store import StoreError
from labeler.store.vocabulary import RELEVANCE_LEVEL, Caller

#: A chunk is relevant for these reports from this grade: the tool's one relevance level, so
#: recall@k here is the recall@k of ``eval`` on the same ranking.
STAGE_RELEVANCE = RELEVANCE_LEVEL


# --- one system --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Value:
    """A mean over questions with its 95% bootstrap interval (over questions) and n."""

    mean: float
    low: float
    high: float
    n: int

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


def _value(values: Sequence[float], *, seed: int = 0, n_boot: int = 2000) -> Value:
    if not values:
        return Value(math.nan, math.nan, math.nan, 0)
    low, high = bootstrap_interval(values, n_boot=n_boot, seed=seed) if n_boot else (math.nan, math.nan)
    return Value(sum(values) / len(values), low, high, len(values))


@dataclass(frozen=True, slots=True)
class QuestionStages:
    """One question of one system: its retrieval values and its answer's verdicts."""

    query_id: str
    answer_id: str
    relevant_in_top: bool | None  # None: the version has no relevant chunk for this question
    retrieval: dict[str, float]  # metric -> value (empty when undefined)
    correct: bool | None
    faithfulness: float | None
    nugget_recall: float | None = None  # the answer's ``all`` nugget score (the version froze nuggets)

    def as_dict(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "answer_id": self.answer_id, "relevant_in_top": self.relevant_in_top,
                "retrieval": self.retrieval, "correct": self.correct, "faithfulness": self.faithfulness,
                **({} if self.nugget_recall is None else {"nugget_recall": self.nugget_recall})}


#: The stages of the report, in order: key -> what it is called in text.
STAGE_NAMES = ("recall", "ndcg", "precision", "correct_given_relevant", "correct_without_relevant", "faithfulness",
               "correct")
#: The stage a version with nuggets adds, after the others.
NUGGET_STAGE = "nugget_recall"


def stage_labels(k: int) -> dict[str, str]:
    """Stage key -> its name in sentences and tables.

    >>> stage_labels(10)["recall"], stage_labels(5)["ndcg"], stage_labels(5)["correct_given_relevant"]
    ('recall@10', 'nDCG@5', 'correctness given a relevant chunk')
    """
    return {"recall": f"recall@{k}", "ndcg": f"nDCG@{k}", "precision": f"P@{k}",
            "correct_given_relevant": "correctness given a relevant chunk",
            "correct_without_relevant": "correctness without a relevant chunk",
            "faithfulness": "faithfulness", "correct": "end-to-end correctness",
            NUGGET_STAGE: "nugget recall (all nuggets, partial 0.5)"}


@dataclass(frozen=True, slots=True)
class SystemStages:
    """Every stage of one system against one version.

    Attributes:
        questions: the version's questions the system answered (with a query link).
        no_relevant: of those, questions whose version has no relevant chunk (no retrieval value).
        unlinked: answers not linked to a question of the version (left out).
        no_retrieved: answers that came without ``retrieved_ids`` (their retrieval scores 0, or,
            when no answer has any, the system has no retrieval stage).
        stages: stage key -> mean, interval, n.
        sources: where the generation verdicts came from: {"correct": {"people": n, JUDGE: n}, ...}.
        per_question: query_id -> :class:`QuestionStages`.
    """

    system: str
    questions: int
    no_relevant: int
    unlinked: int
    no_retrieved: int
    stages: dict[str, Value]
    sources: dict[str, dict[str, int]]
    abstained: int
    mean_words: float
    per_question: dict[str, QuestionStages] = field(repr=False)

    def per_stage(self, key: str) -> dict[str, float]:
        """query_id -> the question's value on stage ``key`` (only where it is defined)."""
        out: dict[str, float] = {}
        for q, s in self.per_question.items():
            if key in ("recall", "ndcg", "precision"):
                if key in s.retrieval:
                    out[q] = s.retrieval[key]
            elif key == "faithfulness":
                if s.faithfulness is not None:
                    out[q] = s.faithfulness
            elif key == NUGGET_STAGE:
                if s.nugget_recall is not None:
                    out[q] = s.nugget_recall
            elif s.correct is not None and (key == "correct" or (s.relevant_in_top is (key == "correct_given_relevant"))):
                out[q] = float(s.correct)
        return out

    def as_dict(self, k: int) -> dict[str, Any]:
        labels = stage_labels(k)
        return {"system": self.system, "questions": self.questions, "no_relevant": self.no_relevant,
                "unlinked": self.unlinked, "no_retrieved": self.no_retrieved, "abstained": self.abstained,
                "mean_words": self.mean_words, "sources": self.sources,
                "stages": {key: {"name": labels[key], **v.as_dict()} for key, v in self.stages.items()},
                "per_question": [s.as_dict() for s in self.per_question.values()]}


def _nugget_recall(db: sqlite_utils.Database, system: str, version: str | None, judge: str | None,
                   caller: Caller) -> dict[str, float] | None:
    """answer_id -> its ``all`` nugget score on the nuggets ``version`` froze (people's, the
    judge's where people gave none); None when the version froze no nuggets."""
    if version is None:
        return None
    try:
        _, scored = scores_of(db, [system], version=version, judge=judge, caller=caller)
    except StoreError:  # no nuggets frozen with the version (or the judge labelled no support)
        return None
    people, judged = scored[system]
    by_judge = {a.answer_id: a.scores["all"] for a in judged or []}
    values = {a.answer_id: a.scores["all"] if a.scores["all"] is not None else by_judge.get(a.answer_id) for a in people}
    return {a: v for a, v in values.items() if v is not None}


def system_stages(db: sqlite_utils.Database, qrels: Mapping[str, Mapping[str, int]], system: str, *, k: int = 10,
                  relevance_level: int = STAGE_RELEVANCE, judge: str | None = None, n_boot: int = 2000, seed: int = 0,
                  version: str | None = None, caller: Caller) -> SystemStages:
    """Every stage of ``system`` against ``qrels`` (a frozen version's; with ``version``, its
    name, which adds nugget recall when it froze nuggets).

    Raises:
        StoreError: no such system, or none of its answers is a question of the version.
    """
    if k < 1:
        raise StoreError(f"k {k}: give 1 or more")
    values = answer_values(db, system, judge=judge, caller=caller)
    answers = by_question(values, set(qrels))
    if not answers:
        raise StoreError(f"no answer of system {system!r} is a question of this golden version; import the answers "
                         "with their query_id (or the query's exact text)")
    names = {"recall": f"R@{k}", "ndcg": f"nDCG@{k}", "precision": f"P@{k}"}
    # A system imported without any retrieved_ids has no retrieval stage (not a retrieval of
    # nothing); one answer without them, among others with, retrieved nothing and scores 0.
    recorded = any(a.retrieved_ids for a in answers.values())
    ranked = {q: list(a.retrieved_ids) for q, a in answers.items()} if recorded else {}
    scores = evaluate_many(qrels, {system: ranked}, list(names.values()), relevance_level=relevance_level)[system]
    nuggets = _nugget_recall(db, system, version, judge, caller)
    per_question: dict[str, QuestionStages] = {}
    for q, a in answers.items():
        scorable = recorded and any(g >= relevance_level for g in qrels[q].values())
        measured = scores.per_query.get(q, {})
        per_question[q] = QuestionStages(
            q, a.answer_id, relevant_in_top(qrels[q], a.retrieved_ids, k, relevance_level) if scorable else None,
            {key: measured[name] for key, name in names.items() if name in measured}, a.correct, a.faithfulness,
            None if nuggets is None else nuggets.get(a.answer_id))
    sources: dict[str, dict[str, int]] = {"correct": {}, "faithfulness": {}}
    for a in answers.values():
        for key, by in (("correct", a.correct_by), ("faithfulness", a.faithfulness_by)):
            sources[key][by or "none"] = sources[key].get(by or "none", 0) + 1
    result = SystemStages(system, len(answers),
                          sum(not any(g >= relevance_level for g in qrels[q].values()) for q in answers),
                          sum(v.query_id is None or v.query_id not in qrels for v in values.values()),
                          sum(not a.retrieved_ids for a in answers.values()), {}, sources,
                          sum(a.abstained for a in answers.values()),
                          sum(a.words for a in answers.values()) / len(answers), per_question)
    for key in (*STAGE_NAMES, *((NUGGET_STAGE,) if nuggets is not None else ())):
        result.stages[key] = _value(list(result.per_stage(key).values()), seed=seed, n_boot=n_boot)
    return result


# --- two systems -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StageComparison:
    """System B against system A on every stage: key -> Comparison (None: too few paired questions)."""

    baseline: str
    system: str
    stages: dict[str, Any]
    sentence: str

    def as_dict(self, k: int) -> dict[str, Any]:
        labels = stage_labels(k)
        out: dict[str, Any] = {}
        for key, c in self.stages.items():
            if c is None:
                out[key] = {"name": labels[key], "n": 0}
                continue
            d = c.as_dict()
            d.pop("deltas")
            d.pop("sentence")
            out[key] = {"name": labels[key], **d}
        return {"baseline": self.baseline, "system": self.system, "stages": out, "sentence": self.sentence}


def compare_stages(a: SystemStages, b: SystemStages, *, k: int, alpha: float = 0.05, seed: int = 0,
                   n_boot: int = 2000, n_permutations: int = 10_000) -> StageComparison:
    """B against A, stage by stage, paired on the questions both have a value for."""
    stages: dict[str, Any] = {}
    for key in [x for x in a.stages if x in b.stages]:
        try:
            stages[key] = compare_runs({a.system: a.per_stage(key), b.system: b.per_stage(key)}, stage_labels(k)[key],
                                       alpha=alpha, seed=seed, n_boot=max(n_boot, 1), n_permutations=n_permutations)[0]
        except CalibrationError:  # fewer than two paired questions
            stages[key] = None
    return StageComparison(a.system, b.system, stages, attribution(a.system, b.system, stages, k=k, alpha=alpha))


def _changed(c: Any, alpha: float) -> bool:
    """Whether a stage changed: its paired randomisation test gives p < ``alpha``. A change at
    least the minimum this set detects (the MDD) is a detectable one; a significant change
    below it is still a change, said with its MDD beside it."""
    return c is not None and c.p_value < alpha


def _excludes_zero(c: Any) -> bool:
    return c.low > 0.0 or c.high < 0.0


def _stage_phrase(what: str, c: Any, alpha: float, *, unit: str = "") -> str:
    """How one stage moved: "improved"/"dropped" for a change (p < ``alpha``), the MDD beside
    one below it; a difference whose interval excludes 0 is never said not to have changed
    (it "moved ..., not detectably"); "did not change detectably" only of an interval that
    holds 0, with why (below the MDD, or its p)."""
    if c is None:
        return f"{what} could not be compared (fewer than two questions paired)"
    interval = f"[{fixed(c.low, sign=True)}, {fixed(c.high, sign=True)}]"
    if _changed(c, alpha):  # the size of the change, with the interval of that size
        verb, low, high = ("improved", c.low, c.high) if c.delta > 0 else ("dropped", -c.high, -c.low)
        below = f" (p={c.p_value:.3f}, below the {fixed(c.mdd)} this set detects)" if abs(c.delta) < c.mdd else ""
        return f"{what} {verb} by {fixed(abs(c.delta))}{unit} [{fixed(low)}, {fixed(high)}]{below}"
    p = f"p={c.p_value:.3f}"
    if c.mdd > 1.0:
        why = f"no difference on this scale can be resolved with {c.n} questions"
    elif abs(c.delta) < c.mdd:
        why = f"below the {fixed(c.mdd)} this set resolves"
    else:
        why = p
    if _excludes_zero(c):  # the bootstrap interval excludes 0, the randomisation test does not reject
        return f"{what} moved {fixed(c.delta, sign=True)} {interval}, not detectably ({p if why == p else f'{p}; {why}'})"
    return f"{what} did not change detectably ({fixed(c.delta, sign=True)} {interval}, {why})"


#: The stages of retrieval and of generation, for the sentence saying where a change is.
_RETRIEVAL = ("recall", "ndcg", "precision")
_GENERATION = ("correct_given_relevant", "correct_without_relevant", "faithfulness", NUGGET_STAGE)
#: The stages the sentence always names; any other stage is named when it changed.
_ALWAYS = ("recall", "correct_given_relevant", "correct")


def attribution(baseline: str, system: str, stages: Mapping[str, Any], *, k: int, alpha: float = 0.05) -> str:
    """One sentence: how retrieval (recall@k) and generation given a relevant chunk moved from
    ``baseline`` to ``system``, end-to-end correctness, every other stage that changed (nDCG,
    P, correctness without a relevant chunk, faithfulness), and which stage the change is in.

    A stage changed when its paired randomisation test gives p < ``alpha`` (detectably when
    its difference is also at least the MDD; a smaller one is said with the MDD beside it);
    one that did not is said to be below what the set resolves when its difference is under
    the MDD, and never "did not change" when its interval excludes 0.
    """
    labels = stage_labels(k)
    names = {"recall": "retrieval", "correct_given_relevant": labels["correct_given_relevant"],
             "correct": labels["correct"]}
    parts = [_stage_phrase(names[key], stages.get(key), alpha, unit=f" recall@{k}" if key == "recall" else "")
             for key in _ALWAYS]
    others = [key for key in stages if key not in _ALWAYS and _changed(stages.get(key), alpha)]
    parts += [_stage_phrase(labels[key], stages[key], alpha) for key in others]
    moved = {side: [key for key in keys if _changed(stages.get(key), alpha)]
             for side, keys in (("retrieval", _RETRIEVAL), ("generation", _GENERATION))}

    def which(keys: list[str]) -> str:  # the stages beyond the two always named, e.g. " (faithfulness)"
        return f" ({', '.join(labels[key] for key in keys)})" if set(keys) - set(_ALWAYS) else ""

    if moved["retrieval"] and not moved["generation"]:
        verdict = f"only retrieval changed{which(moved['retrieval'])}: the difference is in retrieval"
    elif moved["generation"] and not moved["retrieval"]:
        verdict = f"only generation changed{which(moved['generation'])}: the difference is in the generator"
    elif moved["retrieval"]:
        verdict = f"both retrieval and generation changed{which(moved['retrieval'] + moved['generation'])}"
    elif _changed(stages.get("correct"), alpha):
        verdict = "neither stage changed detectably on its own although the answers did"
    else:
        verdict = "no stage changed detectably"
    return f"{system} against {baseline}: " + "; ".join(parts) + f". So {verdict}."


# --- the report --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StagesReport:
    """What ``goldpool stages`` reports."""

    golden: str
    version: str
    content_hash: str
    k: int
    relevance_level: int
    judge: str | None
    systems: tuple[SystemStages, ...]
    comparison: StageComparison | None

    def as_dict(self) -> dict[str, Any]:
        return {"golden": self.golden, "version": self.version, "content_hash": self.content_hash, "k": self.k,
                "relevance_level": self.relevance_level, "judge": self.judge,
                "systems": {s.system: s.as_dict(self.k) for s in self.systems},
                "comparison": self.comparison.as_dict(self.k) if self.comparison else None}


def stages(db: sqlite_utils.Database, spec: GoldenSpec, systems: Sequence[str], *, k: int = 10,
           relevance_level: int = STAGE_RELEVANCE, judge: str | None = None, alpha: float = 0.05, seed: int = 0,
           n_boot: int = 2000, caller: Caller) -> StagesReport:
    """The per-stage report of one or two systems on version ``spec.version`` (see the module docstring).

    Raises:
        StoreError: no such version or system, a system without answers to the version's
            questions, more than two systems, or the same one twice.
    """
    if not 1 <= len(systems) <= 2:
        raise StoreError("give one system, or two to compare")
    if len(set(systems)) != len(systems):
        raise StoreError(f"system {systems[0]!r} given twice; give two different systems to compare")
    content_hash, qrels = version_qrels(db, spec.version, caller=caller)
    found = tuple(system_stages(db, qrels, s, k=k, relevance_level=relevance_level, judge=judge, n_boot=n_boot,
                                seed=seed, version=spec.version, caller=caller) for s in systems)
    comparison = compare_stages(found[0], found[1], k=k, alpha=alpha, seed=seed, n_boot=n_boot) if len(found) == 2 else None
    return StagesReport(spec.label, spec.version, content_hash, k, relevance_level, judge, found, comparison)

"""Generation metrics per system, from people, from a judge, and from both (prediction-powered).

Per system, five rates, each a mean over answers of a per-answer value
(:mod:`labeler.generation.outcomes`):

- ``faithfulness``: the answer's supported claims over its judged claims (answers whose every
  claim has a verdict; flagged NOT_ONE_CLAIM claims left out of the ratio and counted apart).
  Each answer weighs the same; the claim-weighted share (all supported claims over all judged
  claims) is a different number, given apart as ``claim_weighted``. The judged claims are
  logged beside it (``claims``): 0.9 over 2 claims and over 20 are different facts;
- ``supported_answers``: the share of answers wholly supported by their contexts: the
  whole-answer faithfulness verdict (item ``ANSWER_ID@faithfulness``) where one is given,
  else from the claims (every judged claim SUPPORTED, on answers whose faithfulness is
  defined). Where both are given and disagree, the whole-answer verdict counts (the
  disagreements are counted beside it, ``disagree``);
- ``correctness``: CORRECT against the reference (answers with a reference and a verdict; an
  empty response with a reference is incorrect);
- ``answer-relevance``: ADDRESSES the question (MISSES and DECLINES do not address it);
- ``abstention``: the response is empty or declines to answer, from three sources: ``text``
  (the text rule of :mod:`labeler.generation.abstention`, on every answer), ``people`` and ``judge`` (the
  answer relevance verdict DECLINES, people's key "declines to answer" or the judge's reply)
  and ``ppi``; the text rule's agreement with people, on the answers people gave an answer
  relevance verdict, comes with it (:func:`text_agreement`).

Faithfulness is never reported alone: an "I don't know" is perfectly faithful and useless, so
correctness, answer relevance and the abstention rate come with it everywhere, and so does the
mean length in words of the answers each rate is over (judges favour longer answers).

Each rate three ways: ``people`` (their majority verdicts), ``judge`` (one judge's verdicts,
sampling interval only: its bias is unknown) and ``ppi`` (PPI++: people on the answers they
labelled, the judge everywhere). Intervals are clustered by question and stay inside [0, 1];
each rate is one call of :mod:`calibration.rates`, which composes it. Systems that answered the
same questions are compared paired: the mean per-question difference, its interval and the
minimum detectable difference. The names of the metrics are :mod:`labeler.generation.registry`'s;
the text and the HTML page are :mod:`labeler.commands.reports.answer_metrics`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any

import sqlite_utils

from calibration import CalibrationError
from calibration.agreement import cohen_kappa
from calibration.clustered import paired_difference, ppi_paired_difference, unit_means
from calibration.rates import labelled_rate, ppi_rate, sampled_ppi_rate, sampled_rate
from labeler.generation.abstention import RULE
from labeler.generation.outcomes import Outcome, outcomes
from labeler.generation.registry import ANSWER_METRICS as METRICS
from labeler.generation.registry import BY_NAME, LEFT_OUT
from labeler.store import StoreError
from labeler.store.answer_records import answer_batches
from labeler.store.answer_samples import get_answer_sample
from labeler.store.answers import systems as known_systems
from labeler.store.vocabulary import ANSWER_TASKS, Caller

#: The value an abstention rate of people, a judge or PPI++ is a mean of: the answer relevance
#: verdict DECLINES (``text`` is the text rule's, ``Outcome.abstained``).
DECLINED = "declines"


def _value(o: Outcome, metric: str) -> float | None:
    """One answer's value of ``metric``: the :class:`Outcome` attribute its registry entry names
    (:data:`DECLINED`: the source's DECLINES), as a number; None when it has none."""
    value = getattr(o, "declines" if metric == DECLINED else BY_NAME[metric].value)  # type: ignore[arg-type]
    return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class Rate:
    """One metric of one system from one source: ``{value, low, high, n}`` and what it stands on."""

    value: float | None
    low: float | None
    high: float | None
    n: int  # answers the value is a mean over
    words: float | None  # mean length in words of those answers
    questions: int = 0  # distinct questions among them (the clusters)
    method: str = "none"  # the interval: wilson (design-effect), analytic (PPI, normal, clipped)
    why: str | None = None  # why there is no value
    extra: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "low": self.low, "high": self.high, "n": self.n,
                               "words": self.words, "questions": self.questions, "interval": self.method}
        if self.why:
            out["undefined"] = self.why
        out.update(self.extra)
        return out


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _missing(why: str, n: int = 0) -> Rate:
    return Rate(None, None, None, n, None, why=why)


@dataclass(frozen=True, slots=True)
class Pair:
    """Two systems on one metric from one source: the mean per-question difference ``a − b``."""

    a: str
    b: str
    metric: str
    source: str
    difference: float | None
    low: float | None
    high: float | None
    mdd: float | None
    n: int  # questions both systems have a value on
    why: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"a": self.a, "b": self.b, "metric": self.metric, "source": self.source,
                               "difference": self.difference, "low": self.low, "high": self.high, "mdd": self.mdd,
                               "n": self.n}
        if self.why:
            out["undefined"] = self.why
        return out


@dataclass(frozen=True, slots=True)
class SystemMetrics:
    system: str
    answers: int
    words: float | None  # mean length in words of all its answers
    rates: Mapping[str, Mapping[str, Rate]]  # metric -> source -> rate


@dataclass(frozen=True, slots=True)
class AnswerMetrics:
    """Every system's rates and every paired comparison."""

    systems: Sequence[SystemMetrics]
    pairs: Sequence[Pair]
    judge: str | None
    ci: float

    def as_dict(self) -> dict[str, Any]:
        """``{"systems": {NAME: {METRIC: {SOURCE: {value, low, high, n, ...}}}}, "pairs": [...]}``
        and ``answers`` (per system: answers, mean words), ``judge``, ``ci``, ``metrics``."""
        return {
            "systems": {s.system: {m: {src: r.as_dict() for src, r in s.rates[m].items()} for m in METRICS}
                        for s in self.systems},
            "pairs": [p.as_dict() for p in self.pairs],
            "answers": {s.system: {"n": s.answers, "words": s.words} for s in self.systems},
            "judge": self.judge, "ci": self.ci, "metrics": list(METRICS),
        }


def _mean_words(chosen: Sequence[Outcome]) -> float | None:
    return sum(o.words for o in chosen) / len(chosen) if chosen else None


def _claims_extra(chosen: Sequence[Outcome], every: Sequence[Outcome]) -> dict[str, Any]:
    """The claims of the answers counted, on one denominator: ``claims`` judged and
    ``flagged`` NOT_ONE_CLAIM among them (``flag_rate`` = flagged / both); the flagged claims
    of answers left out apart (``flagged_left_out``), and why answers are left out."""
    judged = sum(o.judged for o in chosen)
    flagged = sum(o.flagged for o in chosen)
    return {
        "claims": judged, "claims_per_answer": judged / len(chosen) if chosen else None,
        "claim_weighted": sum(o.supported for o in chosen) / judged if judged else None,
        "flagged": flagged, "flag_rate": flagged / (judged + flagged) if judged + flagged else None,
        "flagged_left_out": sum(o.flagged for o in every if o.faithfulness is None),
        "left_out": _left_out([o for o in every if o.faithfulness is None]),
    }


def _left_out(left: Sequence[Outcome]) -> dict[str, int]:
    """Reason -> how many of the answers ``left`` (those without a value) it keeps out; one
    reason per answer, the first of :data:`LEFT_OUT` that holds; zero counts left out."""
    counts = dict.fromkeys(LEFT_OUT, 0)
    for o in left:
        if o.words == 0:
            counts["empty"] += 1
        elif o.claims == 0:
            counts["no_claims"] += 1
        elif o.split:
            counts["split"] += 1
        elif o.judged + o.flagged < o.claims:
            counts["unjudged"] += 1
        else:
            counts["all_flagged"] += 1
    return {k: n for k, n in counts.items() if n}


def _supported_extra(chosen: Sequence[Outcome], every: Sequence[Outcome]) -> dict[str, Any]:
    """Where each answer's supported_answers value comes from: ``from_whole`` (a whole-answer
    verdict), ``from_claims``; ``disagree``: answers whose claims say otherwise than their
    whole-answer verdict (which counts); ``left_out``: why the others have no value."""
    whole = [o for o in chosen if o.whole is not None]
    return {
        "from_whole": len(whole), "from_claims": len(chosen) - len(whole),
        "disagree": sum(1 for o in whole if o.claims_say is not None and o.claims_say != o.whole),
        "left_out": _left_out([o for o in every if o.supported_answer is None]),
    }


def _extra(metric: str, chosen: Sequence[Outcome], every: Sequence[Outcome]) -> dict[str, Any]:
    if metric == "faithfulness":
        return _claims_extra(chosen, every)
    if metric == "supported_answers":
        return _supported_extra(chosen, every)
    return {}


def _split(found: Sequence[Outcome], metric: str) -> tuple[list[Outcome], list[Outcome]]:
    """(the answers a verdict is asked of, those among them whose value the text fixes).

    An empty response has no item to label: its correctness (with a reference) and relevance
    are known without anyone's verdict. So it is no part of the sample people label: a rate
    over answers some of which people labelled would otherwise hold every empty answer and
    only a sample of the others. The known ones join by their share of the answers.
    """
    if metric not in ANSWER_TASKS and metric != DECLINED:  # correctness, answer-relevance: tasks on answers
        return [o for o in found if _value(o, metric) is not None], []
    asked = [o for o in found if metric != "correctness" or o.has_reference]
    return asked, [o for o in asked if o.words == 0]


#: A designed sample: answer_id -> its inclusion probability (answers outside it are absent).
Design = Mapping[str, float]


def _design_extra(found: Sequence[Outcome], metric: str, design: Design | None) -> dict[str, Any]:
    """With a design: that values weigh 1/π, and how many answers with a value it leaves out."""
    if design is None:
        return {}
    outside = sum(1 for o in found if o.answer_id not in design and o.words > 0 and _value(o, metric) is not None)
    return {"weighted": True, "n_outside_sample": outside}


def _rate(found: Sequence[Outcome], metric: str, ci: float, design: Design | None = None) -> Rate:
    """One source's rate of ``metric`` over the answers a verdict is asked of, the empty ones
    known by their text (:func:`_split`, :func:`calibration.rates.labelled_rate`); with a
    ``design``, the values of its answers alone, each weighing 1/π (:func:`calibration.rates.sampled_rate`)."""
    asked, fixed = _split(found, metric)
    empty = {o.answer_id for o in fixed}
    chosen = [o for o in asked if _value(o, metric) is not None and (design is None or o.answer_id in design
                                                                      or o.answer_id in empty)]
    extra = {**_extra(metric, chosen, found), **_design_extra(found, metric, design)}
    values, units, known = [_value(o, metric) for o in asked], [o.unit for o in asked], [o.answer_id in empty for o in asked]
    if design is None:
        r = labelled_rate(values, units, known, ci=ci)
    else:
        r = sampled_rate(values, [design.get(o.answer_id) for o in asked], units, known, ci=ci)
    e = r.estimate
    if math.isnan(e.value):
        return Rate(None, None, None, e.n, None, why="no answer with a verdict", extra=extra)
    if r.n_known:
        extra = {**extra, "n_empty": r.n_known, "n_answers": len(asked)}
    return Rate(e.value, _num(e.low), _num(e.high), e.n, _mean_words(chosen), e.n_groups or 0, e.method, extra=extra)


def _ppi(people: Sequence[Outcome], judged: Sequence[Outcome], metric: str, ci: float,
         design: Design | None = None) -> Rate:
    """The PPI++ rate of ``metric``: people's values where they gave one, the judge's on every
    answer, the empty answers known by their text (:func:`calibration.rates.ppi_rate`); with a
    ``design``, people's values on its answers alone, each weighing 1/π
    (:func:`calibration.rates.sampled_ppi_rate`)."""
    y = {o.answer_id: _value(o, metric) for o in people}
    fixed = [o for o in _split(judged, metric)[1] if _value(o, metric) is not None]
    empty = {o.answer_id for o in fixed}
    everyone = [*(o for o in judged if o.answer_id not in empty and _value(o, metric) is not None), *fixed]
    args = ([y.get(o.answer_id) for o in everyone], [_value(o, metric) for o in everyone],
            [o.unit for o in everyone], [o.answer_id in empty for o in everyone])
    try:
        if design is None:
            r = ppi_rate(*args, ci=ci)  # type: ignore[arg-type]
        else:
            r = sampled_ppi_rate(args[0], [design.get(o.answer_id) for o in everyone], *args[1:], ci=ci)  # type: ignore[arg-type]
    except CalibrationError as exc:
        return _missing(str(exc), len(everyone))
    e = r.estimate
    if math.isnan(e.value):
        return _missing("no answer with a verdict")
    left_out = sum(1 for o in people if o.words > 0 and y[o.answer_id] is not None) - r.n_labelled
    return Rate(e.value, e.low, e.high, e.n, _mean_words(everyone), e.n_groups or 0, e.method,
                extra={"n_labelled": r.n_labelled, "n_unlabelled": r.n_unlabelled, "n_empty": r.n_known,
                       "lambda": r.lam, "n_left_out": left_out, **({"weighted": True} if design is not None else {})})


def system_metrics(system: str, people: Sequence[Outcome], judged: Sequence[Outcome] | None,
                   ci: float = 0.95, design: Design | None = None) -> SystemMetrics:
    """One system's rates from its outcomes by people and (optionally) by a judge; with a
    ``design``, people's values weigh 1/π (the judge's, on every answer, count once)."""
    rates: dict[str, dict[str, Rate]] = {}
    for metric in METRICS:
        if metric == "abstention":
            rates[metric] = abstention_rates(people, judged, ci, design)
            continue
        mine = {"people": _rate(people, metric, ci, design)}
        if judged is None:
            mine["judge"] = mine["ppi"] = _missing("no judge given")
        else:
            mine["judge"] = _rate(judged, metric, ci)
            mine["ppi"] = _ppi(people, judged, metric, ci, design)
        rates[metric] = mine
    return SystemMetrics(system, len(people), _mean_words(people), rates)


def abstention_rates(people: Sequence[Outcome], judged: Sequence[Outcome] | None, ci: float = 0.95,
                     design: Design | None = None) -> dict[str, Rate]:
    """The abstention rate by source: ``text`` (the text rule, every answer, with its
    agreement with people), ``people`` and ``judge`` (the answer relevance verdict DECLINES;
    an empty response declines, known without a verdict) and ``ppi``."""
    text = _rate(people, "abstention", ci)
    rates = {"text": replace(text, extra={**text.extra, "rule": RULE, "agreement": text_agreement(people, ci)}),
             "people": _rate(people, DECLINED, ci, design)}
    if judged is None:
        rates["judge"] = rates["ppi"] = _missing("no judge given")
    else:
        rates["judge"] = _rate(judged, DECLINED, ci)
        rates["ppi"] = _ppi(people, judged, DECLINED, ci, design)
    return rates


def text_agreement(found: Sequence[Outcome], ci: float = 0.95) -> dict[str, Any]:
    """The text rule against a source's DECLINES, on the non-empty answers both read (an empty
    response declines for both by definition, so it is left out): counts of each cell, the raw
    agreement, Cohen's kappa (interval by a bootstrap over questions), and the rule's
    sensitivity (people's declines it finds) and precision (its declines people marked)."""
    both = [o for o in found if o.declines is not None and o.words > 0]
    cells = {"both": sum(o.abstained and o.declines for o in both),
             "text_only": sum(o.abstained and not o.declines for o in both),
             "people_only": sum(not o.abstained and o.declines for o in both),
             "neither": sum(not o.abstained and not o.declines for o in both)}
    out: dict[str, Any] = {"n": len(both), **cells, "agree": cells["both"] + cells["neither"],
                           "disagree": cells["text_only"] + cells["people_only"],
                           "agreement": None, "kappa": None, "kappa_low": None, "kappa_high": None,
                           "sensitivity": None, "precision": None}
    if not both:
        return out
    out["agreement"] = out["agree"] / len(both)
    if cells["both"] + cells["people_only"]:
        out["sensitivity"] = cells["both"] / (cells["both"] + cells["people_only"])
    if cells["both"] + cells["text_only"]:
        out["precision"] = cells["both"] / (cells["both"] + cells["text_only"])
    try:
        k = cohen_kappa([o.abstained for o in both], [bool(o.declines) for o in both], labels=[True, False],
                        groups=[o.unit for o in both], ci=ci)
    except CalibrationError:
        return out
    out["kappa"], out["kappa_low"], out["kappa_high"] = _num(k.value), _num(k.low), _num(k.high)
    return out


def _by_unit(found: Sequence[Outcome], metric: str) -> dict[str, float]:
    values = {o.answer_id: _value(o, metric) for o in found}
    return unit_means({k: v for k, v in values.items() if v is not None}, {o.answer_id: o.unit for o in found})


def compare(a: str, b: str, people: Mapping[str, Sequence[Outcome]], judged: Mapping[str, Sequence[Outcome]] | None,
            ci: float = 0.95) -> list[Pair]:
    """Systems ``a`` and ``b`` paired on the questions both answered, every metric, every source."""
    out = []
    for metric in METRICS:
        sides: dict[str, Callable[[], Any]] = {}
        value = DECLINED if metric == "abstention" else metric  # people's and the judge's abstention: DECLINES
        if metric == "abstention":
            sides["text"] = lambda: paired_difference(_by_unit(people[a], "abstention"), _by_unit(people[b], "abstention"),
                                                      ci=ci)
        sides["people"] = lambda m=value: paired_difference(_by_unit(people[a], m), _by_unit(people[b], m), ci=ci)
        if judged is not None:
            sides["judge"] = lambda m=value: paired_difference(_by_unit(judged[a], m), _by_unit(judged[b], m), ci=ci)
            sides["ppi"] = lambda m=value: ppi_paired_difference(
                _differences(people, a, b, m), _differences(judged, a, b, m), ci=ci)
        for source, run in sides.items():
            d = run()
            if d is None:
                out.append(Pair(a, b, metric, source, None, None, None, None, 0,
                                why="fewer than 2 questions with a value for both systems"))
            else:
                out.append(Pair(a, b, metric, source, d.difference, d.low, d.high, d.mdd, d.n))
    return out


def _differences(found: Mapping[str, Sequence[Outcome]], a: str, b: str, metric: str) -> dict[str, float]:
    left, right = _by_unit(found[a], metric), _by_unit(found[b], metric)
    return {u: left[u] - right[u] for u in left if u in right}


def shared_questions(people: Mapping[str, Sequence[Outcome]], a: str, b: str) -> int:
    """How many questions both ``a`` and ``b`` answered."""
    return len({o.unit for o in people[a]} & {o.unit for o in people[b]})


def metrics_of(people: Mapping[str, Sequence[Outcome]], judged: Mapping[str, Sequence[Outcome]] | None, *,
               judge: str | None = None, ci: float = 0.95, design: Design | None = None) -> AnswerMetrics:
    """Every system's rates, and every two systems that share questions compared paired."""
    names = list(people)
    systems = [system_metrics(s, people[s], None if judged is None else judged[s], ci, design) for s in names]
    pairs = [p for a, b in combinations(names, 2) if shared_questions(people, a, b) >= 2
             for p in compare(a, b, people, judged, ci)]
    return AnswerMetrics(systems, pairs, judge, ci)


@dataclass(frozen=True, slots=True)
class SampleDesign:
    """A stored sample of answers as the metrics read it: its system, the batch it was drawn
    from (None: every batch) and each drawn answer's inclusion probability."""

    name: str
    system: str
    batch: str | None
    probabilities: Design

    def population(self, found: Sequence[Outcome], batch_of: Mapping[str, str]) -> list[Outcome]:
        """The outcomes of the answers the sample was drawn from."""
        return [o for o in found if self.batch is None or batch_of.get(o.answer_id) == self.batch]


def sample_design(db: sqlite_utils.Database, sample: str, systems: Sequence[str]) -> SampleDesign:
    """The sample ``sample`` of answers, checked against the ``systems`` asked for (its own or none).

    Raises:
        StoreError: no such sample; other systems asked for.
    """
    s = get_answer_sample(db, sample)
    if any(name != s.system for name in systems):
        raise StoreError(f"sample {sample!r} is of system {s.system!r}: give --system {s.system} or no --system")
    return SampleDesign(sample, s.system, s.params.get("batch"), {a: p for a, (p, _) in s.items.items()})


def answer_metrics(db: sqlite_utils.Database, systems: Sequence[str] = (), *, judge: str | None = None,
                   ci: float = 0.95, sample: str | None = None, caller: Caller) -> AnswerMetrics:
    """The metrics of ``systems`` (every imported system when empty) in the project (admin only);
    with ``sample``, of its system over the answers it was drawn from, people's values on its
    answers alone, each weighing 1/π.

    Raises:
        StoreError: an unknown system, judge or sample; the caller is not an admin; no system at all.
    """
    design = None if sample is None else sample_design(db, sample, systems)
    names = [design.system] if design else list(dict.fromkeys(systems)) or known_systems(db)
    if not names:
        raise StoreError("no answers in the project: import a system's answers with `goldpool import-answers`")
    keep: Callable[[list[Outcome]], list[Outcome]] = lambda found: found
    if design is not None:
        batch_of = answer_batches(db, design.system)
        keep = lambda found: design.population(found, batch_of)
    people = {s: keep(outcomes(db, s, caller=caller)) for s in names}
    judged = None
    if judge is not None:
        judged = {s: keep(outcomes(db, s, judge=judge, caller=caller)) for s in names}
        if not any(o.judged or o.flagged or o.whole is not None or o.correct is not None
                   or o.addresses is not None
                   for found in judged.values() for o in found if not (o.abstained and o.words == 0)):
            raise StoreError(f"judge {judge!r} gave no verdict on the answers of {', '.join(names)}")
    return metrics_of(people, judged, judge=judge, ci=ci, design=None if design is None else design.probabilities)

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
labelled, the judge everywhere). Intervals are clustered by question and stay inside [0, 1]
(:mod:`calibration.clustered`). Systems that answered the same questions are compared paired:
the mean per-question difference, its interval and the minimum detectable difference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any

import sqlite_utils

from labeler.generation.abstention import RULE
from labeler.generation.outcomes import Outcome, outcomes
from labeler.store.vocabulary import ANSWER_TASKS, Caller

#: The metrics, in the order they are always shown: faithfulness first, never without the others.
METRICS = ("faithfulness", "supported_answers", "correctness", "answer-relevance", "abstention")
#: Where a value comes from.
SOURCES = ("people", "judge", "ppi")
LABELS = {"faithfulness": "faithfulness", "supported_answers": "supported answers", "correctness": "correctness", "answer-relevance": "answer relevance",
          "abstention": "abstention"}
#: The value an abstention rate of people, a judge or PPI++ is a mean of: the answer relevance
#: verdict DECLINES (``text`` is the text rule's, ``Outcome.abstained``).
DECLINED = "declines"
#: Where an abstention rate comes from, in the order shown.
ABSTENTION_SOURCES = ("text", *SOURCES)


def _value(o: Outcome, metric: str) -> float | None:
    if metric == "faithfulness":
        return o.faithfulness
    if metric == "supported_answers":
        return None if o.supported_answer is None else float(o.supported_answer)
    if metric == "correctness":
        return None if o.correct is None else float(o.correct)
    if metric == "answer-relevance":
        return None if o.addresses is None else float(o.addresses)
    if metric == DECLINED:
        return None if o.declines is None else float(o.declines)
    return float(o.abstained)


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


#: Why an answer has no faithfulness, in the order the reasons are checked and said.
LEFT_OUT = ("empty", "no_claims", "split", "unjudged", "all_flagged")


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


def _rate(found: Sequence[Outcome], metric: str, ci: float) -> Rate:
    from calibration.clustered import stratified_rate

    asked, fixed = _split(found, metric)
    chosen = [o for o in asked if _value(o, metric) is not None]
    extra = _extra(metric, chosen, found)
    empty = {o.answer_id for o in fixed}
    labelled = [o for o in chosen if o.answer_id not in empty]
    if not labelled and len(fixed) < len(asked) or not chosen:
        return Rate(None, None, None, len(chosen), None, why="no answer with a verdict", extra=extra)
    known = sum(_value(o, metric) for o in fixed) / len(fixed) if fixed else 0.0  # type: ignore[misc]
    if not labelled:  # every answer asked is empty
        labelled, fixed, empty = fixed, [], set()
    e = stratified_rate([_value(o, metric) for o in labelled], [o.unit for o in labelled],  # type: ignore[misc]
                        [o.unit for o in asked], [o.answer_id not in empty for o in asked], known, ci=ci)
    if fixed:
        extra = {**extra, "n_empty": len(fixed), "n_answers": len(asked)}
    return Rate(e.value, _num(e.low), _num(e.high), len(labelled) + len(fixed), _mean_words([*labelled, *fixed]),
                len({o.unit for o in [*labelled, *fixed]}), e.method, extra=extra)


def _ppi(people: Sequence[Outcome], judged: Sequence[Outcome], metric: str, ci: float) -> Rate:
    from calibration import CalibrationError
    from calibration.clustered import clustered_ppi, stratified_rate, with_known_part
    from calibration.stats import z_for

    y = {o.answer_id: _value(o, metric) for o in people}
    # Empty responses have values fixed by their text (see _split): PPI runs on the other
    # answers, and the empty ones join by their share.
    fixed = [o for o in _split(judged, metric)[1] if _value(o, metric) is not None]
    empty = {o.answer_id for o in fixed}
    rest = [o for o in judged if o.answer_id not in empty and _value(o, metric) is not None]
    labelled = [o for o in rest if y.get(o.answer_id) is not None]
    unlabelled = [o for o in rest if y.get(o.answer_id) is None]
    left_out = sum(1 for o in people if o.words > 0 and y[o.answer_id] is not None) - len(labelled)
    if not rest and not fixed:
        return _missing("no answer with a verdict")
    try:
        r = clustered_ppi([y[o.answer_id] for o in labelled], [_value(o, metric) for o in labelled],  # type: ignore[misc]
                          [o.unit for o in labelled], [_value(o, metric) for o in unlabelled],  # type: ignore[misc]
                          [o.unit for o in unlabelled], ci=ci)
    except CalibrationError as exc:
        return _missing(str(exc), len(rest) + len(fixed))
    e = r.estimate
    value, low, high, method = e.value, e.low, e.high, e.method
    if fixed:
        known = sum(_value(o, metric) for o in fixed) / len(fixed)  # type: ignore[misc]
        everyone = [*rest, *fixed]
        if r.lam == 0.0:  # the people's own rate (λ = 0 ignores the judge), placed among the known ones
            s = stratified_rate([y[o.answer_id] for o in labelled], [o.unit for o in labelled],  # type: ignore[misc]
                                [o.unit for o in everyone], [o.answer_id not in empty for o in everyone], known, ci=ci)
            value, low, high, method = s.value, s.low, s.high, s.method
        else:
            value, variance = with_known_part(r.value, r.se ** 2,
                                              [o.unit for o in everyone], [o.answer_id not in empty for o in everyone], known)
            half = z_for(ci) * math.sqrt(variance)
            value, low, high = (min(max(v, 0.0), 1.0) for v in (value, value - half, value + half))
    return Rate(value, low, high, len(rest) + len(fixed), _mean_words([*rest, *fixed]),
                len({o.unit for o in [*rest, *fixed]}), method,
                extra={"n_labelled": r.n_labelled, "n_unlabelled": r.n_unlabelled, "n_empty": len(fixed),
                       "lambda": r.lam, "n_left_out": left_out})


def system_metrics(system: str, people: Sequence[Outcome], judged: Sequence[Outcome] | None,
                   ci: float = 0.95) -> SystemMetrics:
    """One system's rates from its outcomes by people and (optionally) by a judge."""
    rates: dict[str, dict[str, Rate]] = {}
    for metric in METRICS:
        if metric == "abstention":
            rates[metric] = abstention_rates(people, judged, ci)
            continue
        mine = {"people": _rate(people, metric, ci)}
        if judged is None:
            mine["judge"] = mine["ppi"] = _missing("no judge given")
        else:
            mine["judge"] = _rate(judged, metric, ci)
            mine["ppi"] = _ppi(people, judged, metric, ci)
        rates[metric] = mine
    return SystemMetrics(system, len(people), _mean_words(people), rates)


def abstention_rates(people: Sequence[Outcome], judged: Sequence[Outcome] | None, ci: float = 0.95) -> dict[str, Rate]:
    """The abstention rate by source: ``text`` (the text rule, every answer, with its
    agreement with people), ``people`` and ``judge`` (the answer relevance verdict DECLINES;
    an empty response declines, known without a verdict) and ``ppi``."""
    text = _rate(people, "abstention", ci)
    rates = {"text": replace(text, extra={**text.extra, "rule": RULE, "agreement": text_agreement(people, ci)}),
             "people": _rate(people, DECLINED, ci)}
    if judged is None:
        rates["judge"] = rates["ppi"] = _missing("no judge given")
    else:
        rates["judge"] = _rate(judged, DECLINED, ci)
        rates["ppi"] = _ppi(people, judged, DECLINED, ci)
    return rates


def text_agreement(found: Sequence[Outcome], ci: float = 0.95) -> dict[str, Any]:
    """The text rule against a source's DECLINES, on the non-empty answers both read (an empty
    response declines for both by definition, so it is left out): counts of each cell, the raw
    agreement, Cohen's kappa (interval by a bootstrap over questions), and the rule's
    sensitivity (people's declines it finds) and precision (its declines people marked)."""
    from calibration import CalibrationError
    from calibration.agreement import cohen_kappa

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
    from calibration.clustered import unit_means

    values = {o.answer_id: _value(o, metric) for o in found}
    return unit_means({k: v for k, v in values.items() if v is not None}, {o.answer_id: o.unit for o in found})


def compare(a: str, b: str, people: Mapping[str, Sequence[Outcome]], judged: Mapping[str, Sequence[Outcome]] | None,
            ci: float = 0.95) -> list[Pair]:
    """Systems ``a`` and ``b`` paired on the questions both answered, every metric, every source."""
    from calibration.clustered import paired_difference, ppi_paired_difference

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
               judge: str | None = None, ci: float = 0.95) -> AnswerMetrics:
    """Every system's rates, and every two systems that share questions compared paired."""
    names = list(people)
    systems = [system_metrics(s, people[s], None if judged is None else judged[s], ci) for s in names]
    pairs = [p for a, b in combinations(names, 2) if shared_questions(people, a, b) >= 2
             for p in compare(a, b, people, judged, ci)]
    return AnswerMetrics(systems, pairs, judge, ci)


def answer_metrics(db: sqlite_utils.Database, systems: Sequence[str] = (), *, judge: str | None = None,
                   ci: float = 0.95, caller: Caller) -> AnswerMetrics:
    """The metrics of ``systems`` (every imported system when empty) in the project (admin only).

    Raises:
        StoreError: an unknown system or judge; the caller is not an admin; no system at all.
    """
    from labeler.store import StoreError
    from labeler.store.answers import systems as known_systems

    names = list(dict.fromkeys(systems)) or known_systems(db)
    if not names:
        raise StoreError("no answers in the project: import a system's answers with `goldpool import-answers`")
    people = {s: outcomes(db, s, caller=caller) for s in names}
    judged = None
    if judge is not None:
        judged = {s: outcomes(db, s, judge=judge, caller=caller) for s in names}
        if not any(o.judged or o.flagged or o.whole is not None or o.correct is not None
                   or o.addresses is not None
                   for found in judged.values() for o in found if not (o.abstained and o.words == 0)):
            raise StoreError(f"judge {judge!r} gave no verdict on the answers of {', '.join(names)}")
    return metrics_of(people, judged, judge=judge, ci=ci)


# --- text and HTML ---------------------------------------------------------------------------

_SOURCE_LABEL = {"text": "text rule", "people": "people", "judge": "judge", "ppi": "PPI++"}


def _f(x: float | None, digits: int = 3, *, sign: bool = False) -> str:
    from calibration.formatting import fixed

    return fixed(x, digits, sign=sign, missing="-")


def _interval(low: float | None, high: float | None, *, sign: bool = False) -> str:
    return "" if low is None or high is None else f"[{_f(low, sign=sign)}, {_f(high, sign=sign)}]"


def _answers(n: int) -> str:
    return f"{n} answer{'' if n == 1 else 's'}"


def _left_out_note(x: Mapping[str, Any], source: str) -> str | None:
    """"left out: 7 answers with a claim people split on, ..." from ``x["left_out"]``."""
    counts = x.get("left_out")
    if not counts:
        return None
    who = "the judge" if source == "judge" else "people"
    words = {"empty": "empty (nothing to judge)", "no_claims": "with no claims (split-claims gives them some)",
             "split": f"with a claim {who} split on (no majority)", "unjudged": f"with a claim {who} gave no verdict on",
             "all_flagged": "whose every claim was flagged not one claim"}
    return "left out: " + ", ".join(f"{_answers(counts[k])} {words[k]}" for k in LEFT_OUT if counts.get(k))


def _claims_note(x: Mapping[str, Any]) -> list[str]:
    """The claims of the answers counted, judged and flagged on one denominator."""
    seen = x["claims"] + x["flagged"]
    per = f" ({x['claims_per_answer']:.1f} per answer)" if x.get("claims_per_answer") is not None else ""
    notes = [f"{seen} claims in these answers: {x['claims']} judged{per}, claim-weighted {_f(x.get('claim_weighted'))}"]
    if x.get("flag_rate") is not None:
        notes.append(f"{x['flagged']} of the {seen} flagged not one claim ({x['flag_rate']:.1%})")
    if x.get("flagged_left_out"):
        notes.append(f"{x['flagged_left_out']} more flagged in answers left out")
    return notes


def _supported_note(x: Mapping[str, Any]) -> list[str]:
    notes = [f"{x['from_whole']} from a whole-answer verdict, {x['from_claims']} from claims"]
    if x.get("disagree"):
        notes.append(f"{_answers(x['disagree'])} whose claims say otherwise (the whole-answer verdict counts)")
    return notes


def _note(metric: str, source: str, r: Rate) -> str:
    left = _left_out_note(r.extra, source) if source != "ppi" else None
    if r.why:
        return "; ".join(n for n in (r.why, left) if n)
    notes = []
    if metric == "faithfulness" and "claims" in r.extra:
        notes += _claims_note(r.extra)
    if metric == "supported_answers" and "from_whole" in r.extra:
        notes += _supported_note(r.extra)
    if left:
        notes.append(left)
    if metric == "abstention" and source == "text" and "agreement" in r.extra:
        notes.append(agreement_note(r.extra["agreement"]))
    if source == "ppi":
        x = r.extra
        empty = f", {x['n_empty']} empty (known)" if x.get("n_empty") else ""
        notes.append(f"lambda {x['lambda']:.2f}: {x['n_labelled']} labelled by people, {x['n_unlabelled']} by the judge only"
                     + empty)
    return "; ".join(notes)


def agreement_note(a: Mapping[str, Any]) -> str:
    """The text rule's agreement with people, in one line."""
    if not a.get("n"):
        return "no answer with people's answer relevance verdict to check the rule against"
    kappa = "" if a.get("kappa") is None else f", kappa {_f(a['kappa'])} {_interval(a.get('kappa_low'), a.get('kappa_high'))}"
    answers = "answer" if a["n"] == 1 else "answers"
    return (f"against people on {a['n']} {answers}: agree {a['agree']}, disagree {a['disagree']} "
            f"(rule only {a['text_only']}, people only {a['people_only']}){kappa}; "
            f"sensitivity {_f(a.get('sensitivity'), 2)}, precision {_f(a.get('precision'), 2)}")


def _rows(s: SystemMetrics, judged: bool) -> list[list[str]]:
    rows = []
    for metric in METRICS:
        sources = SOURCES if judged else ("people",)
        if metric == "abstention":
            sources = ("text", *sources)
        for i, source in enumerate(sources):
            r = s.rates[metric][source]
            rows.append([LABELS[metric] if i == 0 else "", _SOURCE_LABEL.get(source, source), _f(r.value),
                         _interval(r.low, r.high), str(r.n), str(r.questions),
                         "-" if r.words is None else f"{r.words:.1f}", _note(metric, source, r)])
    return rows


_HEADER = ["metric", "source", "value", "interval", "answers", "questions", "words", "beside it"]
_PAIR_HEADER = ["metric", "source", "difference", "interval", "questions", "MDD", "reading"]


def _pair_rows(pairs: Sequence[Pair]) -> list[list[str]]:
    rows = []
    last = None
    for p in pairs:
        if p.difference is None:
            reading = p.why or ""
        elif p.low is not None and p.high is not None and p.low <= 0.0 <= p.high:
            reading = "no difference shown (one below the MDD would go unseen)"
        else:
            reading = f"{p.a if p.difference > 0 else p.b} higher"
        rows.append([LABELS[p.metric] if p.metric != last else "", _SOURCE_LABEL[p.source],
                     _f(p.difference, sign=True), _interval(p.low, p.high, sign=True), str(p.n), _f(p.mdd), reading])
        last = p.metric
    return rows


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for row in [header, *rows]:
        cells = [str(c).ljust(w) if i < 2 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append((indent + "  ".join(cells) + "  " + str(row[-1])).rstrip())
    return lines


def _pairs_by_systems(pairs: Sequence[Pair]) -> dict[tuple[str, str], list[Pair]]:
    grouped: dict[tuple[str, str], list[Pair]] = {}
    for p in pairs:
        grouped.setdefault((p.a, p.b), []).append(p)
    return grouped


def _intro(m: AnswerMetrics) -> list[str]:
    who = (f"people, judge {m.judge!r}, and PPI++ (people where they labelled, the judge everywhere)"
           if m.judge else "people (give --judge NAME for a judge's values and PPI++)")
    return [f"Generation metrics from {who}.",
            f"{m.ci:.0%} intervals, clustered by question: rates by a Wilson interval at the design-effect sample "
            "size, PPI++ normal; all kept inside [0, 1]; the judge's interval is its sampling spread only (its bias "
            "is unknown: compare it with people's). Faithfulness is the mean over answers of supported / "
            "judged claims; supported answers the share of answers wholly supported (the whole-answer verdict where "
            "given, else every claim supported); both are shown with correctness, answer relevance and the "
            "abstention rate, since an answer that declines is perfectly faithful; words: mean answer length of the answers counted.",
            "Abstention: the text rule reads every answer (a declining answer with no answer of its own); people "
            "and the judge say DECLINES on answer relevance (which then counts as not addressing the question); "
            "the text rule's agreement with people is on the non-empty answers people judged."]


def to_text(m: AnswerMetrics) -> str:
    """The metrics as plain text: one table per system, then the paired comparisons."""
    lines = _intro(m)
    for s in m.systems:
        words = "" if s.words is None else f", mean {s.words:.1f} words"
        lines += ["", f"{s.system}: {s.answers} answers{words}", *_table(_HEADER, _rows(s, m.judge is not None))]
    if len(m.systems) > 1 and not m.pairs:
        lines += ["", "No two systems answered 2 or more of the same questions: no paired comparison."]
    for (a, b), pairs in _pairs_by_systems(m.pairs).items():
        lines += ["", f"{a} - {b}, paired on the questions both answered (MDD: the smallest true difference "
                      "found 80% of the time at alpha 0.05)", *_table(_PAIR_HEADER, _pair_rows(pairs))]
    return "\n".join(lines) + "\n"


def to_html(m: AnswerMetrics, title: str = "Generation metrics") -> str:
    """The metrics as one self-contained HTML page (every name from the data escaped)."""
    from html import escape

    from calibration.report_html import STYLE, wide

    def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        return wide(f"<table><tr>{head}</tr>{body}</table>")

    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}</title>",
             f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>"]
    parts += [f"<p class='note'>{escape(line)}</p>" for line in _intro(m)]
    for s in m.systems:
        words = "" if s.words is None else f", mean {s.words:.1f} words"
        parts.append(f"<section><h2>{escape(s.system)}</h2><p>{s.answers} answers{escape(words)}</p>"
                     f"{table(_HEADER, _rows(s, m.judge is not None))}</section>")
    for (a, b), pairs in _pairs_by_systems(m.pairs).items():
        parts.append(f"<section><h2>{escape(a)} &minus; {escape(b)}</h2><p>Paired on the questions both answered."
                     f"</p>{table(_PAIR_HEADER, _pair_rows(pairs))}</section>")
    parts.append("</body></html>")
    return "".join(parts)

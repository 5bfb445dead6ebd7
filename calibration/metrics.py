"""Retrieval metrics of a run against a golden set, computed by ``ir-measures``.

Metric names are ir-measures names (``P@10``, ``R@100``, ``RR``, ``AP``, ``nDCG@10``,
``Judged@10``, ``nDCG(dcg='exp-log2')@10``, anything ``ir_measures.parse_measure`` reads), or
trec_eval's names (``map``, ``P_5``, ``ndcg_cut_10``, ``recip_rank``...), which ir-measures'
own ``parse_trec_measure`` translates. The trec_eval measures go through ir-measures' pytrec_eval
provider, so a value equals trec_eval's; nothing here re-implements a metric.

The **relevance level** (trec_eval's ``-l``): a grade at or above it counts as relevant for
every binary measure (P, R, AP, RR, Rprec, Bpref...), handed to ir-measures as each measure's
own ``rel=`` parameter; a measure that names its ``rel`` keeps it. Graded measures (nDCG) read
the grades themselves. The default, 1, is trec_eval's and ir-measures' default, so ``P@10``
here is ``P@10`` there. Three decisions are goldpool's own:

- **Ranking.** The caller hands each query's documents already ranked the way trec_eval ranks
  them (score descending, ties by doc_id descending: :func:`pooling.trec.rank_run`), and every
  provider receives scores that encode exactly that order. Providers that sort ties their own
  way (ir-measures' ``Judged`` sorts ties by doc_id ascending) therefore see trec_eval's ranking.
- **Queries without a relevant document** (no grade at or above the level) are left out of every mean, and how
  many were left out is reported (``excluded``): recall and nDCG are undefined there. Queries
  the golden set has but the run does not answer are left out as trec_eval leaves them out
  (without ``-c``) and counted (``missing``); queries the run names but the golden set does not
  have are counted and listed (``unknown``), never fatal.
- **Exponential-gain nDCG** ``nDCG(dcg='exp-log2')@k`` is computed by trec_eval's ``ndcg_cut``
  with the gains ``2^rel - 1`` (Järvelin & Kekäläinen 2002; Burges et al. 2005), the same
  definition ir-measures gives the name, through the pytrec_eval provider.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calibration import CalibrationError

#: Qrels: query_id -> doc_id -> graded relevance.
Qrels = Mapping[str, Mapping[str, int]]
#: A ranked run: query_id -> doc_ids, best first (trec_eval order).
Ranked = Mapping[str, Sequence[str]]
#: The grade from which a document counts as relevant when none is given: trec_eval's ``-l``
#: default and the ``rel`` default of ir-measures' binary measures.
RELEVANCE_LEVEL = 1


def default_metrics(depth: int = 10) -> tuple[str, ...]:
    """The default set for a graded golden set, ``depth`` being what is fed downstream.

    >>> default_metrics(5)
    ('nDCG@10', "nDCG(dcg='exp-log2')@10", 'R@5', 'RR', 'P@5', 'Judged@5')
    """
    if depth < 1:
        raise CalibrationError(f"depth {depth}: give 1 or more")
    return ("nDCG@10", "nDCG(dcg='exp-log2')@10", f"R@{depth}", "RR", f"P@{depth}", f"Judged@{depth}")


@dataclass(frozen=True, slots=True)
class RunScores:
    """One run's scores against one golden set.

    Attributes:
        metrics: metric name -> mean over the scored queries (NaN when none is scored).
        per_query: query_id -> metric name -> value, scored queries only.
        excluded: golden queries without a relevant document (left out of every mean).
        missing: golden queries with a relevant document that the run does not answer.
        unknown: query_ids the run names that the golden set does not have, sorted.
        scored: queries every mean is over.
        relevance_level: the grade from which a document counts as relevant.
    """

    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    excluded: int
    missing: int
    unknown: tuple[str, ...]
    scored: int
    relevance_level: int = RELEVANCE_LEVEL

    def as_dict(self) -> dict[str, Any]:
        """``{"metrics", "per_query", "excluded", ...}`` for JSON (NaN becomes None)."""
        clean = lambda x: None if isinstance(x, float) and math.isnan(x) else x  # noqa: E731
        return {
            "metrics": {k: clean(v) for k, v in self.metrics.items()},
            "per_query": {q: {k: clean(v) for k, v in m.items()} for q, m in self.per_query.items()},
            "excluded": self.excluded,
            "missing": self.missing,
            "unknown": list(self.unknown),
            "scored": self.scored,
            "relevance_level": self.relevance_level,
        }


def parse_metrics(names: Iterable[str], relevance_level: int = RELEVANCE_LEVEL) -> dict[str, Any]:
    """Metric name -> ir-measures measure object, in the given order (duplicates dropped).

    An ir-measures name keeps its spelling; a trec_eval name becomes the ir-measures name(s) of
    what ``ir_measures.parse_trec_measure`` reads (``map`` -> ``AP``, ``P_5,10`` -> ``P@5``,
    ``P@10``). Every measure that takes ``rel`` and does not name it gets ``relevance_level``:

    >>> parse_metrics(["map", "P_5", "nDCG@10"], relevance_level=2)
    {'AP': AP(rel=2), 'P@5': P(rel=2)@5, 'nDCG@10': nDCG@10}

    Raises:
        CalibrationError: a name neither ir-measures nor trec_eval spells, or a level below 1.
    """
    if relevance_level < 1:
        raise CalibrationError(f"relevance level {relevance_level}: give 1 or more (the lowest grade that counts as relevant)")
    parsed: dict[str, Any] = {}
    for raw in names:
        name = raw.strip()
        if not name or name in parsed:
            continue
        for label, measure in _parse_one(name):
            _check_params(name, measure)
            if label not in parsed:
                parsed[label] = _at_level(measure, relevance_level)
    if not parsed:
        raise CalibrationError("no metric given (e.g. --metrics 'nDCG@10,RR')")
    return parsed


def _parse_one(name: str) -> list[tuple[str, Any]]:
    """``[(label, measure), ...]`` for one ir-measures or trec_eval name."""
    import ir_measures
    import pytrec_eval

    try:
        measure = ir_measures.parse_measure(name)
        measure.validate_params()  # ``P`` parses, but without the cutoff it needs
        return [(name, measure)]
    except (ValueError, TypeError, KeyError, NameError, SyntaxError, AttributeError, AssertionError):
        pass
    # trec_eval's nicknames (``official``, ``all_trec``...) stand for dozens of measures and
    # ir-measures prints what it skips in them: only single measure names are read.
    if name not in pytrec_eval.supported_nicknames:
        try:
            return [(str(m), m) for m in ir_measures.parse_trec_measure(name)]
        except (ValueError, TypeError, KeyError, AttributeError):
            pass
    raise CalibrationError(
        f"metric {name!r}: not a measure name; spell it as ir-measures (P@5, R@100, AP, RR, nDCG@10, Judged@10, "
        "nDCG(dcg='exp-log2')@10) or as trec_eval (P_5, recall_100, map, recip_rank, ndcg_cut_10, Rprec, bpref)")


def _check_params(name: str, measure: Any) -> None:
    """Refuse a cutoff or a relevance level below 1 (pytrec_eval aborts the process on a cutoff
    of 0; a level of 0 would count every judged document as relevant).

    >>> _check_params("P@0", _parse_one("P@0")[0][1])
    Traceback (most recent call last):
    ...
    calibration.CalibrationError: metric 'P@0': cutoff 0; give a cutoff of 1 or more (P@10)
    """
    cutoff = measure.params.get("cutoff")
    if isinstance(cutoff, int) and cutoff < 1:
        raise CalibrationError(f"metric {name!r}: cutoff {cutoff}; give a cutoff of 1 or more ({measure.NAME}@10)")
    rel = measure.params.get("rel")
    if isinstance(rel, int) and rel < 1:
        raise CalibrationError(f"metric {name!r}: rel={rel}; the lowest grade that counts as relevant is 1 or more")


def check_scoring(qrels: Qrels, runs: Mapping[str, Ranked], parsed: Mapping[str, Any], relevance_level: int,
                  *, label: str = "the golden set") -> None:
    """Refuse a comparison that would score nothing: a measure's relevance level above every
    grade of ``qrels`` (no document could count as relevant), or a run that shares no query with
    the queries of ``qrels`` that have a relevant document (a wrong file, ``1`` against ``q1``).

    >>> check_scoring({"q1": {"d": 1}}, {"r.trec": {"1": ["d"]}}, parse_metrics(["P@10"]), 1)
    Traceback (most recent call last):
    ...
    calibration.CalibrationError: r.trec: none of its 1 queries is a query of the golden set with a relevant document (its queries: '1'; the golden set's: 'q1'); nothing would be compared: is it the right file?

    Raises:
        CalibrationError: naming the measure or the run.
    """
    grades = [int(r) for docs in qrels.values() for r in docs.values()]
    top = max(grades, default=0)
    for name, measure in parsed.items():
        rel = measure.params.get("rel", relevance_level) if "rel" in measure.SUPPORTED_PARAMS else None
        if isinstance(rel, int) and rel > top:
            raise CalibrationError(f"metric {name!r}: relevance level {rel} is above every grade of {label} "
                                   f"(its grades run {min(grades, default=0)}-{top}), so no document could count as "
                                   "relevant; give a level within the scale")
    relevant = _relevant_queries(qrels, relevance_level)

    def some(ids: Iterable[str]) -> str:
        shown = sorted(ids)[:3]
        return ", ".join(repr(q) for q in shown) + (", ..." if len(set(ids)) > 3 else "")

    for run_name, ranked in runs.items():
        if ranked and not relevant & set(ranked):
            raise CalibrationError(
                f"{run_name}: none of its {len(ranked)} queries is a query of {label} with a relevant document "
                f"(its queries: {some(ranked)}; {label}'s: {some(relevant) or 'none'}); nothing would be compared: "
                "is it the right file?")


def _at_level(measure: Any, relevance_level: int) -> Any:
    """``measure`` with ``rel=relevance_level`` when it takes ``rel`` and does not name one."""
    if "rel" in measure.SUPPORTED_PARAMS and "rel" not in measure.params:
        return measure(rel=relevance_level)
    return measure


def _as_computed(measure: Any, grades: Iterable[int]) -> Any:
    """The measure ir-measures' pytrec_eval provider computes for ``measure``."""
    import ir_measures

    if measure.NAME == "nDCG" and measure.params.get("dcg") == "exp-log2" and "gains" not in measure.params:
        gains = {g: (2**g - 1 if g > 0 else 0) for g in sorted(set(grades) | {0})}
        params = {k: v for k, v in measure.params.items() if k != "dcg"}
        return ir_measures.nDCG(**params, gains=gains)
    return measure


def _relevant_queries(qrels: Qrels, relevance_level: int) -> set[str]:
    return {q for q, docs in qrels.items() if any(r >= relevance_level for r in docs.values())}


def _scores(ranked: Ranked, queries: Iterable[str], depth: int | None = None) -> dict[str, dict[str, float]]:
    """Scores that encode the given order exactly: n, n-1, ..., 1 (top ``depth`` only)."""
    queries = list(queries)
    longest = max((len(ranked[q]) for q in queries), default=0)
    if depth is not None:
        longest = min(longest, depth)
    descending = [float(x) for x in range(longest, 0, -1)]
    out: dict[str, dict[str, float]] = {}
    for q in queries:
        docs = ranked[q] if depth is None else ranked[q][:depth]
        out[q] = dict(zip(docs, descending[longest - len(docs) :]))
    return out


def evaluate(qrels: Qrels, ranked: Ranked, metrics: Sequence[str], *, relevance_level: int = RELEVANCE_LEVEL) -> RunScores:
    """Score one ranked run against ``qrels`` with ir-measures (see the module docstring).

    P@2 of a run ``[a, b]`` where only ``b`` is relevant is 1/2; RR is 1/2; Judged@2 counts
    both labelled documents, 2/2:

    >>> s = evaluate({"q": {"a": 0, "b": 1}}, {"q": ["a", "b"]}, ["P@2", "RR", "Judged@2"])
    >>> s.metrics
    {'P@2': 0.5, 'RR': 0.5, 'Judged@2': 1.0}
    """
    return evaluate_many(qrels, {"run": ranked}, metrics, relevance_level=relevance_level)["run"]


def evaluate_many(
    qrels: Qrels, runs: Mapping[str, Ranked], metrics: Sequence[str], *, relevance_level: int = RELEVANCE_LEVEL
) -> dict[str, RunScores]:
    """Score several ranked runs against the same ``qrels`` (qrels are converted once); a
    document counts as relevant from grade ``relevance_level`` (trec_eval's ``-l``)."""
    parsed = parse_metrics(metrics, relevance_level)
    relevant = _relevant_queries(qrels, relevance_level)
    excluded = len(set(qrels) - relevant)
    grades = {int(r) for docs in qrels.values() for r in docs.values()}
    computed = {name: _as_computed(m, grades) for name, m in parsed.items()}
    # Judged@k and gain-mapped nDCG@k get their own evaluator each, fed only the top k (all
    # they read): ir-measures would otherwise put a plain nDCG into a gain-mapped invocation.
    alone = {n: m for n, m in computed.items() if m.NAME == "Judged" or "gains" in m.params}
    others = {n: m for n, m in computed.items() if n not in alone}
    golden = {q: dict(qrels[q]) for q in relevant}
    main = _evaluator(others, golden) if others else None
    by_alone = {n: _evaluator({n: m}, golden) for n, m in alone.items()}
    results = {}
    for run_name, ranked in runs.items():
        scored = sorted(relevant & set(ranked))
        per_query: dict[str, dict[str, float]] = {q: {} for q in scored}
        if main is not None:
            # Providers hand back the measure objects they were given: look them up by identity
            # (a measure's hash is its repr, built anew on every call).
            by_id = {id(m): n for n, m in others.items()}
            by_repr = {repr(m): n for n, m in others.items()}
            for metric in main.iter_calc(_scores(ranked, scored)):
                # Some providers also report golden queries the run lacks: trec_eval (without
                # -c) leaves those out, and so do we (they are counted as ``missing``).
                if metric.query_id in per_query:
                    name = by_id.get(id(metric.measure)) or by_repr[repr(metric.measure)]
                    per_query[metric.query_id][name] = float(metric.value)
        for name, evaluator in by_alone.items():
            cutoff = alone[name].params.get("cutoff")
            depth = cutoff if isinstance(cutoff, int) else None
            for metric in evaluator.iter_calc(_scores(ranked, scored, depth)):
                if metric.query_id in per_query:
                    per_query[metric.query_id][name] = float(metric.value)
        ordered = {q: {n: v[n] for n in parsed if n in v} for q, v in per_query.items()}
        means = {n: _aggregate(parsed[n], [v[n] for v in ordered.values() if n in v]) for n in parsed}
        unknown = tuple(sorted(set(ranked) - set(qrels)))
        results[run_name] = RunScores(means, ordered, excluded, len(relevant - set(ranked)), unknown, len(scored),
                                      relevance_level)
    return results


def _evaluator(measures: Mapping[str, Any], qrels: Qrels) -> Any:
    """ir-measures' evaluator for ``measures``; a measure no installed provider computes is named."""
    import ir_measures

    try:
        return ir_measures.evaluator(list(measures.values()), qrels)
    except (ValueError, RuntimeError):
        for name, measure in measures.items():
            try:
                ir_measures.evaluator([measure], qrels)
            except (ValueError, RuntimeError) as exc:
                raise CalibrationError(f"metric {name!r}: no installed ir-measures provider computes it ({exc})") from None
        raise


def _aggregate(measure: Any, values: Sequence[float]) -> float:
    """The measure's own aggregate (the mean, or e.g. a geometric mean) over queries."""
    agg = measure.aggregator()
    for v in values:
        agg.add(v)
    return float(agg.result()) if values else math.nan

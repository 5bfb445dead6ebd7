"""Judge-assisted evaluation: plan a designed sample of the pool for people, then score runs
from the judge's labels on the whole pool corrected by the people's labels on the sample.

The service layer between the store (:mod:`labeler.store.samples`: SQL only) and the
estimators (:mod:`calibration.judge_assisted`). Metric values on full label sets (the judge's
everywhere, the people's on labelled queries) come from ir-measures
(:func:`calibration.metrics.evaluate_many`); only the estimation under the sample is ours.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from calibration import CalibrationError
from calibration.judge_assisted import (Combined, Design, interval, poisson_sample, query_level, query_sample, refused,
                                        run_positions, stratified_estimates, stratified_metric, stratified_probabilities)
from calibration.metrics import evaluate_many, parse_metrics
from calibration.stats import z_for
from labeler.project import parse_golden
from labeler.retrieval.golden_set import run_names, verified_rows
from labeler.store import connect
from labeler.store import samples as store
from labeler.store.errors import StoreError
from labeler.store.versions import current_labels
from labeler.store.vocabulary import RELEVANCE_LEVEL, Caller
from pooling.ranked_runs import read_ranked_run


@dataclass(frozen=True, slots=True)
class PlannedSample:
    """A stored sample and what it asks of people."""

    name: str
    design: str
    judge: str | None
    items: list[tuple[str, str, float]]  # query_id, doc_id, inclusion probability
    pool_entries: int
    queries: int
    labelled_queries: int

    def as_dict(self) -> dict[str, Any]:
        """``{"sample", "design", "judgments", "items": [{"query_id", "doc_id", "probability"}], ...}``."""
        return {"sample": self.name, "design": self.design, "judgments": len(self.items),
                "items": [{"query_id": q, "doc_id": d, "probability": p} for q, d, p in self.items],
                "judge": self.judge, "pool_entries": self.pool_entries, "queries": self.queries,
                "labelled_queries": self.labelled_queries}


def plan_sample(
    db: sqlite_utils.Database, name: str, *, design: str = "queries", share: float | None = None,
    budget: int | None = None, judge: str | None = None, seed: int = 0, caller: Caller,
) -> PlannedSample:
    """Draw and store sample ``name`` of the pool: ``share`` of it or ``budget`` judgments.

    ``queries``: ``round(share · Q)`` queries (at least 2), or as many whole queries, in a
    random order, as fit ``budget``; every pool entry of each. ``stratified``: Poisson sampling
    with :func:`calibration.judge_assisted.stratified_probabilities` (the judge's grades shape
    the strata when ``judge`` is given; entries it has no grade for count as unsure).

    Raises:
        StoreError: an empty pool, a bad share or budget, an unknown judge, a taken name.
        CalibrationError: a budget too small for the design.
    """
    if (share is None) == (budget is None):
        raise StoreError("give either a share of the pool (--share) or a number of judgments (--budget)")
    if share is not None and not 0 < share <= 1:
        raise StoreError(f"--share {share}: give a share in (0, 1]")
    if budget is not None and budget < 1:
        raise StoreError(f"--budget {budget}: give 1 or more judgments")
    entries = store.pool_entries(db, caller=caller)
    if not entries:
        raise StoreError("the pool is empty: build it first (goldpool build-pool)")
    grades = store.relevance_grades(db, judge, caller=caller) if judge else None
    rng = np.random.default_rng(seed)
    queries = list(dict.fromkeys(e.query_id for e in entries))
    target = budget if budget is not None else share * len(entries)
    if design == "queries":
        if share is not None:
            labelled = min(len(queries), max(2, round(share * len(queries))))
            chosen = query_sample(len(queries), labelled, rng)
        else:
            chosen = _whole_queries(entries, queries, budget, rng)  # type: ignore[arg-type]
            labelled = int(chosen.sum())
        probability = labelled / len(queries)
        picked = {queries[i] for i in np.flatnonzero(chosen)}
        items = [(e.query_id, e.doc_id, probability) for e in entries if e.query_id in picked]
    elif design == "stratified":
        judge_grade = None if grades is None else np.array([grades.get((e.query_id, e.doc_id), 1) for e in entries])
        p = stratified_probabilities(judge_grade, np.array([e.best_rank for e in entries]), float(target))
        drawn = poisson_sample(p, rng)
        items = [(e.query_id, e.doc_id, float(pi)) for e, pi, hit in zip(entries, p, drawn, strict=True) if hit]
        labelled = len({q for q, _, _ in items})
    else:
        raise StoreError(f"design {design!r}: choose from queries, stratified")
    params = {"share": share, "budget": budget, "pool_entries": len(entries), "queries": len(queries)}
    store.save_sample(db, name, design, judge, seed, params, items, caller=caller)
    return PlannedSample(name, design, judge, items, len(entries), len(queries), labelled)


def _whole_queries(entries: Sequence[Any], queries: Sequence[str], budget: int, rng: np.random.Generator) -> np.ndarray:
    """Per query, whether it is in the sample: whole queries, in a random order, while they fit
    ``budget`` judgments.

    Raises:
        CalibrationError: fewer than two whole queries fit.
    """
    sizes = {q: 0 for q in queries}
    for e in entries:
        sizes[e.query_id] += 1
    order = rng.permutation(len(queries))
    chosen = np.zeros(len(queries), dtype=bool)
    spent = 0
    for i in order:
        if spent + sizes[queries[i]] <= budget:
            chosen[i] = True
            spent += sizes[queries[i]]
    if chosen.sum() < 2:
        raise CalibrationError(f"--budget {budget}: fewer than two whole queries fit it (a query-level "
                               "sample needs two labelled queries); give a larger budget")
    return chosen


# --- estimates --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Inputs:
    """Everything an estimate reads, gathered once."""

    design: str
    sample: str
    judge: str
    golden: str
    content_hash: str | None
    entries: list[tuple[str, str]]  # pool entries, queries in import order
    best_rank: list[int]  # per pool entry, its best rank in any source (0: none)
    probability: dict[tuple[str, str], float]  # sampled entries
    people: dict[tuple[str, str], int]  # the people's grade of every sampled entry
    judge_grades: dict[tuple[str, str], int]
    runs: dict[str, dict[str, list[str]]]


def _open(spec: str) -> tuple[sqlite_utils.Database, str]:
    base, version = parse_golden(spec)
    if version is None:
        raise StoreError(f"{spec}: judge-assisted evaluation reads DB@VERSION (the project holds the pool, the "
                         "judge's verdicts and the sample), not a qrels file")
    return connect(base), version


def gather(spec: str, run_paths: Sequence[str | Path], judge: str, sample: str, *, caller: Caller) -> Inputs:
    """Read the pool, the sample, the judge's grades, the version's grades of the sampled
    entries and the runs.

    Raises:
        StoreError: no such version, sample or judge; sampled entries without a label in
            the version (label them and freeze again).
        PoolingError: a bad run file.
    """
    db, version_name = _open(spec)
    try:
        version, rows = verified_rows(db, version_name, caller=caller)
        drawn = store.get_sample(db, sample, caller=caller)
        graded = {(r.query_id, r.doc_id): r.relevance for r in rows}
        missing = [item for item in drawn.items if item not in graded]
        if missing:
            raise StoreError(_unfinished(spec, version_name, sample, len(drawn.items), missing,
                                         store.unlabelled_holders(db, missing, caller=caller)))
        grades = store.relevance_grades(db, judge, caller=caller)
        pool = store.pool_entries(db, caller=caller)
    finally:
        db.close()
    entries = [(e.query_id, e.doc_id) for e in pool]
    people = {item: graded[item] for item in drawn.items}
    runs = {name: read_ranked_run(p) for name, p in zip(run_names(run_paths), run_paths, strict=True)}
    return Inputs(drawn.design, sample, judge, spec, version.content_hash, entries, [e.best_rank for e in pool],
                  dict(drawn.items), people, grades, runs)


def _unfinished(spec: str, version: str, sample: str, size: int, missing: Sequence[tuple[str, str]],
                holders: Any) -> str:
    """Why a sample cannot be estimated from yet: its entries the version has no label for,
    who holds them unlabelled (``holders``: :func:`labeler.store.samples.unlabelled_holders`)
    and how to hand them on."""
    q, d = missing[0]
    text = (f"{spec}: {len(missing)} of the {size} entries of sample {sample!r} have no label in version "
            f"{version!r} (first: {q}/{d}); label them and freeze a new version")
    where = []
    if holders.held:
        where.append(f"{holders.held_entries} unlabelled in the queue of "
                     + ", ".join(f"{name} ({n})" for name, n in holders.held.items()))
    if holders.labelled:
        where.append(f"{holders.labelled} labelled since {version} was frozen")
    if holders.unassigned:
        where.append(f"{holders.unassigned} handed out to nobody yet")
    text += ". Of them: " + "; ".join(where)
    if holders.held:
        db = parse_golden(spec)[0]
        text += (f". To hand an annotator's unlabelled entries to whoever asks next: goldpool release {shlex.quote(db)} "
                 f"{shlex.quote(next(iter(holders.held)))}")
    return text


def _qrels(items: dict[tuple[str, str], int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (q, d), g in items.items():
        out.setdefault(q, {})[d] = g
    return out


def _judge_qrels(inputs: Inputs) -> dict[str, dict[str, int]]:
    """The judge's grade on every pool entry; an entry it has no grade for is graded 0 (any
    prediction keeps the estimate valid; a missing one is a poor prediction)."""
    return _qrels({e: inputs.judge_grades.get(e, 0) for e in inputs.entries})


def estimate(
    inputs: Inputs, metrics: Sequence[str], *, relevance_level: int = RELEVANCE_LEVEL, baseline: str | None = None,
    seed: int = 0, ci: float = 0.95,
) -> dict[str, dict[str, Any]]:
    """RUN -> METRIC -> :class:`calibration.judge_assisted.Combined`, of each run's metric,
    or (with ``baseline``, a run name) of each other run's difference from the baseline."""
    parsed = parse_metrics(metrics, relevance_level)
    judge_scores = evaluate_many(_judge_qrels(inputs), inputs.runs, list(parsed), relevance_level=relevance_level)
    n_people, n_judge = len(inputs.people), sum(1 for e in inputs.entries if e in inputs.judge_grades)
    if inputs.design == "queries":
        people_scores = evaluate_many(_qrels(inputs.people), inputs.runs, list(parsed), relevance_level=relevance_level)
        return _query_design(inputs, parsed, judge_scores, people_scores, n_people, n_judge, baseline, ci)
    return _stratified_design(inputs, parsed, judge_scores, n_people, n_judge, relevance_level, baseline, seed, ci)


def _query_design(inputs, parsed, judge_scores, people_scores, n_people, n_judge, baseline, ci):
    labelled = {q for q, _ in inputs.people}
    queries = list(dict.fromkeys(q for q, _ in inputs.entries))
    names = [r for r in inputs.runs if r != baseline]
    out: dict[str, dict[str, Any]] = {}
    for run in names:
        out[run] = {}
        for metric in parsed:
            def value(scores, r, q):
                v = scores[r].per_query.get(q, {}).get(metric)
                return None if v is None or math.isnan(v) else v

            def pair(scores, q):
                a = value(scores, run, q)
                if baseline is None:
                    return a
                b = value(scores, baseline, q)
                return None if a is None or b is None else a - b

            # A labelled query without a relevant entry for people is left out (as in a full
            # evaluation); the judge's value of a query it finds nothing relevant in is 0.
            ys, fl, fu = [], [], []
            for q in queries:
                f = pair(judge_scores, q)
                if q in labelled:
                    y = pair(people_scores, q)
                    if y is not None:
                        ys.append(y)
                        fl.append(0.0 if f is None else f)
                elif q in inputs.runs[run] and (baseline is None or q in inputs.runs[baseline]):
                    fu.append(0.0 if f is None else f)
            bounds = (0.0, 1.0) if baseline is None else (-1.0, 1.0)
            out[run][metric] = query_level(ys, fl, fu, bounds=bounds, ci=ci, n_people=n_people, n_judge=n_judge)
    return out


def _stratified_design(inputs, parsed, judge_scores, n_people, n_judge, relevance_level, baseline, seed, ci):
    queries = list(dict.fromkeys(q for q, _ in inputs.entries))
    qi = {q: i for i, q in enumerate(queries)}
    index = {(qi[q], d): i for i, (q, d) in enumerate(inputs.entries)}
    sampled = np.array([e in inputs.probability for e in inputs.entries])
    design = Design(
        query=np.array([qi[q] for q, _ in inputs.entries]),
        judge=np.clip(np.array([inputs.judge_grades.get(e, 0) for e in inputs.entries]), 0, 3),
        sampled=sampled,
        probability=np.array([inputs.probability.get(e, 1.0) for e in inputs.entries]),
        people=np.clip(np.array([inputs.people.get(e, 0) for e in inputs.entries]), 0, 3),
        n_queries=len(queries),
        rank=np.array(inputs.best_rank, dtype=np.int64),
    )
    out: dict[str, dict[str, Any]] = {r: {} for r in inputs.runs if r != baseline}
    for metric, measure in parsed.items():
        spec = stratified_metric(metric, measure, relevance_level)
        if isinstance(spec, str):
            for run in out:
                j = judge_scores[run].metrics.get(metric, math.nan)
                if baseline is not None:
                    j = j - judge_scores[baseline].metrics.get(metric, math.nan)
                out[run][metric] = refused(spec, j, n_people, n_judge, "difference estimator (stratified)")
            continue
        positions = {
            r: run_positions(design, index, {qi[q]: docs for q, docs in ranking.items() if q in qi}, spec.k)
            for r, ranking in inputs.runs.items()
        }
        combined = stratified_estimates(design, positions, spec, seed=seed, judge=True)
        alone = stratified_estimates(design, positions, spec, seed=seed, judge=False)
        bounds = (0.0, 1.0) if baseline is None else (-1.0, 1.0)
        for run in out:
            c, h = combined[run], alone[run]
            j = judge_scores[run].metrics.get(metric, math.nan)
            if baseline is not None:
                c, h = c - combined[baseline], h - alone[baseline]
                j = j - judge_scores[baseline].metrics.get(metric, math.nan)
            value, low, high = interval(c, ci, bounds)
            p_value, p_low, p_high = interval(h, ci, bounds)
            out[run][metric] = Combined(value, low, high, j, p_value, p_low, p_high, n_people, n_judge,
                                        "difference estimator (stratified)")
    return out


# --- planning ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BudgetPlan:
    """Human judgments for an interval of full width ``width`` on a mean of per-entry grades."""

    judge: str
    width: float
    pairs: int
    sd_people: float
    sd_residual: float
    people_alone: int
    with_judge: int
    basis: str

    def as_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "width": self.width, "pairs": self.pairs, "sd_people": self.sd_people,
                "sd_residual": self.sd_residual, "people_alone": self.people_alone, "with_judge": self.with_judge,
                "ratio": (self.with_judge / self.people_alone) if self.people_alone else None, "basis": self.basis}


def plan_budget(db: sqlite_utils.Database, judge: str, width: float, *, ci: float = 0.95, caller: Caller) -> BudgetPlan:
    """From the entries both people and ``judge`` graded so far: the judgments a people-only
    sample needs for a 95% interval of full width ``width`` on a mean grade (``(2 z σ_y / W)²``),
    and what the judge-assisted estimate needs (``(2 z σ_e / W)²``, ``e`` the people's grade
    minus the judge's grade calibrated to them: the mean of the people's grades per judge grade).

    Raises:
        StoreError: no such judge, a width not above 0, fewer than 10 entries graded by both.
    """
    if not width > 0:
        raise StoreError(f"--width {width}: give the full width of the interval, above 0 (0.1 = ±0.05)")
    grades = store.relevance_grades(db, judge, caller=caller)
    people: dict[tuple[str, str], list[int]] = {}
    for lab in current_labels(db, caller=caller):
        people.setdefault((lab.query_id, lab.doc_id), []).append(lab.relevance)
    both = [(float(np.mean(v)), grades[k]) for k, v in people.items() if k in grades]
    if len(both) < 10:
        raise StoreError(f"judge {judge!r} and people have graded {len(both)} entries in common; the plan needs at "
                         "least 10 (label some of the judged pool first)")
    y = np.array([b[0] for b in both])
    f = np.array([b[1] for b in both])
    calibrated = np.array([y[f == g].mean() for g in f])
    sd_y, sd_e = float(np.std(y, ddof=1)), float(np.std(y - calibrated, ddof=1))
    z = z_for(ci)
    need = lambda sd: max(2, math.ceil((2 * z * sd / width) ** 2))  # noqa: E731
    return BudgetPlan(judge, width, len(both), sd_y, sd_e, need(sd_y), need(sd_e),
                      "a mean of per-entry grades; run metrics (nDCG@10) scale alike when the judge's errors are "
                      "spread evenly over ranks")

"""Calibrate judges against the project's people: read the store, call ``calibration.judges``.

Per judge and task: relevance compares the judge's grades of pool entries with the annotators'
current grades (``judgments``), every other task its verdicts with the annotators' current
verdicts (``human_verdicts``). Items are grouped for the cluster bootstrap by query: the
query_id of a pool entry, the question text of a verdict item. The power statement uses
the project's size: its pool queries for relevance, its items for the other tasks.

On claims, a person may flag a claim as not one checkable claim (``NOT_ONE_CLAIM``): that
judges how the answer was split, and a judge is never asked it, so a claim any person flagged
is left out of the comparison and of the human ceiling (both stand on the same claims), and the
report says how many.

The report is data (:func:`to_dict`); its text, Markdown and HTML are
:mod:`calibration.report_judges`'s, built from that data.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlite_utils

from calibration.judges import KAPPA_WEIGHTS, calibrate_task, combine_orders
from labeler.judges import JudgeError
from labeler.judges.nugget_calibration import NuggetJudgeCalibration, nugget_calibration
from labeler.judges.repeats import task_retest
from labeler.store.corpus import pooled_query_count
from labeler.store.labels import latest_judgments
from labeler.store.verdicts import JudgeVerdict, latest_human_verdicts, latest_judge_verdicts, list_items
from labeler.store.vocabulary import GRADES, JUDGE_VERDICTS, NOT_ONE_CLAIM, RELEVANCE_LEVEL, TASKS, Caller


@dataclass(frozen=True, slots=True)
class JudgeReport:
    """Every task of every judge asked for: ``results[judge][task]``."""

    results: dict[str, dict[str, Any]]  # TaskCalibration per task
    n_boot: int
    seed: int | None
    prompts: dict[str, dict[str, list[str]]]  # prompt hashes behind each judge's verdicts, per task
    relevance_level: int = RELEVANCE_LEVEL  # relevance task: the grade from which a label counts as relevant
    models: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # models behind each judge's verdicts, per task
    flagged: dict[str, dict[str, int]] = field(default_factory=dict)  # claims left out: a person flagged them NOT_ONE_CLAIM
    retest: dict[str, dict[str, Any]] = field(default_factory=dict)  # Retest per judge and task (tasks with repeats)
    nuggets: dict[str, NuggetJudgeCalibration] = field(default_factory=dict)  # run level: order of systems, nuggetizer

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (see :func:`to_dict`)."""
        return to_dict(self)


def _cost(rows: Sequence[JudgeVerdict]) -> tuple[list[int], list[float]]:
    tokens = [(r.tokens_in or 0) + (r.tokens_out or 0) for r in rows if r.tokens_in is not None or r.tokens_out is not None]
    seconds = [r.latency for r in rows if r.latency is not None]
    return tokens, seconds


def task_inputs(db: sqlite_utils.Database, task: str, rows: Sequence[JudgeVerdict], caller: Caller) -> tuple[dict, dict, dict]:
    """What a judge is compared with people on: ``(humans, judge, groups)`` as
    :func:`calibration.judges.calibrate_task` takes them (people's current labels by item and
    annotator, the judge's label by item, each item's cluster: its query, or its question's hash;
    a pairwise item's two orders combined, a flip a tie)."""
    if task == "relevance":
        humans: dict = defaultdict(dict)
        for j in latest_judgments(db, caller=caller):  # type: ignore[arg-type]
            humans[(j.query_id, j.doc_id)][j.annotator] = j.relevance
        judge = {(r.query_id, r.doc_id): (None if r.verdict is None else int(r.verdict)) for r in rows}
        return humans, judge, {key: key[0] for key in judge}
    judge, _ = _item_verdicts(task, rows)
    items = {i.item_id: i for i in list_items(db, task)}
    return _item_humans(db, task, caller), judge, {k: hashlib.sha256(items[k].question.encode()).hexdigest()[:12] for k in judge}


def _item_humans(db: sqlite_utils.Database, task: str, caller: Caller) -> dict[str, dict[str, str]]:
    humans: dict[str, dict[str, str]] = defaultdict(dict)
    flagged = flagged_claims(db, caller) if task == "claims" else set()
    for v in latest_human_verdicts(db, caller=caller):
        if v.kind == task and v.item_id not in flagged:
            humans[v.item_id][v.annotator] = v.verdict
    return humans


def _item_verdicts(task: str, rows: Sequence[JudgeVerdict]) -> tuple[dict, dict]:
    """The judge's verdict per item (pairwise: both orders combined) and a pairwise item's two orders."""
    by_item: dict[str, dict[str | None, str | None]] = defaultdict(dict)
    for r in rows:
        by_item[r.item_id][r.shown_order] = r.verdict  # type: ignore[index]
    judge: dict[str, str | None] = {}
    orders: dict[str, tuple[str | None, str | None]] = {}
    for item_id, got in by_item.items():
        if task != "pairwise" or not ("AB" in got or "BA" in got):
            judge[item_id] = got.get(None)
            continue
        both = "AB" in got and "BA" in got
        judge[item_id] = combine_orders(got.get("AB"), got.get("BA"), asked_both=both)
        if both:
            orders[item_id] = (got["AB"], got["BA"])
    return judge, orders


def _relevance(db: sqlite_utils.Database, rows: list[JudgeVerdict], caller: Caller, options: dict[str, Any],
               relevance_level: int = RELEVANCE_LEVEL):
    humans, judge, groups = task_inputs(db, "relevance", rows, caller)
    n_queries = pooled_query_count(db)
    tokens, seconds = _cost(rows)
    return calibrate_task("relevance", humans, judge, groups, n_project=n_queries, unit="queries", scale=tuple(GRADES),
                          n_failed=sum(r.error is not None for r in rows), tokens=tokens, seconds=seconds,
                          relevance_level=relevance_level, **options)


def flagged_claims(db: sqlite_utils.Database, caller: Caller) -> set[str]:
    """The claims some person flagged as not one checkable claim (their latest verdict)."""
    return {v.item_id for v in latest_human_verdicts(db, caller=caller) if v.kind == "claims" and v.verdict == NOT_ONE_CLAIM}


def _items(db: sqlite_utils.Database, task: str, rows: list[JudgeVerdict], caller: Caller, options: dict[str, Any]):
    items = {i.item_id: i for i in list_items(db, task)}
    humans = _item_humans(db, task, caller)
    judge, orders = _item_verdicts(task, rows)
    groups = {k: hashlib.sha256(items[k].question.encode()).hexdigest()[:12] for k in judge}
    tokens, seconds = _cost(rows)
    extra: dict[str, Any] = {}
    if task == "pairwise":
        extra = {
            "orders": orders,
            "lengths": {k: (len(items[k].response_a.split()), len(items[k].response_b.split())) for k in judge},
            "models": {k: (items[k].model_a, items[k].model_b) for k in judge},
            "judge_model": next((r.model for r in rows if r.model), ""),
        }
    return calibrate_task(task, humans, judge, groups, n_project=len(items), unit="items", scale=JUDGE_VERDICTS[task],
                          n_units=len(rows), n_unparseable=sum(r.verdict is None for r in rows),
                          n_failed=sum(r.error is not None for r in rows),
                          tokens=tokens, seconds=seconds, **extra, **options)


def judge_report(
    db: sqlite_utils.Database, judges: Sequence[str], *, caller: Caller, n_boot: int = 2000, seed: int | None = 0,
    relevance_level: int = RELEVANCE_LEVEL,
) -> JudgeReport:
    """Each judge against the project's people on every task it has verdicts for (admin only);
    on relevance, the sensitivity and specificity count a grade >= ``relevance_level`` relevant.

    Raises:
        JudgeError: a judge with no verdict in the project.
    """
    options = {"n_boot": n_boot, "seed": seed}
    retest: dict[str, dict[str, Any]] = {}
    results: dict[str, dict[str, Any]] = {}
    prompts: dict[str, dict[str, list[str]]] = {}
    models: dict[str, dict[str, list[str]]] = {}
    flagged: dict[str, dict[str, int]] = {}
    nuggets: dict[str, NuggetJudgeCalibration] = {}
    for name in judges:
        rows = latest_judge_verdicts(db, name, caller=caller)
        run_level = nugget_calibration(db, name, n_boot=n_boot, seed=seed, caller=caller)
        if run_level is not None:
            nuggets[name] = run_level
        if not rows and run_level is None:
            raise JudgeError(f"judge {name!r} has no verdict in this project (run-judge or import-verdicts --judge first)")
        by_task: dict[str, list[JudgeVerdict]] = defaultdict(list)
        for r in rows:
            by_task[r.task].append(r)
        results[name] = {}
        retest[name] = task_retest(db, name, caller=caller, n_boot=n_boot, seed=seed)
        prompts[name] = {task: sorted({r.prompt_hash for r in got}) for task, got in by_task.items()}
        models[name] = {task: sorted({r.model for r in got}) for task, got in by_task.items()}
        if "claims" in by_task:
            judged = {r.item_id for r in by_task["claims"]}
            flagged[name] = {"claims": len(flagged_claims(db, caller) & judged)}
        for task in TASKS:
            if task in by_task:
                results[name][task] = (_relevance(db, by_task[task], caller, options, relevance_level) if task == "relevance"
                                        else _items(db, task, by_task[task], caller, options))
    return JudgeReport(results, n_boot, seed, prompts, relevance_level, models, flagged, retest, nuggets)


# --- output ----------------------------------------------------------------------------------


def _est(e) -> dict[str, Any] | None:
    return None if e is None else e.as_dict()


def _rates(r) -> dict[str, Any] | None:
    return None if r is None else {"judge": r.judge.as_dict(), "human": r.human.as_dict(), "difference": r.difference.as_dict(),
                                   "n_excluded": r.n_excluded}


def task_dict(t) -> dict[str, Any]:
    """One task's calibration as JSON-ready data; each statistic is ``{value, low, high, n}``.

    ``unparseable_rate`` counts every reply without a usable verdict: unparseable, or a call that
    failed after its retries (``failed_calls`` of them).
    """
    position = t.pairwise.position if t.pairwise else None
    out: dict[str, Any] = {
        "n": t.n_items,
        "n_pairs": t.n_pairs,
        "agreement": _est(t.agreement),
        "kappa": _est(t.kappa),
        "kappa_weights": KAPPA_WEIGHTS.get(t.task, "none"),
        "kappa_unweighted": _est(t.kappa_unweighted),
        "position_consistency": _est(position.consistency) if position else None,
        "first_slot_preference": _est(position.first_slot_preference) if position else None,
        "majority_baseline": _est(t.majority_baseline),
        "human_ceiling": {"n": t.n_ceiling_items, "agreement": _est(t.ceiling_agreement), "kappa": _est(t.ceiling_kappa)},
        "unparseable_rate": _est(t.unparseable),
        "failed_calls": t.n_failed,
        "tokens_per_verdict": t.tokens_per_verdict,
        "seconds_per_verdict": t.seconds_per_verdict,
    }
    if t.pairwise is not None:
        out["position"] = None if position is None else {"wins_a": position.wins_1, "wins_b": position.wins_2,
                                                         "flips": position.ties, "n_excluded": position.n_excluded}
        out["verbosity"] = _rates(t.pairwise.verbosity)
        out["self_preference"] = _rates(t.pairwise.self_preference)
        out["judge_family"] = t.pairwise.judge_family
    # Present without a compared item too (null, empty), so the keys never depend on the counts.
    out["confusion"] = None if t.confusion is None else {
        "labels": list(t.confusion.labels), "table": t.confusion.table.tolist(), "rows": "people", "columns": "judge"}
    out["per_class"] = [{"label": c.label, "support": c.support, "precision": c.precision.as_dict(),
                         "recall": c.recall.as_dict()} for c in t.classes]
    p = t.power
    out["power"] = {"n": p.n, "unit": p.unit, "sensitivity": p.sensitivity, "specificity": p.specificity, "positive": p.positive,
                    "mdd_judge": p.mdd_judge, "mdd_people": p.mdd_people, "sentence": p.sentence()}
    out["disagreements"] = [_disagreement(d) for d in t.disagreements]
    return out


def _disagreement(d: dict[str, Any]) -> dict[str, Any]:
    key = d["item"]
    where = {"query_id": key[0], "doc_id": key[1]} if isinstance(key, tuple) else {"item_id": key}
    return {**where, "annotator": d["annotator"], "human": d["human"], "judge": d["judge"]}


def to_dict(report: JudgeReport) -> dict[str, Any]:
    """``{"judges": {NAME: {TASK: {...}}}, "n_boot", "seed", "relevance_level", "nuggets": {NAME:
    {"order": {SCORE: tau}, "systems", "nuggetizer"}}}``."""
    return {"judges": {name: {task: {**task_dict(t), "retest": retest_dict(report, name, task),
                                     "prompt_hashes": report.prompts[name][task],
                                     "models": report.models.get(name, {}).get(task, []),
                                     **({"n_flagged_left_out": report.flagged.get(name, {}).get(task, 0)} if task == "claims" else {})}
                              for task, t in tasks.items()}
                       for name, tasks in report.results.items()},
            "n_boot": report.n_boot, "seed": report.seed, "relevance_level": report.relevance_level,
            "nuggets": {name: c.as_dict() for name, c in report.nuggets.items()}}


def retest_dict(report: JudgeReport, name: str, task: str) -> dict[str, Any]:
    """The judge's agreement with itself on ``task`` (:class:`calibration.retest.Retest`): κ and
    flip rate over pairs of repeats; with one call an item, ``repeats`` 1 and nulls."""
    r = report.retest.get(name, {}).get(task)
    if r is not None:
        return r.as_dict()
    return {"repeats": 1, "n": 0, "n_pairs": 0, "kappa": None, "kappa_weights": KAPPA_WEIGHTS.get(task, "none"),
            "agreement": None, "flip_rate": None, "ties": 0}

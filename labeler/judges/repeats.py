"""The verdict of K repeated calls, and a judge's agreement with itself over its repeats.

K calls of one unit (``run-judge --repeats K``) make one verdict: the majority of the replies
that hold a verdict (:func:`calibration.retest.majority`). A tie is a tie: a pairwise verdict
``TIE`` (neither response is better, as when the two orders disagree), on every other task no
verdict (the unit is counted as tied, beside the unparseable). A unit one of whose calls
failed is a failed call (retried by the next run, the repeats that arrived coming from the
cache). The verdict's tokens and seconds are the sums over its K calls: what it cost.

Every command that reads the judge's verdicts (calibration, answer metrics, estimates, eval,
the gate) reads these combined verdicts; the judge's card line says so
(:func:`labeler.judges.card.card_line`).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import sqlite_utils

from calibration.judges import KAPPA_WEIGHTS
from calibration.retest import Retest, majority, retest_agreement
from labeler.store.judge_calls import repeat_verdicts
from labeler.store.verdicts import CallResult, list_items
from labeler.store.vocabulary import GRADES, JUDGE_VERDICTS, Caller


def _sum(values: Sequence[int | float | None]) -> Any:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def combine(task: str, results: Sequence[CallResult]) -> tuple[CallResult, bool]:
    """The verdict of a unit's repeats (see the module docstring) and whether they tied.

    >>> r = lambda v: CallResult(v, v, v is not None, 10, 1, 0.5)
    >>> [(c.verdict, tied) for c, tied in (combine("faithfulness", [r("SUPPORTED"), r("SUPPORTED"), r("UNSUPPORTED")]),
    ...                                    combine("faithfulness", [r("SUPPORTED"), r("UNSUPPORTED")]),
    ...                                    combine("pairwise", [r("A"), r("B")]))]
    [('SUPPORTED', False), (None, True), ('TIE', True)]
    """
    tokens_in = _sum([r.tokens_in for r in results])
    tokens_out = _sum([r.tokens_out for r in results])
    latency = _sum([r.latency for r in results])
    failed = next((r for r in results if r.error is not None), None)
    if failed is not None:
        return CallResult(None, None, False, tokens_in, tokens_out, latency, failed.error), False
    verdict, tied = majority([r.verdict for r in results], tie="TIE" if task == "pairwise" else None)
    carrier = next((r for r in results if verdict is not None and r.verdict == verdict), results[0])
    return CallResult(carrier.raw, verdict, verdict is not None or tied, tokens_in, tokens_out, latency,
                      raw_length=carrier.raw_length), tied


def task_retest(db: sqlite_utils.Database, judge: str, *, caller: Caller, n_boot: int, seed: int | None,
                ci: float = 0.95) -> dict[str, Retest]:
    """Per task, the judge's test-retest agreement over the repeats behind its current verdicts
    (tasks without repeats are left out). Items are grouped as the calibration groups them: a
    pool entry by its query, a verdict item by its question; a pairwise item's two orders are
    two units."""
    by_task: dict[str, dict[tuple, list[str | None]]] = defaultdict(dict)
    for r in repeat_verdicts(db, judge, caller=caller):
        key = (r.item_id, r.query_id, r.doc_id, r.shown_order)
        by_task[r.task].setdefault(key, []).append(None if r.error is not None else r.verdict)
    out = {}
    for task, repeats in by_task.items():
        if task == "relevance":
            groups = {k: k[1] for k in repeats}
            labels: tuple = tuple(str(g) for g in GRADES)
        else:
            questions = {i.item_id: i.question for i in list_items(db, task)}
            groups = {k: hashlib.sha256(questions.get(k[0], "").encode()).hexdigest()[:12] for k in repeats}
            labels = tuple(JUDGE_VERDICTS[task])
        out[task] = retest_agreement(repeats, groups, labels=labels, weights=KAPPA_WEIGHTS.get(task),
                                     tie="TIE" if task == "pairwise" else None, ci=ci, n_boot=n_boot, seed=seed)
    return out

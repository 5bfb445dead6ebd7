"""Two judges (two prompt versions of one judge, or two models) compared on people's labels:
``calibrate --judge A --judge B --paired``.

Per task both judges have verdicts on, :func:`calibration.paired.paired_judges` on the items
both labelled and people labelled: each judge's agreement and kappa with people, and A - B with
a paired cluster bootstrap interval (queries resampled, both judges on the same draw). Kappa is
quadratic for relevance, as in the calibration report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlite_utils

from calibration import CalibrationError
from calibration.paired import PairedJudges, paired_judges
from labeler.judges import JudgeError
from labeler.judges.report import task_inputs
from labeler.store.verdicts import latest_judge_verdicts
from labeler.store.vocabulary import GRADES, JUDGE_VERDICTS, TASKS, Caller


@dataclass(frozen=True, slots=True)
class JudgeComparison:
    """Judge ``a`` against judge ``b`` per task (``tasks``; a task with nothing to compare has its reason in ``skipped``)."""

    a: str
    b: str
    tasks: dict[str, PairedJudges]
    skipped: dict[str, str]
    n_boot: int
    seed: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "tasks": {t: p.as_dict() for t, p in self.tasks.items()},
                "skipped": dict(self.skipped), "n_boot": self.n_boot, "seed": self.seed,
                "interval": "paired cluster bootstrap over queries (the question, for items other than pool entries)"}


def compare_judges(db: sqlite_utils.Database, a: str, b: str, *, caller: Caller, n_boot: int = 2000,
                   seed: int | None = 0) -> JudgeComparison:
    """Judges ``a`` and ``b`` against people on the same items, per task both have (admin only).

    Raises:
        JudgeError: a judge without verdicts, or no task both judges have verdicts on.
    """
    rows = {}
    for name in (a, b):
        rows[name] = latest_judge_verdicts(db, name, caller=caller)
        if not rows[name]:
            raise JudgeError(f"judge {name!r} has no verdict in this project (run-judge or import-verdicts --judge first)")
    common = [t for t in TASKS if any(r.task == t for r in rows[a]) and any(r.task == t for r in rows[b])]
    if not common:
        raise JudgeError(f"judges {a!r} and {b!r} have no task in common: nothing to compare")
    tasks: dict[str, PairedJudges] = {}
    skipped: dict[str, str] = {}
    for task in common:
        humans, judge_a, groups = task_inputs(db, task, [r for r in rows[a] if r.task == task], caller)
        _, judge_b, groups_b = task_inputs(db, task, [r for r in rows[b] if r.task == task], caller)
        labels = tuple(GRADES) if task == "relevance" else JUDGE_VERDICTS[task]
        try:
            tasks[task] = paired_judges(humans, judge_a, judge_b, groups | groups_b, labels=labels,
                                        weights="quadratic" if task == "relevance" else None, n_boot=n_boot, seed=seed)
        except CalibrationError as exc:
            skipped[task] = str(exc)
    return JudgeComparison(a, b, tasks, skipped, n_boot, seed)

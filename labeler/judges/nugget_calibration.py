"""The nugget judge at the run level: does it order systems as people do, and what did people
keep of the nuggets it proposed?

- **Order**: per score (all, vital, strict_all, strict_vital), Kendall's τ between the systems'
  scores from people and from the judge, on the questions where every system has both, with a
  bootstrap interval over questions (:func:`calibration.ranking.ranking_tau`).
- **The nuggetizer**: of the judge's proposals people decided on, the shares kept (accepted as
  proposed), edited (accepted with another text or importance, or merged) and dropped, each with
  a Wilson interval; and the share of people's nuggets on those questions that the judge missed
  (written by people, not taken from a proposal; merged nuggets are neither).

The support assignment itself (weighted κ and agreement with their intervals, beside people's
ceiling) is the ``nuggets`` task of :func:`labeler.judges.report.judge_report`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlite_utils

from calibration import CalibrationError
from calibration.bootstrap import Estimate, wilson_interval
from calibration.ranking import ranking_tau
from labeler.generation.nuggets import METRICS, nugget_metrics, unit_values
from labeler.store import nugget_proposals as proposals_store
from labeler.store import nuggets as store
from labeler.store.errors import StoreError
from labeler.store.nugget_support import support_labels
from labeler.store.vocabulary import Caller


def _share(k: int, n: int, name: str, ci: float = 0.95) -> Estimate:
    low, high = wilson_interval(k, n, ci)
    return Estimate(name, k / n if n else float("nan"), low, high, n, ci, "wilson")


@dataclass(frozen=True, slots=True)
class NuggetizerShares:
    """What people made of one judge's proposals."""

    proposals: int
    pending: int
    kept: Estimate
    edited: Estimate
    dropped: Estimate
    questions: int  # questions with a decided proposal
    missed: Estimate  # people's own nuggets among all active nuggets of those questions

    def as_dict(self) -> dict[str, Any]:
        return {"proposals": self.proposals, "pending": self.pending, "questions": self.questions,
                **{k: getattr(self, k).as_dict() for k in ("kept", "edited", "dropped", "missed")}}


def nuggetizer_shares(db: sqlite_utils.Database, judge: str, ci: float = 0.95) -> NuggetizerShares | None:
    """The shares of ``judge``'s proposals kept, edited and dropped, and of nuggets it missed;
    None when it proposed nothing."""
    proposals = proposals_store.list_proposals(db, judge=judge)
    if not proposals:
        return None
    decided = [p for p in proposals if p.fate != "pending"]
    questions = {p.query_id for p in decided}
    active = [n for n in store.list_nuggets(db) if n.query_id in questions]
    missed = sum(n.origin == "person" for n in active)
    def count(fate: str) -> int:
        return sum(p.fate == fate for p in decided)

    return NuggetizerShares(len(proposals), len(proposals) - len(decided), _share(count("kept"), len(decided), "kept", ci),
                            _share(count("edited"), len(decided), "edited", ci),
                            _share(count("dropped"), len(decided), "dropped", ci), len(questions),
                            _share(missed, len(active), "missed", ci))


@dataclass(frozen=True, slots=True)
class NuggetJudgeCalibration:
    """One judge's run-level calibration on nuggets."""

    judge: str
    order: dict[str, Estimate | None]  # score -> τ (None: fewer than two systems, or no shared question)
    systems: dict[str, dict[str, tuple[float | None, float | None]]]  # system -> score -> (people, judge)
    why: str | None
    nuggetizer: NuggetizerShares | None

    def as_dict(self) -> dict[str, Any]:
        return {"order": {m: None if e is None else e.as_dict() for m, e in self.order.items()},
                "systems": {s: {m: {"people": p, "judge": j} for m, (p, j) in by.items()} for s, by in self.systems.items()},
                "order_undefined": self.why,
                "nuggetizer": None if self.nuggetizer is None else self.nuggetizer.as_dict()}


def _mean(values: dict[str, float]) -> float | None:
    return sum(values.values()) / len(values) if values else None


def nugget_calibration(db: sqlite_utils.Database, judge: str, *, n_boot: int = 2000, seed: int | None = 0,
                       caller: Caller) -> NuggetJudgeCalibration | None:
    """``judge``'s order of the systems against people's, and its nuggetizer shares; None when
    it neither labelled support nor proposed nuggets."""
    shares = nuggetizer_shares(db, judge)
    labelled = bool(support_labels(db, judge=judge, caller=caller))
    if shares is None and not labelled:
        return None
    try:
        m = nugget_metrics(db, judge=judge if labelled else None, caller=caller)
    except StoreError as exc:
        return NuggetJudgeCalibration(judge, dict.fromkeys(METRICS), {}, str(exc), shares)
    if not labelled:
        return NuggetJudgeCalibration(judge, dict.fromkeys(METRICS), {}, "the judge gave no support verdict", shares)
    order: dict[str, Estimate | None] = {}
    systems: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    why = None
    for metric in METRICS:
        people = {s.system: unit_values(s.people, metric) for s in m.systems}
        judged = {s.system: unit_values(s.judged or [], metric) for s in m.systems}
        for s in m.systems:
            shared = set(people[s.system]) & set(judged[s.system])
            systems.setdefault(s.system, {})[metric] = (
                _mean({u: people[s.system][u] for u in shared}), _mean({u: judged[s.system][u] for u in shared}))
        try:
            order[metric] = ranking_tau(people, judged, n_boot=n_boot, seed=seed)
        except CalibrationError as exc:
            order[metric], why = None, str(exc)
    return NuggetJudgeCalibration(judge, order, systems, why, shares)


"""A jury: several judges (of different model families, against self-preference) combined by
majority into one judge that every command reads like any other (``goldpool jury``).

Per unit (a pool entry, an item, a pairwise item in one order) that every member gave a usable
verdict, the jury's verdict is the members' majority (:func:`calibration.retest.majority`): a
tie is ``TIE`` for pairwise, no verdict elsewhere. The jury is stored as judge ``name`` (model
``jury:A+B+...``, its prompt hash a hash of the members' prompt hashes), so calibrate,
answer-metrics, estimate, eval --judge and the gate read it by its name. Reported beside: the
members' disagreement rate (the share of units on which they do not all agree, Wilson
interval), the units left out (a member without a usable verdict), the ties, and the members'
model families (a jury of one family does not answer self-preference).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from calibration.bootstrap import Estimate, wilson_interval
from calibration.judges import model_family
from calibration.retest import majority
from labeler.judges import JudgeError
from labeler.store.judge_calls import record_jury
from labeler.store.verdicts import Target, latest_judge_verdicts
from labeler.store.vocabulary import Caller


@dataclass(frozen=True, slots=True)
class JuryResult:
    """What ``goldpool jury`` made: per task the units combined, left out, tied, and the members' disagreement."""

    name: str
    members: tuple[str, ...]
    families: dict[str, list[str]]
    tasks: dict[str, dict[str, Any]]
    written: int

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "members": list(self.members), "families": self.families, "tasks": self.tasks,
                "written": self.written}


def make_jury(db: sqlite_utils.Database, name: str, members: Sequence[str], *, caller: Caller,
              ci: float = 0.95) -> JuryResult:
    """Combine ``members`` by majority into judge ``name`` (admin only); see the module docstring.

    Raises:
        JudgeError: fewer than two members, a member without verdicts, ``name`` one of them, or
            no task every member has verdicts on.
    """
    members = tuple(dict.fromkeys(members))
    if len(members) < 2:
        raise JudgeError("a jury needs two judges or more: give --judge A --judge B")
    if name in members:
        raise JudgeError(f"the jury's name {name!r} is one of its members: give it a name of its own")
    votes: dict[tuple, dict[str, str | None]] = defaultdict(dict)
    families, prompts = {}, []
    for member in members:
        rows = latest_judge_verdicts(db, member, caller=caller)
        if not rows:
            raise JudgeError(f"judge {member!r} has no verdict in this project (run-judge or import-verdicts --judge first)")
        families[member] = sorted({model_family(r.model) or "unknown" for r in rows})
        prompts += sorted({r.prompt_hash for r in rows})
        for r in rows:
            votes[(r.task, r.item_id, r.query_id, r.doc_id, r.shown_order)][member] = r.verdict
    model = "jury:" + "+".join(members)
    version = hashlib.sha256("\n".join(prompts).encode()).hexdigest()[:12]
    tasks: dict[str, dict[str, Any]] = {}
    combined: list[tuple[Target, str | None]] = []
    for key, got in sorted(votes.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        t = tasks.setdefault(key[0], {"units": 0, "left_out": 0, "ties": 0, "disagree": 0})
        if len(got) < len(members) or any(v is None for v in got.values()):
            t["left_out"] += 1
            continue
        verdict, tied = majority(list(got.values()), tie="TIE" if key[0] == "pairwise" else None)
        t["units"] += 1
        t["ties"] += tied
        t["disagree"] += len(set(got.values())) > 1
        combined.append((Target(key[0], key[1], key[2], key[3], key[4]), verdict))
    tasks = {task: t for task, t in tasks.items() if t["units"] or t["left_out"]}
    if not combined:
        raise JudgeError(f"no unit every member of the jury judged: {', '.join(members)} share no verdict")
    for t in tasks.values():
        t["disagreement_rate"] = Estimate("disagreement_rate", t["disagree"] / t["units"] if t["units"] else float("nan"),
                                          *wilson_interval(t["disagree"], t["units"], ci), t["units"], ci,
                                          "wilson").as_dict()
    written = record_jury(db, name, model, version, combined, caller=caller)
    return JuryResult(name, members, families, tasks, written)

"""A system's answers against one frozen golden version: the pieces every diagnosis reads.

``DB@VERSION`` names the project and the version (:func:`golden_spec`); the version's qrels are
checked against the content hash stored when it was frozen (:func:`version_qrels`). Each
answer's generation values are people's verdicts, or (with a judge) that judge's where people
gave none, with where each value came from (:func:`answer_values`). A question's answer is the
first by answer_id when a system answered it several times (:func:`by_question`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sqlite_utils

from labeler.generation.outcomes import outcomes
from labeler.project import parse_golden
from labeler.retrieval.golden_set import verified_rows
from labeler.store import answers as store
from labeler.store.vocabulary import Caller


@dataclass(frozen=True, slots=True)
class GoldenSpec:
    """``DB@VERSION`` read apart: the project file and the version name."""

    db_path: str
    version: str

    @property
    def label(self) -> str:
        return f"{self.db_path}@{self.version}"


def golden_spec(spec: str) -> GoldenSpec:
    """The project and version of ``DB@VERSION``.

    Raises:
        StoreError: not of that form, or no such file (answers live in a project, so a qrels
            file cannot stand in).
    """
    base, version = parse_golden(spec, project_for="a project and one of its frozen versions; the answers live "
                                                   "in the project")
    assert version is not None
    return GoldenSpec(base, version)


def version_qrels(db: sqlite_utils.Database, version: str, *, caller: Caller) -> tuple[str, dict[str, dict[str, int]]]:
    """The content hash and the qrels (query -> doc -> grade) of frozen ``version``, checked
    against the hash stored when it was frozen.

    Raises:
        StoreError: no such version, or its rows were altered.
    """
    found, rows = verified_rows(db, version, caller=caller)
    qrels: dict[str, dict[str, int]] = {}
    for r in rows:
        qrels.setdefault(r.query_id, {})[r.doc_id] = r.relevance
    return found.content_hash, qrels


@dataclass(frozen=True, slots=True)
class AnswerValues:
    """One answer's generation values and where each came from (``people``, the judge's name, or None)."""

    answer_id: str
    query_id: str | None
    question: str
    response: str
    reference: str | None
    retrieved_ids: tuple[str, ...]
    abstained: bool
    words: int
    correct: bool | None
    correct_by: str | None
    faithfulness: float | None
    faithfulness_by: str | None


def answer_values(db: sqlite_utils.Database, system: str, *, judge: str | None = None,
                  caller: Caller) -> dict[str, AnswerValues]:
    """answer_id -> :class:`AnswerValues` of every answer of ``system``: people's verdicts, or
    (with ``judge``) that judge's where people gave none.

    Raises:
        StoreError: no such system; the caller is not an admin.
    """
    people = {o.answer_id: o for o in outcomes(db, system, caller=caller)}
    judged = {o.answer_id: o for o in outcomes(db, system, judge=judge, caller=caller)} if judge else {}
    out = {}
    for a in store.list_answers(db, system):
        p, j = people[a.answer_id], judged.get(a.answer_id)
        correct, correct_by = p.correct, "people" if p.correct is not None else None
        if correct is None and j is not None and j.correct is not None:
            correct, correct_by = j.correct, judge
        faith, faith_by = p.faithfulness, "people" if p.faithfulness is not None else None
        if faith is None and j is not None and j.faithfulness is not None:
            faith, faith_by = j.faithfulness, judge
        out[a.answer_id] = AnswerValues(a.answer_id, a.query_id, a.question, a.response, a.reference, a.retrieved_ids,
                                        p.abstained, p.words, correct, correct_by, faith, faith_by)
    return out


def by_question(values: Mapping[str, AnswerValues], queries: Sequence[str] | set[str]) -> dict[str, AnswerValues]:
    """query_id -> the answer to it (the first by answer_id), for the answers linked to ``queries``."""
    out: dict[str, AnswerValues] = {}
    for answer_id in sorted(values):
        v = values[answer_id]
        if v.query_id is not None and v.query_id in queries and v.query_id not in out:
            out[v.query_id] = v
    return out


def relevant_in_top(qrels_q: Mapping[str, int], ranked: Sequence[str], k: int, level: int) -> bool:
    """Whether a chunk graded at least ``level`` is among the first ``k`` of ``ranked``.

    >>> relevant_in_top({"d1": 3, "d2": 1}, ["d2", "d9", "d1"], 2, 2), relevant_in_top({"d1": 3}, ["d1"], 1, 2)
    (False, True)
    """
    return any(qrels_q.get(d, 0) >= level for d in ranked[:k])

"""The words of a goldpool project, defined once: tasks, their verdicts, grades, callers.

Every other module imports them from here. A task is one line of :data:`TASK_LIST`; what a
task accepts (:data:`VERDICTS`), which tasks judge verdict items (:data:`KINDS`) and the
order task pages are listed in (:data:`TASKS`) follow from it. The relevance scale is
:data:`GRADES`; a relevance verdict of a judge is a grade written as its digit.

The tables ``tasks`` and ``task_verdicts`` of :mod:`labeler.store.schema` hold the same
values as rows (the verdict tables reference them, and a trigger checks every verdict against
its item's task): a released migration never changes, so a new task also needs a migration
that inserts its rows. A test keeps the two equal.

The command line reads these names at start-up (option choices), so this module imports
nothing beyond the standard library when it loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from labeler.store.errors import StoreError

# --- the relevance scale -------------------------------------------------------------------

#: The graded relevance scale: grade -> its name on buttons, in the rubric and on admin pages.
GRADES: dict[int, str] = {
    0: "Irrelevant",
    1: "On topic",
    2: "Partly answers",
    3: "Fully answers",
}

#: What each grade means, shown under the buttons on the labelling page.
GRADE_HELP: dict[int, str] = {
    0: "nothing to do with the query",
    1: "on the query's topic, but does not answer it",
    2: "answers part of the query",
    3: "answers the query fully",
}

#: The scale as people read it in messages and help texts ("0-3").
GRADE_RANGE = f"{min(GRADES)}-{max(GRADES)}"

#: The relevance level every command uses unless given ``--relevance-level``: a grade at or
#: above it counts as relevant (trec_eval's ``-l``). 1 is trec_eval's and ir-measures' own
#: default, so a metric goldpool prints under their name has their value; grade 2 ("answers
#: part of the query") is the stricter reading, asked for by ``--relevance-level 2``.
RELEVANCE_LEVEL = 1


def check_grade(relevance: object) -> int:
    """``relevance`` if it is a grade of the scale (an int, not a bool), else ``StoreError``.

    >>> check_grade(2)
    2
    """
    if not is_grade(relevance):
        raise StoreError(f"relevance {relevance!r}: give an integer grade {GRADE_RANGE}")
    return relevance  # type: ignore[return-value]


def is_grade(value: object) -> bool:
    """Whether ``value`` is a grade of the scale: an int (not a bool) in :data:`GRADES`.

    >>> is_grade(3), is_grade(4), is_grade(True), is_grade("2")
    (True, False, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool) and value in GRADES


# --- tasks and their verdicts ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Task:
    """One kind of judgement a person or a judge model gives.

    Attributes:
        name: the task's name in settings, files, the CLI and the ``task``/``kind`` columns.
        verdicts: the values a verdict of the task takes, as stored (text).
        on_pool: judged on pool entries (query_id, doc_id) rather than on verdict items.
        ordered: shown in two orders (``AB``, ``BA``), each recorded with its verdict.
        on_answers: judged on the answers of a system (or their claims): its items are made
            when answers and claims are stored, never imported as items.
    """

    name: str
    verdicts: tuple[str, ...]
    on_pool: bool = False
    ordered: bool = False
    on_answers: bool = False


#: The answer relevance verdict that the response declines to answer (an abstention): it does
#: not address the question, and the abstention rate of people and of a judge counts it.
DECLINES = "DECLINES"

#: Every task, in the order task pages are listed. A new task is one more line.
TASK_LIST: tuple[Task, ...] = (
    Task("relevance", tuple(str(g) for g in GRADES), on_pool=True),
    Task("faithfulness", ("SUPPORTED", "UNSUPPORTED")),
    Task("pairwise", ("A", "B", "TIE"), ordered=True),
    Task("claims", ("SUPPORTED", "UNSUPPORTED", "NOT_ONE_CLAIM"), on_answers=True),
    Task("correctness", ("CORRECT", "INCORRECT"), on_answers=True),
    Task("answer-relevance", ("ADDRESSES", "MISSES", DECLINES), on_answers=True),
    Task("nuggets", ("SUPPORT", "PARTIAL_SUPPORT", "NOT_SUPPORT"), on_answers=True),
)

#: Task name -> its :class:`Task`.
TASK_BY_NAME: dict[str, Task] = {t.name: t for t in TASK_LIST}
#: The task names, in page order.
TASKS: tuple[str, ...] = tuple(t.name for t in TASK_LIST)
#: The tasks judged on verdict items (``verdict_items.kind``), in page order.
KINDS: tuple[str, ...] = tuple(t.name for t in TASK_LIST if not t.on_pool)
#: Verdicts each task accepts (relevance grades as their digits).
VERDICTS: dict[str, tuple[str, ...]] = {t.name: t.verdicts for t in TASK_LIST}
#: The tasks judged on answers and claims, in page order.
ANSWER_TASKS: tuple[str, ...] = tuple(t.name for t in TASK_LIST if t.on_answers)
#: The verdict a person gives on the claims page when the "claim" is not one checkable claim
#: (compound, vague or not a statement): it flags the decomposition, not the answer.
NOT_ONE_CLAIM = "NOT_ONE_CLAIM"
#: The verdicts a judge model gives per task (a judge is never asked to flag a claim).
JUDGE_VERDICTS: dict[str, tuple[str, ...]] = {
    t.name: tuple(v for v in t.verdicts if v != NOT_ONE_CLAIM) for t in TASK_LIST
}


#: The tasks with one item per answer, ``ANSWER_ID@TASK``, made when the answer is stored:
#: whole-answer faithfulness (SUPPORTED when every statement of the response is supported by
#: its contexts; beside the faithfulness items ``import-items`` brings, which stay as they are),
#: correctness (answers with a reference) and answer relevance.
PER_ANSWER_TASKS: tuple[str, ...] = ("faithfulness", "correctness", "answer-relevance")


def answer_item(task: str, answer_id: str) -> str:
    """The verdict item of ``task`` on answer ``answer_id``: its claim ids (``ANSWER_ID#N``)
    are the claims task's items; whole-answer faithfulness, correctness and answer relevance
    are ``ANSWER_ID@TASK``.

    >>> answer_item("correctness", "a1"), answer_item("faithfulness", "a1"), answer_item("claims", "a1#2")
    ('a1@correctness', 'a1@faithfulness', 'a1#2')
    """
    if task == "claims":
        return answer_id
    return f"{answer_id}@{task}"


def item_answer(item_id: str) -> tuple[str, str] | None:
    """``(answer_id, task)`` of an answer item id of a task of :data:`PER_ANSWER_TASKS`, else None.

    >>> item_answer("a1@answer-relevance"), item_answer("a1@faithfulness"), item_answer("a1#2")
    (('a1', 'answer-relevance'), ('a1', 'faithfulness'), None)
    """
    answer_id, at, task = item_id.rpartition("@")
    return (answer_id, task) if at and answer_id and task in PER_ANSWER_TASKS else None


# --- nuggets --------------------------------------------------------------------------------

#: How much a nugget matters to an answer (TREC 2024 RAG): ``vital`` or ``okay``.
IMPORTANCES: tuple[str, ...] = ("vital", "okay")
#: The nuggets task's verdicts, as stored (nuggetizer's words in upper case): full support,
#: partial support, no support.
SUPPORT, PARTIAL_SUPPORT, NOT_SUPPORT = TASK_BY_NAME["nuggets"].verdicts
#: What a support verdict scores in ``all`` and ``vital`` (partial support counts half); the
#: strict scores count only :data:`SUPPORT`.
SUPPORT_SCORE: dict[str, float] = {SUPPORT: 1.0, PARTIAL_SUPPORT: 0.5, NOT_SUPPORT: 0.0}


def nugget_item(answer_id: str, nugget_id: str) -> str:
    """The verdict item of the nuggets task on one (answer, nugget): does the answer support it?

    >>> nugget_item("a1", "q1/n2")
    'a1@nugget=q1/n2'
    """
    return f"{answer_id}@nugget={nugget_id}"


#: The orders an ordered task's two responses are shown in: ``AB`` shows response A first.
ORDERS: tuple[str, ...] = ("AB", "BA")


# --- who asks ------------------------------------------------------------------------------

Role = Literal["annotator", "admin"]


class Owner:
    """The project owner working on the database file directly (the command line).

    Passed as ``caller=OWNER`` to store functions that check rights: the owner may do
    everything an admin may. The app always passes the signed-in :class:`Annotator`.
    """

    _instance: Owner | None = None

    def __new__(cls) -> Owner:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OWNER"


#: The one owner value (see :class:`Owner`).
OWNER = Owner()


@dataclass(frozen=True, slots=True)
class Annotator:
    """Someone who labels; an admin also sees the admin pages."""

    id: int
    name: str
    role: Role
    active: bool


#: Who asks a store function that checks rights: the signed-in annotator (or their id), or
#: :data:`OWNER` for the command line. Every such function takes it as the required keyword
#: ``caller``; there is no default, so forgetting it can never grant admin rights.
Caller = Annotator | int | Owner


__all__ = [
    "ANSWER_TASKS", "DECLINES", "GRADES", "GRADE_HELP", "GRADE_RANGE", "IMPORTANCES", "JUDGE_VERDICTS", "KINDS",
    "NOT_ONE_CLAIM", "NOT_SUPPORT", "ORDERS", "OWNER", "PARTIAL_SUPPORT", "PER_ANSWER_TASKS", "SUPPORT", "SUPPORT_SCORE", "TASKS",
    "TASK_BY_NAME", "TASK_LIST", "VERDICTS", "Annotator", "Caller", "Owner", "Role", "Task",
    "answer_item", "check_grade", "is_grade", "item_answer", "nugget_item",
]

"""What people, or one judge, said about each answer of a system: the per-answer values every
generation metric is a mean of.

One :class:`Outcome` per answer, from one source (people, or a judge):

- ``correct``: the correctness verdict (True for ``CORRECT``); None when the source gave none
  or the answer has no reference;
- ``addresses``: the answer relevance verdict (True for ``ADDRESSES``; ``MISSES`` and
  ``DECLINES`` do not address the question); None when not given;
- ``declines``: the source's own word on abstention: True for the answer relevance verdict
  ``DECLINES`` (people's key "declines to answer", a judge's reply), False for ``ADDRESSES`` or
  ``MISSES``, None when not given; an empty response declines whatever the source;
- ``supported`` / ``judged`` / ``flagged``: among the answer's claims, how many are
  ``SUPPORTED``, how many have a ``SUPPORTED`` or ``UNSUPPORTED`` verdict, how many were flagged
  ``NOT_ONE_CLAIM``. The answer's faithfulness (supported / judged) is defined only when every
  claim has a verdict and at least one is not flagged: a share over some of an answer's claims
  would weigh the answer by which claims happened to be labelled. Flagged claims leave the
  ratio (they are not one checkable claim to hold the answer to) and are counted apart, so the
  share of a decomposition people reject is measurable;
- ``whole``: the whole-answer faithfulness verdict on the answer's item
  ``ANSWER_ID@faithfulness`` (True for ``SUPPORTED``: every statement of the response is
  supported by its contexts); None when not given;
- ``split``: claims people gave verdicts on but split evenly (no majority): a reason an
  answer's faithfulness is undefined, said apart from claims nobody judged;
- ``abstained``: the text rule: the response is empty or declines to answer
  (:func:`labeler.generation.abstention.is_abstention`). An empty
  response has no items to label: it is incorrect (when it has a reference) and does not
  address the question, whatever the source; a declining text is labelled like any answer.

People's verdict on an item is the majority of the annotators who gave one; a tie leaves the
item without a people's verdict (it is still open for adjudication by more votes). A judge's
is its latest parseable verdict.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import sqlite_utils

from labeler.generation.abstention import is_abstention
from labeler.store import answers as store
from labeler.store.answer_records import answer_verdicts
from labeler.store.vocabulary import DECLINES, NOT_ONE_CLAIM, Caller


@dataclass(frozen=True, slots=True)
class Outcome:
    """One answer as one source (people, or a judge) judged it."""

    answer_id: str
    query_id: str | None
    question: str
    words: int  # the response's length in words (verbosity is reported beside quality)
    abstained: bool
    correct: bool | None
    addresses: bool | None
    claims: int  # claims the answer has
    judged: int  # claims with a SUPPORTED or UNSUPPORTED verdict
    supported: int
    flagged: int  # claims flagged NOT_ONE_CLAIM
    has_reference: bool = True  # correctness can be asked of it (a non-empty reference)
    whole: bool | None = None  # the whole-answer faithfulness verdict (True: SUPPORTED)
    split: int = 0  # claims with verdicts but no majority (people split evenly)
    declines: bool | None = None  # the source's verdict DECLINES on answer relevance (None: not given)

    @property
    def faithfulness(self) -> float | None:
        """Supported claims over judged claims, when every claim has a verdict; else None."""
        if self.claims == 0 or self.judged + self.flagged < self.claims or self.judged == 0:
            return None
        return self.supported / self.judged

    @property
    def supported_answer(self) -> bool | None:
        """Whether the answer is wholly supported: the whole-answer verdict where one is given,
        else from its claims (every judged claim SUPPORTED, on an answer whose faithfulness is
        defined: flagged claims left out as there); None when neither says.

        When both are given and disagree, the whole-answer verdict counts: it is the one
        given on the whole response, while a claim list may leave a statement out.
        """
        return self.whole if self.whole is not None else self.claims_say

    @property
    def claims_say(self) -> bool | None:
        """What the claims alone say of :attr:`supported_answer` (None: not every claim judged)."""
        return None if self.faithfulness is None else self.supported == self.judged

    @property
    def unit(self) -> str:
        """The question this answer belongs to (its query, else its question text): intervals
        resample questions, so two answers to one question move together."""
        return self.query_id if self.query_id is not None else f"question:{self.question}"


def _majority(verdicts: Iterable[str]) -> str | None:
    counts = Counter(verdicts).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def outcomes(db: sqlite_utils.Database, system: str, *, judge: str | None = None,
             caller: Caller) -> list[Outcome]:
    """Every answer of ``system``, by answer_id, as people (or ``judge``) judged it.

    Raises:
        StoreError: no such system; the caller is not an admin.
    """
    store.require_system(db, system)
    given: dict[str, list[str]] = defaultdict(list)
    task_of: dict[str, tuple[str, str]] = {}
    for answer_id, task, item_id, _who, verdict in answer_verdicts(db, system, judge=judge, caller=caller):
        given[item_id].append(verdict)
        task_of[item_id] = (answer_id, task)
    by_answer: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    split: Counter[str] = Counter()
    for item_id, verdicts in given.items():
        verdict = _majority(verdicts)
        answer_id, task = task_of[item_id]
        if verdict is not None:
            by_answer[answer_id][task].append(verdict)
        elif task == "claims":
            split[answer_id] += 1
    claims = store.claim_counts(db, system)
    result = []
    for answer_id, query_id, question, response, reference in store.answer_rows(db, system):
        said = by_answer.get(answer_id, {})
        empty = not response.strip()
        correct = [v == "CORRECT" for v in said.get("correctness", [])]
        relevance = said.get("answer-relevance", [])
        addresses = [v == "ADDRESSES" for v in relevance]
        claim_verdicts = said.get("claims", [])
        whole = said.get("faithfulness", [])
        result.append(Outcome(
            answer_id=answer_id, query_id=query_id, question=question, words=len(response.split()),
            abstained=is_abstention(response),
            correct=(False if reference else None) if empty else (correct[0] if correct else None),
            addresses=False if empty else (addresses[0] if addresses else None),
            claims=0 if empty else claims.get(answer_id, 0),
            judged=sum(v != NOT_ONE_CLAIM for v in claim_verdicts),
            supported=sum(v == "SUPPORTED" for v in claim_verdicts),
            flagged=sum(v == NOT_ONE_CLAIM for v in claim_verdicts),
            has_reference=bool(reference),
            whole=None if empty or not whole else whole[0] == "SUPPORTED",
            split=0 if empty else split[answer_id],
            declines=True if empty else (relevance[0] == DECLINES if relevance else None),
        ))
    return result

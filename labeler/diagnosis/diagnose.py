"""Why each wrong answer is wrong: one outcome per question, in a fixed order of checks.

For every answer of a system to a question of a frozen version that is wrong (people's
verdict, else a judge's), with ``G`` the question's relevant chunks in the version (grade >=
``relevance_level``, 1 by default as for every command), ``gold`` the correctness of the system's gold-context
answer (system ``NAME+gold``, :mod:`labeler.diagnosis.gold_context`) and ``H`` the chunks of the corpus
that hold the reference answer (:func:`holds`, found by :class:`AnswerSearch`):

1. ``gold`` is right: the golden chunks are enough for the generator.
   - no chunk of ``G`` among the system's top k: ``retrieval-miss``, unless a chunk of its top k
     outside ``G`` holds the answer (the system did retrieve it; the labels missed it):
     ``incomplete-labels``;
   - a chunk of ``G`` among the top k: ``context-ignored`` (formatting, ordering, lost in the
     middle).
2. A chunk of ``G`` holds the answer (the fact is in the corpus, and labelled):
   ``generation`` when ``gold`` is wrong too; ``pending`` when there is no judged gold-context
   answer yet (run ``gold-context``, then judge its answers).
3. Only chunks outside ``G`` hold the answer: ``incomplete-labels`` (the set's recall was never
   real). These chunks are offered to the pool as source :data:`POOL_SOURCE`.
4. No chunk holds it: ``knowledge-gap`` (no retriever can find what the corpus lacks).

**Without a reference.** An answer with no reference answer and no correctness verdict is
judged by its nuggets when the version froze a vital nugget for its question: it is wrong when it
supports no vital nugget (``strict_vital`` 0: people's labels, the judge's where people gave
none), right otherwise; the chunks holding its answer are those its vital nuggets came from.

The outcomes are reported in the order ``retrieval-miss``, ``context-ignored``, ``generation``,
``knowledge-gap``, ``incomplete-labels``, then ``pending``.

**Holding the answer.** The reference's *distinctive words* are its words (lower-cased runs of
word characters, :func:`pooling.tokenize.tokenize`) that are neither stop words nor words of
the question ("Wilhelm Conrad Röntgen" for "who got the first nobel prize in physics"). A chunk
holds the answer when its words contain the reference's words as one phrase, or every
distinctive word (only the phrase when the reference has none: "public sector" for "public
companies are part of what economic sector"). The search looks at the BM25 top ``depth`` of the
whole corpus for the distinctive words (the reference's words when there are none), plus the
system's top k and the question's labelled chunks. Limits, each visible in a question's
evidence: a long reference (a sentence) rarely matches whole, so its ``knowledge-gap`` calls
are the weakest; a short one (a year, a number) also matches chunks about something else,
which makes a false ``incomplete-labels``: its chunks go to people, who label them
irrelevant, so the error costs labels, not a wrong conclusion.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlite_utils

from labeler.diagnosis.gold_context import gold_answer_id, gold_chunk_ids, gold_system
from labeler.diagnosis.golden_answers import AnswerValues, answer_values, by_question, relevant_in_top, version_qrels
from labeler.generation.nuggets import scores_of
from labeler.retrieval.build import pool_plan
from labeler.retrieval.golden_set import ANSWER_SEARCH
from labeler.store import StoreError
from labeler.store import answers as store
from labeler.store.access import require_admin
from labeler.store.corpus import add_pool_build, document_keys, document_texts, documents_by_id
from labeler.store.vocabulary import RELEVANCE_LEVEL, Caller
from pooling.bm25 import BM25Index
from pooling.tokenize import tokenize
from pooling.types import search_text

OUTCOMES = ("retrieval-miss", "context-ignored", "generation", "knowledge-gap", "incomplete-labels")
PENDING = "pending"
#: The pool source of the chunks that hold an answer outside a version's relevant set.
POOL_SOURCE = ANSWER_SEARCH
#: How deep the BM25 search of the corpus looks for each reference.
SEARCH_DEPTH = 20

ADVICE = {
    "retrieval-miss": "retrieval: the generator answers these from the golden chunks, but the system did not retrieve "
                      "one; raise recall@k (more candidates, hybrid search, a reranker, a larger k) before touching "
                      "the prompt",
    "context-ignored": "context use: a relevant chunk was retrieved and not used; try the chunks' order (relevant "
                       "first), fewer or shorter chunks, their formatting, the prompt",
    "generation": "the generator: it fails even with the golden chunks as its only context; change the model or "
                  "the prompt",
    "knowledge-gap": "the corpus: no chunk holds these answers, so no retriever can find them; add the documents "
                     "that do",
    "incomplete-labels": "the golden set: chunks outside its relevant ones hold these answers; label them (diagnose "
                         "--add-to-pool puts them in the pool) and freeze a new version before trusting recall",
    PENDING: "the gold-context test: run `goldpool gold-context`, then judge its answers (people or run-judge)",
}

_STOP = frozenset("""a an the and or but if of to in on at by for with from as is are was were be been being it its
this that these those there here what which who whom whose when where why how do does did done not no yes than then
so such can could may might will would shall should has have had having i you he she we they them his her our your
their my me us him about into over under after before between during up down out off again further once all any
both each few more most other some own same too very just also only s t""".split())


def distinctive_words(reference: str, question: str) -> list[str]:
    """The reference's words that are neither stop words nor the question's, in order, once each.

    >>> distinctive_words("Wilhelm Conrad Röntgen", "who got the first nobel prize in physics")
    ['wilhelm', 'conrad', 'röntgen']
    >>> distinctive_words("public sector", "public companies are part of what economic sector")
    []
    """
    asked = set(tokenize(question))
    return [w for w in dict.fromkeys(tokenize(reference)) if w not in _STOP and w not in asked]


def search_words(reference: str, question: str) -> str:
    """What the BM25 search of the corpus looks for: the distinctive words, else the reference's words.

    >>> search_words("Wilhelm Röntgen", "who discovered x-rays"), search_words("public sector", "the public sector")
    ('wilhelm röntgen', 'public sector')
    """
    return " ".join(distinctive_words(reference, question) or tokenize(reference))


def holds(chunk: str, reference: str, distinctive: Sequence[str]) -> bool:
    """Whether ``chunk`` holds the reference: its words as one phrase, or every distinctive word
    (a reference whose words are all the question's has none: only the phrase counts, else a
    chunk that repeats the question would hold it).

    >>> holds("In 1901 Wilhelm Conrad Röntgen won.", "Wilhelm Conrad Röntgen", ["wilhelm", "conrad", "röntgen"])
    True
    >>> holds("Röntgen, Wilhelm.", "Wilhelm Conrad Röntgen", ["wilhelm", "conrad", "röntgen"])
    False
    >>> holds("Is the public sector big?", "public sector", []), holds("the sector is public", "public sector", [])
    (True, False)
    """
    words = tokenize(chunk)
    phrase = tokenize(reference)
    if phrase and f" {' '.join(phrase)} " in f" {' '.join(words)} ":
        return True
    return bool(distinctive) and set(distinctive) <= set(words)


class AnswerSearch:
    """BM25 over the whole corpus (visible documents), built at the first search, to look for references."""

    def __init__(self, db: sqlite_utils.Database, *, depth: int = SEARCH_DEPTH) -> None:
        self.db = db
        self.depth = depth
        self._index: Any = None

    def top(self, searches: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
        """key -> the BM25 top ``depth`` doc_ids for each ``(key, words)``."""
        if not searches:
            return {}
        if self._index is None:
            doc_ids = [d for d, _ in document_keys(self.db)]
            if not doc_ids:
                return {key: [] for key, _ in searches}
            self._index = BM25Index(doc_ids, lambda: (search_text(t, x) for t, x in document_texts(self.db)))
        return self._index.ranked_ids(list(searches), self.depth)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """One wrong answer's outcome and the evidence for it."""

    query_id: str
    answer_id: str
    question: str
    reference: str | None
    response: str
    outcome: str
    relevant_in_top: bool  # a chunk of the version's relevant set among the system's top k
    relevant: dict[str, int]  # the version's relevant chunks of the question: doc_id -> grade
    gold_answer_id: str | None
    gold_response: str | None
    gold_correct: bool | None
    distinctive: tuple[str, ...]
    searched: int  # chunks the search looked at
    holders: tuple[str, ...]  # chunks that hold the reference, best BM25 rank first
    outside: tuple[str, ...]  # of those, the ones outside the relevant set
    labelled_below: dict[str, int] = field(default_factory=dict)  # outside holders the version grades below the level
    why: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "answer_id": self.answer_id, "question": self.question,
                "reference": self.reference, "response": self.response, "outcome": self.outcome,
                "relevant_in_top": self.relevant_in_top, "relevant": self.relevant,
                "gold_answer_id": self.gold_answer_id, "gold_response": self.gold_response,
                "gold_correct": self.gold_correct, "distinctive_words": list(self.distinctive), "searched": self.searched,
                "holders": list(self.holders), "outside": list(self.outside), "labelled_below": self.labelled_below,
                "why": self.why}


def classify(*, gold_correct: bool | None, relevant_in_top: bool, relevant: Iterable[str], holders: Iterable[str],
             top_k: Iterable[str]) -> tuple[str, str]:
    """``(outcome, why)`` of one wrong answer, by the order in the module docstring.

    >>> classify(gold_correct=True, relevant_in_top=False, relevant=["g"], holders=["g"], top_k=["x"])[0]
    'retrieval-miss'
    >>> classify(gold_correct=None, relevant_in_top=False, relevant=["g"], holders=[], top_k=["x"])[0]
    'knowledge-gap'
    """
    relevant, holders = set(relevant), list(holders)
    outside = [h for h in holders if h not in relevant]
    if gold_correct is True:
        if not relevant_in_top:
            retrieved_holder = [d for d in top_k if d in outside]
            if retrieved_holder:
                return "incomplete-labels", (f"the system retrieved {retrieved_holder[0]}, which holds the answer but is "
                                             "not in the relevant set; the gold context answers")
            return "retrieval-miss", "no relevant chunk in the top k; given the golden chunks the generator answers"
        return "context-ignored", "a relevant chunk was in the top k and the answer is wrong; the gold context answers"
    inside = [h for h in holders if h in relevant]
    if inside:
        if gold_correct is False:
            return "generation", f"the gold-context answer is wrong too, and {inside[0]} (relevant) holds the answer"
        return PENDING, f"{inside[0]} (relevant) holds the answer; no judged gold-context answer yet"
    if outside:
        return "incomplete-labels", (f"only chunks outside the relevant set hold the answer ({', '.join(outside[:3])}"
                                     f"{', ...' if len(outside) > 3 else ''})")
    return "knowledge-gap", "no chunk of the corpus holds the reference's distinctive words"


@dataclass(frozen=True, slots=True)
class DiagnoseReport:
    """What ``goldpool diagnose`` reports."""

    golden: str
    version: str
    system: str
    gold_system: str
    k: int
    relevance_level: int
    judge: str | None
    answers: int  # answers to the version's questions
    correct: int
    unjudged: int  # answers without a verdict (not diagnosed)
    counts: dict[str, int]
    first: str | None  # the outcome to fix first
    advice: str
    diagnoses: tuple[Diagnosis, ...]
    offered: dict[str, list[str]]  # query_id -> chunks offered to the pool
    pool: dict[str, int] | None = None  # what adding them to the pool did (None: not asked)

    def as_dict(self) -> dict[str, Any]:
        return {"golden": self.golden, "version": self.version, "system": self.system, "gold_system": self.gold_system,
                "k": self.k, "relevance_level": self.relevance_level, "judge": self.judge, "answers": self.answers,
                "correct": self.correct, "wrong": len(self.diagnoses), "unjudged": self.unjudged,
                "counts": self.counts, "first": self.first, "advice": self.advice,
                "questions": [d.as_dict() for d in self.diagnoses], "offered": self.offered, "pool": self.pool}


#: Said of an answer judged wrong by its nuggets (it has no reference).
NO_VITAL = "no reference: wrong as it supports no vital nugget"


def by_nuggets(db: sqlite_utils.Database, system: str, version: str, judge: str | None, *,
               caller: Caller) -> dict[str, tuple[bool, tuple[str, ...]]]:
    """answer_id -> (wrong: it supports no vital nugget, the chunks its vital nuggets came from),
    for ``system``'s answers to questions ``version`` froze a vital nugget for and that people (or
    ``judge``, where people gave none) labelled on every nugget; empty when it froze none."""
    try:
        nuggets, scored = scores_of(db, [system], version=version, judge=judge, caller=caller)
    except StoreError:  # no nuggets frozen with the version (or the judge labelled no support)
        return {}
    sources: dict[str, list[str]] = defaultdict(list)
    for n in nuggets:
        if n.importance == "vital":
            sources[n.query_id] += n.doc_ids
    people, judged = scored[system]
    by_judge = {a.answer_id: a.scores["strict_vital"] for a in judged or []}
    out = {}
    for a in people:
        value = a.scores["strict_vital"] if a.scores["strict_vital"] is not None else by_judge.get(a.answer_id)
        if value is not None:
            out[a.answer_id] = (value == 0.0, tuple(dict.fromkeys(sources[a.unit])))
    return out


def _correct(a: AnswerValues, nuggets: Mapping[str, tuple[bool, tuple[str, ...]]]) -> bool | None:
    """The answer's correctness: its verdict; without one and without a reference, its nuggets'."""
    if a.correct is not None or (a.reference or "").strip() or a.answer_id not in nuggets:
        return a.correct
    return not nuggets[a.answer_id][0]


def diagnose(db: sqlite_utils.Database, golden: str, version: str, system: str, *, k: int = 10,
             relevance_level: int = RELEVANCE_LEVEL, judge: str | None = None, depth: int = SEARCH_DEPTH,
             caller: Caller) -> DiagnoseReport:
    """Sort each wrong answer of ``system`` on the version's questions into one outcome.

    Raises:
        StoreError: no such version or system, no answer to the version's questions, a bad k.
    """
    if k < 1 or depth < 1:
        raise StoreError(f"k {k}, search depth {depth}: give 1 or more")
    _, qrels = version_qrels(db, version, caller=caller)
    answers = by_question(answer_values(db, system, judge=judge, caller=caller), set(qrels))
    if not answers:
        raise StoreError(f"no answer of system {system!r} is a question of version {version!r}")
    target = gold_system(system)
    # The gold-context answer made from this version's gold chunks (another version's may differ).
    gold = answer_values(db, target, judge=judge, caller=caller) if target in store.systems(db) else {}
    nuggets = by_nuggets(db, system, version, judge, caller=caller)
    wrong = [a for q, a in sorted(answers.items()) if _correct(a, nuggets) is False]
    words, looked, holding = _search(db, wrong, qrels, k, depth)
    holding |= {a.query_id: list(nuggets[a.answer_id][1]) for a in wrong if a.correct is None}
    diagnoses = []
    offered: dict[str, list[str]] = {}
    for a in wrong:
        q = a.query_id
        grades = qrels[q]
        relevant = {d: g for d, g in grades.items() if g >= relevance_level}
        holders = holding[q]
        hit = relevant_in_top(grades, a.retrieved_ids, k, relevance_level)
        g = gold.get(gold_answer_id(target, q, gold_chunk_ids(grades)))
        outcome, why = classify(gold_correct=g.correct if g else None, relevant_in_top=hit, relevant=relevant,
                                holders=holders, top_k=a.retrieved_ids[:k])
        why = f"{NO_VITAL}; {why}" if a.correct is None else why
        outside = tuple(h for h in holders if h not in relevant)
        if outcome == "incomplete-labels":
            offered[q] = list(outside)
        diagnoses.append(Diagnosis(q, a.answer_id, a.question, a.reference, a.response, outcome, hit, relevant,
                                   g.answer_id if g else None, g.response if g else None, g.correct if g else None,
                                   tuple(words[q]), len(looked[q]), tuple(holders), outside,
                                   {d: grades[d] for d in outside if d in grades}, why))
    counts = {o: sum(d.outcome == o for d in diagnoses) for o in (*OUTCOMES, PENDING)}
    first = fix_first(counts)
    advice = "" if first is None else ADVICE[first]
    return DiagnoseReport(golden, version, system, target, k, relevance_level, judge, len(answers),
                          sum(_correct(a, nuggets) is True for a in answers.values()),
                          sum(_correct(a, nuggets) is None for a in answers.values()),
                          counts, first, advice, tuple(diagnoses), offered)


def _search(db: sqlite_utils.Database, wrong: Sequence[Any], qrels: Mapping[str, Mapping[str, int]], k: int,
            depth: int) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, list[str]]]:
    """Per question of ``wrong``: the distinctive words, the chunks looked at (the BM25 top
    ``depth`` of the corpus, the answer's top k, the labelled chunks) and those that hold the
    reference, in that order."""
    words = {a.query_id: distinctive_words(a.reference or "", a.question) for a in wrong}
    found = AnswerSearch(db, depth=depth).top([(a.query_id, search_words(a.reference or "", a.question)) for a in wrong
                                               if tokenize(a.reference or "")])
    looked = {a.query_id: list(dict.fromkeys([*found.get(a.query_id, []), *a.retrieved_ids[:k],
                                              *sorted(qrels[a.query_id])])) for a in wrong}
    texts = documents_by_id(db, sorted({d for ids in looked.values() for d in ids}))
    holding = {a.query_id: [d for d in looked[a.query_id] if d in texts and (a.reference or "").strip()
                            and holds(search_text(*texts[d]), a.reference or "", words[a.query_id])] for a in wrong}
    return words, looked, holding


def fix_first(counts: Mapping[str, int]) -> str | None:
    """The outcome to fix first: the most frequent, ties in the order of the checks; ``pending``
    only when nothing else is found.

    >>> fix_first({"generation": 3, "retrieval-miss": 3, "pending": 9}), fix_first({"pending": 1}), fix_first({})
    ('retrieval-miss', 'pending', None)
    """
    ranked = sorted(OUTCOMES, key=lambda o: (-counts.get(o, 0), OUTCOMES.index(o)))
    if counts.get(ranked[0], 0):
        return ranked[0]
    return PENDING if counts.get(PENDING, 0) else None


def offer_to_pool(db: sqlite_utils.Database, report: DiagnoseReport, *, caller: Caller) -> dict[str, int]:
    """Add the chunks ``report`` offers to the pool as source :data:`POOL_SOURCE` (admin only):
    new entries join the labelling queue; a chunk already pooled for its question gains the
    source in its provenance. Returns ``{"added", "already_pooled"}``.
    """
    require_admin(db, caller)
    rankings = {POOL_SOURCE: {q: list(ids) for q, ids in report.offered.items() if ids}}
    if not rankings[POOL_SOURCE]:
        return {"added": 0, "already_pooled": 0}
    offered = sum(len(ids) for ids in rankings[POOL_SOURCE].values())
    _, added, _ = add_pool_build(db, pool_plan(rankings), {"kind": "diagnose", "sources": [POOL_SOURCE],
                                                          "system": report.system, "version": report.version})
    return {"added": added, "already_pooled": offered - added}


def offered_count(offered: Mapping[str, Sequence[str]]) -> int:
    return sum(len(v) for v in offered.values())

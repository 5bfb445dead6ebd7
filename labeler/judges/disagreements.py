"""Where a judge and people part: the items to read after changing a prompt.

An item is listed when the judge's usable label (pairwise: its two orders combined, a flip a
tie) differs from the label of at least one person who labelled it. Items the people agree on
(unanimous) come first, those more people agree on before those fewer do: there the judge,
not the people, is the likelier to be wrong. Then the items people themselves split on. Each
comes with its texts (the query and passage of a pool entry, the question, contexts and
responses of a verdict item), as data: whoever shows them escapes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlite_utils

from labeler.judges import JudgeError
from labeler.judges.report import task_inputs
from labeler.store import corpus
from labeler.store.verdicts import latest_judge_verdicts, list_items
from labeler.store.vocabulary import TASKS, Caller


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One item where the judge and people disagree.

    Attributes:
        task: the task.
        item: the item id, or ``query_id / doc_id`` for a pool entry.
        judge: the judge's label.
        people: each person's label, by annotator name.
        unanimous: whether every person gave the same label.
        texts: the item's texts, by name (``query``, ``passage``; ``question``, ``context_1``...,
            ``response``, ``response_a``, ``response_b``, ``claim``, ``reference``).
    """

    task: str
    item: str
    judge: str
    people: dict[str, str]
    unanimous: bool
    texts: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"task": self.task, "item": self.item, "judge": self.judge, "people": dict(self.people),
                "unanimous": self.unanimous, "texts": dict(self.texts)}


def _order(d: Disagreement) -> tuple:
    return (not d.unanimous, -len(d.people), d.item)


def disagreements(db: sqlite_utils.Database, judge: str, task: str | None = None, *,
                  caller: Caller) -> list[Disagreement]:
    """Every item where ``judge`` and people disagree (of ``task``, else of every task the judge
    has verdicts on, in task order), unanimous people first (admin only).

    Raises:
        JudgeError: a judge without verdicts (of ``task``), or an unknown task.
    """
    if task is not None and task not in TASKS:
        raise JudgeError(f"task {task!r}: choose one of {', '.join(TASKS)}")
    rows = latest_judge_verdicts(db, judge, caller=caller)
    tasks = [t for t in TASKS if any(r.task == t for r in rows) and task in (None, t)]
    if not tasks:
        what = f" on {task}" if task else ""
        raise JudgeError(f"judge {judge!r} has no verdict{what} in this project (run-judge or import-verdicts --judge first)")
    found: list[Disagreement] = []
    for t in tasks:
        humans, labels, _ = task_inputs(db, t, [r for r in rows if r.task == t], caller)
        apart = []
        for key, label in labels.items():
            people = {a: str(v) for a, v in sorted(humans.get(key, {}).items())}
            if label is None or not people or all(v == str(label) for v in people.values()):
                continue
            item = f"{key[0]} / {key[1]}" if isinstance(key, tuple) else str(key)
            apart.append(Disagreement(t, item, str(label), people, len(set(people.values())) == 1))
        found += sorted(_with_texts(db, t, apart), key=_order)
    return found


def _with_texts(db: sqlite_utils.Database, task: str, found: Sequence[Disagreement]) -> list[Disagreement]:
    if not found:
        return []
    if task == "relevance":
        queries = dict(corpus.pool_queries(db))
        keys = [d.item.split(" / ", 1) for d in found]
        docs = corpus.documents_by_id(db, [doc for _, doc in keys])
        out = []
        for d, (query_id, doc_id) in zip(found, keys, strict=True):
            title, text = docs.get(doc_id, ("", ""))
            out.append(_texts(d, {"query": queries.get(query_id, ""), "passage": f"{title}\n\n{text}" if title else text}))
        return out
    items = {i.item_id: i for i in list_items(db, task)}
    return [_texts(d, _item_texts(items[d.item])) for d in found]


def _item_texts(item: Any) -> dict[str, str]:
    texts = {"question": item.question}
    texts |= {f"context_{n}": c for n, c in enumerate(item.contexts, start=1)}
    for name in ("context", "claim", "reference", "response", "response_a", "response_b"):
        value = getattr(item, name)
        if value is not None and (value or name.startswith("response")):
            texts[name] = value
    return texts


def _texts(d: Disagreement, texts: dict[str, str]) -> Disagreement:
    return Disagreement(d.task, d.item, d.judge, d.people, d.unanimous, texts)

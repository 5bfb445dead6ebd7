"""A designed sample of a system's answers for people to label: ``sample-answers``.

Designs, each recording every drawn answer's inclusion probability π (what an estimate over
the sample weighs it by, 1/π):

- ``random``: simple random sampling without replacement of ``n`` of the ``N`` answers,
  π = n / N for every one;
- ``stratified`` by a field: the answers are split by the field's value (``batch``,
  ``query_id``, or a key of the answer's metadata such as ``model``, ``user_id``, ``session_id``
  or ``metadata.release``; an answer without it is in stratum ``(none)``), ``n`` is shared out in
  proportion to the strata's sizes (largest remainders; every stratum at least one answer when
  ``n`` allows), and a simple random sample is drawn in each: π_h = n_h / N_h.

The draw is reproducible from ``seed``. ``label-settings DB answer_sample=NAME`` then hands out
only the sample's answers for the generation tasks.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import sqlite_utils

from labeler.store import StoreError
from labeler.store import answer_records as records
from labeler.store import answers as store
from labeler.store.access import require_admin
from labeler.store.answer_samples import save_answer_sample
from labeler.store.vocabulary import Caller

Design = Literal["random", "stratified"]
NONE = "(none)"


@dataclass(frozen=True, slots=True)
class SampleReport:
    """What ``sample-answers`` drew."""

    name: str
    system: str
    batch: str | None
    design: str
    by: str | None
    seed: int
    population: int  # answers it was drawn from
    drawn: int
    strata: dict[str, dict[str, float]]  # stratum -> {"answers", "drawn", "probability"}

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def field_value(answer: Mapping[str, Any], field: str) -> str:
    """The value of ``field`` of a stored answer (``batch``, ``query_id``, a metadata key,
    ``metadata.KEY`` inside OpenInference's metadata object), as the stratum's name."""
    if field in ("batch", "query_id", "system"):
        value = answer.get(field)
    else:
        value: Any = answer.get("meta") or {}
        for part in field.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
    return NONE if value is None else str(value)


def allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """``n`` shared out over strata of ``sizes`` in proportion (largest remainders), each at
    least 1 when ``n`` is at least the number of strata, none above its size.

    >>> allocate({"a": 50, "b": 30, "c": 20}, 10)
    {'a': 5, 'b': 3, 'c': 2}
    >>> allocate({"a": 98, "b": 1, "c": 1}, 3)
    {'a': 1, 'b': 1, 'c': 1}
    """
    total = sum(sizes.values())
    n = min(n, total)
    floor = 1 if n >= len(sizes) else 0
    share = {h: max(floor, min(size, int(n * size / total))) for h, size in sizes.items()}
    order = sorted(sizes, key=lambda h: (-(n * sizes[h] / total - int(n * sizes[h] / total)), h))
    while sum(share.values()) < n:
        for h in order:
            if sum(share.values()) < n and share[h] < sizes[h]:
                share[h] += 1
    while sum(share.values()) > n:
        h = max((h for h in share if share[h] > floor), key=lambda h: (share[h] - n * sizes[h] / total, h))
        share[h] -= 1
    return share


def sample_answers(db: sqlite_utils.Database, system: str, *, n: int, name: str, design: Design = "random",
                   by: str | None = None, batch: str | None = None, seed: int = 0, caller: Caller) -> SampleReport:
    """Draw and store a sample of ``n`` of ``system``'s answers (in ``batch``) (admin only).

    Raises:
        StoreError: an unknown system or batch, a stratified design without ``by`` (or a
            random one with it), no answer to draw from, a taken name.
    """
    require_admin(db, caller)
    store.require_system(db, system)
    if (design == "stratified") != (by is not None):
        raise StoreError("--design stratified needs --by FIELD, and only it takes --by")
    answers = list(records.answer_records(db, system, batch))
    if not answers:
        where = f" in batch {batch!r}" if batch is not None else ""
        raise StoreError(f"system {system!r} has no answer{where} to sample; known batches: "
                         + ", ".join(records.batches(db, system)))
    strata: dict[str, list[str]] = {}
    for a in answers:
        strata.setdefault(field_value(a, by) if by else "all", []).append(a["answer_id"])
    share = allocate({h: len(ids) for h, ids in strata.items()}, n)
    rng = random.Random(seed)
    items: list[tuple[str, float, str | None]] = []
    summary: dict[str, dict[str, float]] = {}
    for h in sorted(strata):
        ids = sorted(strata[h])
        drawn = rng.sample(ids, share[h])
        probability = share[h] / len(ids)
        items += [(answer_id, probability, h if by else None) for answer_id in sorted(drawn)]
        summary[h] = {"answers": len(ids), "drawn": share[h], "probability": probability}
    params = {"n": n, "by": by, "batch": batch, "population": len(answers)}
    save_answer_sample(db, name, system, design, seed, params, [i for i in items if i[1] > 0], caller=caller)
    return SampleReport(name, system, batch, design, by, seed, len(answers), len(items), summary)

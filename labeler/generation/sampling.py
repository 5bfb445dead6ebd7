"""A designed sample of a system's answers for people to label: ``sample-answers``.

Designs, each recording every drawn answer's inclusion probability π (what an estimate over
the sample weighs it by, 1/π):

- ``random``: simple random sampling without replacement of ``n`` of the ``N`` answers,
  π = n / N for every one;
- ``stratified`` by a field: the answers are split by the field's value (``batch``,
  ``query_id``, or a key of the answer's metadata such as ``model``, ``user_id``, ``session_id``
  or ``metadata.release``; an answer without it is in stratum ``(none)``), ``n`` is shared out in
  proportion to the strata's sizes (largest remainders; every stratum at least one answer when
  ``n`` allows), and a simple random sample is drawn in each: π_h = n_h / N_h;
- ``judge-uncertain`` (with a judge): more of the answers the judge is least sure of. An
  answer's uncertainty ``u`` is how split the judge's verdicts on it are: per item of the
  answer (its correctness, answer relevance, whole-answer faithfulness, each claim), over every
  verdict the judge gave on it (every repeat and order), ``1 − |2p − 1|`` with ``p`` the share
  of positive verdicts (SUPPORTED, CORRECT, ADDRESSES; NOT_ONE_CLAIM left out); the answer's ``u``
  is its most split item's, and 1 for an answer the judge gave no verdict on. Probabilities are
  proportional to ``FLOOR + u`` (the surest answer is drawn ``(FLOOR + 1) / FLOOR`` times less
  often than the least sure, never not at all), those that would pass 1 taken with certainty,
  and exactly ``n`` are drawn with exactly those probabilities (systematic sampling on a random
  order, :func:`calibration.weighted.systematic_pps`). The metrics weigh each labelled answer by
  1/π (``answer-metrics --sample NAME``), so the sample still estimates every answer's rate.

The draw is reproducible from ``seed``. ``label-settings DB answer_sample=NAME`` then hands out
only the sample's answers for the generation tasks.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import sqlite_utils

from calibration.weighted import pps_probabilities, systematic_pps
from labeler.store import StoreError
from labeler.store import answer_records as records
from labeler.store import answers as store
from labeler.store.access import require_admin
from labeler.store.answer_samples import judge_answer_verdicts, save_answer_sample
from labeler.store.vocabulary import NOT_ONE_CLAIM, Caller

Design = Literal["random", "stratified", "judge-uncertain"]
NONE = "(none)"
#: judge-uncertain: an answer's size is FLOOR + its uncertainty (in [0, 1]).
FLOOR = 0.25
#: The verdicts that say yes, per answer task (the share of them is an item's p).
POSITIVE = frozenset({"SUPPORTED", "CORRECT", "ADDRESSES"})


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
    strata: dict[str, dict[str, float]]  # stratum (judge-uncertain: band) -> {"answers", "drawn", "probability"}
    judge: str | None = None

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


def uncertainty(verdicts: Sequence[tuple[str, str, str]]) -> dict[str, float]:
    """answer_id -> how split the judge is on it (see the module), from ``(answer_id, item_id,
    verdict)`` of every verdict the judge gave; an answer with none is left out (its 1 is the
    caller's).

    >>> uncertainty([("a1", "i1", "CORRECT"), ("a1", "i1", "INCORRECT"), ("a2", "i2", "SUPPORTED"),
    ...              ("a2", "i3", "SUPPORTED"), ("a2", "i3", "SUPPORTED"), ("a2", "i3", "UNSUPPORTED")])
    {'a1': 1.0, 'a2': 0.6666666666666667}
    """
    items: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for answer_id, item_id, verdict in verdicts:
        if verdict != NOT_ONE_CLAIM:
            items[(answer_id, item_id)].append(verdict in POSITIVE)
    out: dict[str, float] = {}
    for (answer_id, _), said in items.items():
        p = sum(said) / len(said)
        out[answer_id] = max(out.get(answer_id, 0.0), 1.0 - abs(2.0 * p - 1.0))
    return out


def _judge_uncertain(db: sqlite_utils.Database, system: str, answers: Sequence[Mapping[str, Any]], n: int,
                     judge: str, rng: random.Random,
                     caller: Caller) -> tuple[list[tuple[str, float, str | None]], dict[str, dict[str, float]]]:
    """The judge-uncertain draw: items (answer_id, π, stratum) and a summary by uncertainty band."""
    said = uncertainty(judge_answer_verdicts(db, system, judge, caller=caller))
    if not said:
        raise StoreError(f"judge {judge!r} gave no verdict on the answers of {system!r}: "
                         "judge-uncertain samples where the judge is least sure")
    ids = sorted(a["answer_id"] for a in answers)
    u = [said.get(answer_id, 1.0) for answer_id in ids]
    pi = pps_probabilities([FLOOR + x for x in u], n)
    drawn = systematic_pps(pi, rng)
    items = [(ids[i], pi[i], _band(u[i])) for i in drawn]
    summary: dict[str, dict[str, float]] = {}
    for i, answer_id in enumerate(ids):
        band = summary.setdefault(_band(u[i]), {"answers": 0, "drawn": 0, "probability": 0.0})
        band["answers"] += 1
        band["probability"] += pi[i]
    for _, _, band_name in items:
        summary[band_name]["drawn"] += 1  # type: ignore[index]
    for band in summary.values():
        band["probability"] /= band["answers"]  # the band's mean probability
    return items, dict(sorted(summary.items()))


def _band(u: float) -> str:
    """An uncertainty's band, as the summary names it."""
    return "sure (u = 0)" if u == 0 else "unjudged or split (u = 1)" if u == 1 else "split (0 < u < 1)"


def _stratified(answers: Sequence[Mapping[str, Any]], n: int, by: str | None,
                rng: random.Random) -> tuple[list[tuple[str, float, str | None]], dict[str, dict[str, float]]]:
    """The random (one stratum) or stratified draw: items (answer_id, π, stratum) and a summary per stratum."""
    strata: dict[str, list[str]] = {}
    for a in answers:
        strata.setdefault(field_value(a, by) if by else "all", []).append(a["answer_id"])
    share = allocate({h: len(ids) for h, ids in strata.items()}, n)
    items: list[tuple[str, float, str | None]] = []
    summary: dict[str, dict[str, float]] = {}
    for h in sorted(strata):
        ids = sorted(strata[h])
        drawn = rng.sample(ids, share[h])
        probability = share[h] / len(ids)
        items += [(answer_id, probability, h if by else None) for answer_id in sorted(drawn)]
        summary[h] = {"answers": len(ids), "drawn": share[h], "probability": probability}
    return [i for i in items if i[1] > 0], summary


def sample_answers(db: sqlite_utils.Database, system: str, *, n: int, name: str, design: Design = "random",
                   by: str | None = None, batch: str | None = None, judge: str | None = None, seed: int = 0,
                   caller: Caller) -> SampleReport:
    """Draw and store a sample of ``n`` of ``system``'s answers (in ``batch``) (admin only).

    Raises:
        StoreError: an unknown system or batch, a stratified design without ``by`` (or another
            with it), a judge-uncertain one without ``judge`` (or another with it), no answer to
            draw from, a taken name.
    """
    require_admin(db, caller)
    store.require_system(db, system)
    if (design == "stratified") != (by is not None):
        raise StoreError("--design stratified needs --by FIELD, and only it takes --by")
    if (design == "judge-uncertain") != (judge is not None):
        raise StoreError("--design judge-uncertain needs --judge NAME, and only it takes --judge")
    answers = list(records.answer_records(db, system, batch))
    if not answers:
        where = f" in batch {batch!r}" if batch is not None else ""
        raise StoreError(f"system {system!r} has no answer{where} to sample; known batches: "
                         + ", ".join(records.batches(db, system)))
    rng = random.Random(seed)
    if judge is not None:
        items, summary = _judge_uncertain(db, system, answers, n, judge, rng, caller)
    else:
        items, summary = _stratified(answers, n, by, rng)
    params = {"n": n, "by": by, "batch": batch, "population": len(answers), **({"judge": judge} if judge else {}),
              **({"floor": FLOOR} if judge else {})}
    save_answer_sample(db, name, system, design, seed, params, items, caller=caller)
    return SampleReport(name, system, batch, design, by, seed, len(answers), len(items), summary, judge)

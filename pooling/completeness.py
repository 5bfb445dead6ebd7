"""How many relevant chunks did the pool miss? Capture-recapture over pairs of pool sources.

Two sources (say BM25 and the dense retriever) found n1 and n2 relevant chunks of a query, m
of them in common. If they found relevant chunks independently, Chapman's nearly unbiased form
of the Lincoln-Petersen estimator gives the number of relevant chunks there are (Chapman 1951):

    N̂ = (n1 + 1)(n2 + 1) / (m + 1) − 1

and the pool missed ``N̂ − found`` of them, ``found`` being the relevant chunks any source put in
the pool. The estimate is made per query and summed over queries (queries are strata), for
each pair of sources; the headline is the pair with the largest estimate. **Assumption:**
the two sources find relevant chunks independently. Retrievers are positively correlated
(they favour the same obvious chunks), which inflates m and makes every estimate an
underestimate of what is missing, so the largest pair is the least biased and still a floor.
The interval resamples queries (percentile bootstrap). One query cannot be resampled (every
replicate is that query), so with one query the interval is NaN, said as not computable, never
a zero-width interval that reads as certainty.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any
from itertools import combinations

from pooling import PoolingError

ASSUMPTION = (
    "Capture-recapture assumes the sources find relevant chunks independently; retrievers are "
    "positively correlated, so the estimate of what the pool missed is a floor, not a ceiling."
)

#: Why a one-query estimate has no interval, in words.
ONE_QUERY = "no interval: the bootstrap resamples queries, and one query cannot be resampled"


def chapman(n1: int, n2: int, m: int) -> float:
    """Chapman's estimate of the population from two captures of n1 and n2 with m recaptured.

    (10 + 1)(8 + 1) / (4 + 1) − 1 = 99/5 − 1 = 18.8:

    >>> round(chapman(10, 8, 4), 4)
    18.8
    """
    if m > min(n1, n2) or min(n1, n2, m) < 0:
        raise PoolingError(f"impossible capture counts n1={n1}, n2={n2}, m={m}")
    return (n1 + 1) * (n2 + 1) / (m + 1) - 1


@dataclass(frozen=True, slots=True)
class PairEstimate:
    """One pair of sources: relevant chunks estimated, and missed by the pool, over all queries."""

    sources: tuple[str, str]
    n1: int
    n2: int
    m: int
    estimated_relevant: float
    missed: float
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Completeness:
    """What the pool found and what it probably missed.

    Attributes:
        found: relevant chunks found by any of the sources (summed over queries).
        pairs: one estimate per source pair, largest ``missed`` first.
        per_query: query_id -> (found, estimated missed) under the headline pair.
        queries: queries with at least one relevant chunk from a source.
        ci: coverage of the intervals (NaN ends with one query: see ``interval_note``).
        assumption: the sentence to print beside the numbers.
    """

    found: int
    pairs: tuple[PairEstimate, ...]
    per_query: dict[str, tuple[int, float]]
    queries: int
    ci: float
    assumption: str = ASSUMPTION

    def as_dict(self) -> dict[str, Any]:
        """``found``, ``queries``, ``assumption``, ``pairs`` (each with its sources and
        counts) and ``per_query`` (``{found, missed}``), for JSON."""
        return {
            "found": self.found, "queries": self.queries, "assumption": self.assumption,
            "pairs": [{"sources": list(p.sources), "n1": p.n1, "n2": p.n2, "m": p.m, "estimated_relevant": p.estimated_relevant,
                       "missed": p.missed, "low": p.low, "high": p.high} for p in self.pairs],
            "per_query": {q: {"found": f, "missed": m} for q, (f, m) in self.per_query.items()},
            "interval_note": self.interval_note,
        }

    @property
    def interval_note(self) -> str | None:
        """Why the intervals are missing (one query), else None."""
        return ONE_QUERY if self.queries < 2 else None

    @property
    def headline(self) -> PairEstimate | None:
        """The pair with the largest estimate of what was missed (the least biased floor)."""
        return self.pairs[0] if self.pairs else None


Found = Mapping[str, Mapping[str, Set[str]]]  # query_id -> source -> relevant doc_ids it found


def _per_query(found: Found, a: str, b: str) -> dict[str, tuple[int, float]]:
    out = {}
    for query_id, by_source in found.items():
        union = set().union(*by_source.values()) if by_source else set()
        s1, s2 = by_source.get(a, set()), by_source.get(b, set())
        estimate = chapman(len(s1), len(s2), len(s1 & s2))
        out[query_id] = (len(union), max(0.0, estimate - len(union)))
    return out


def completeness(found: Found, *, ci: float = 0.95, n_boot: int = 2000, seed: int | None = 0) -> Completeness:
    """Capture-recapture over every pair of sources (see the module docstring).

    Raises:
        PoolingError: fewer than two sources, or no relevant chunk found at all.
    """
    import numpy as np

    nan = float("nan")
    sources = sorted({s for by_source in found.values() for s in by_source})
    queries = sorted(q for q, by_source in found.items() if any(by_source.values()))
    if len(sources) < 2:
        raise PoolingError(f"capture-recapture needs two sources or more; the pool has {', '.join(sources) or 'none'}")
    if not queries:
        raise PoolingError("no relevant chunk in the pool yet: label some, then estimate what is missing")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(queries), size=(n_boot, len(queries)))
    tail = (1.0 - ci) / 2.0
    pairs = []
    per_pair: dict[tuple[str, str], dict[str, tuple[int, float]]] = {}
    for a, b in combinations(sources, 2):
        rows = _per_query({q: found[q] for q in queries}, a, b)
        per_pair[(a, b)] = rows
        missed = np.array([rows[q][1] for q in queries])
        reps = missed[draws].sum(axis=1)
        n1 = sum(len(found[q].get(a, ())) for q in queries)
        n2 = sum(len(found[q].get(b, ())) for q in queries)
        m = sum(len(set(found[q].get(a, ())) & set(found[q].get(b, ()))) for q in queries)
        total_found = sum(rows[q][0] for q in queries)
        low, high = (float(np.quantile(reps, tail)), float(np.quantile(reps, 1 - tail))) if len(queries) > 1 else (nan, nan)
        pairs.append(PairEstimate((a, b), n1, n2, m, total_found + float(missed.sum()), float(missed.sum()), low, high))
    pairs.sort(key=lambda p: (-p.missed, p.sources))
    found_total = sum(len(set().union(*found[q].values())) for q in queries)
    return Completeness(found_total, tuple(pairs), per_pair[pairs[0].sources], len(queries), ci)

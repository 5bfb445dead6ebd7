"""How often ``goldpool gate`` fails, over simulated pairs of runs with a known true drop.

Each simulated pair is a baseline and a candidate scored on the same n questions; the gate's
own decision (:func:`calibration.gate.gate_metric`, default tolerance = the set's MDD, alpha
0.05) is taken on it, exactly as ``goldpool gate`` takes it. Two kinds of metric:

- **nDCG@10 of TREC runs**: each question has one relevant chunk (grade 2); the baseline run
  ranks it at a rank drawn from a fixed distribution over 1..10 and "not retrieved"; on 40% of
  the questions the candidate's rank is drawn anew from the same distribution (a change that
  is as likely to help as to hurt), and on a share q of those it then loses the chunk. The runs
  are rankings scored by ir-measures (``calibration.metrics.evaluate_many``, as
  ``goldpool gate`` scores them), so the true drop is 0.4 · q · E[nDCG@10] exactly.
- **binary** (correctness): each question's pair of outcomes is discordant with probability d
  (0.2); a discordant pair favours the baseline with probability (1 + drop/d)/2.

The true MDD is that of the null: ``(z_{0.975} + z_{0.8}) · σ/sqrt(n)`` with σ the SD of the
per-question differences when nothing dropped. With a true drop of 0 the share that fails must
be at most alpha; with a true drop of twice the MDD, at least 0.8. The share at one MDD is
shown too: about a half, since the default tolerance is the MDD itself; so is the share whose
one-sided test alone is significant (about alpha under no drop: the test is calibrated, and the
tolerance is what keeps the gate from failing on drops too small to matter).

    python bench/gate_power.py [--pairs 1000] [--n 200] [--seed 7]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration.gate import gate_metric  # noqa: E402
from calibration.power import minimum_detectable_difference  # noqa: E402

ALPHA = 0.05
DISCORDANT = 0.2


#: The baseline's rank of a question's relevant chunk: 1..10, or 11 for "not retrieved".
RANKS = np.arange(1, 12)
RANK_P = np.array([0.35, 0.15, 0.10, 0.07, 0.05, 0.03, 0.03, 0.03, 0.03, 0.03, 0.13])
CHANGED = 0.4


def _gain(rank: np.ndarray) -> np.ndarray:
    """nDCG@10 of a question whose one relevant chunk is at ``rank`` (11: not in the top 10)."""
    return np.where(rank <= 10, 1.0 / np.log2(rank + 1.0), 0.0)


def _run_sd() -> float:
    """SD of one question's nDCG@10 difference when nothing dropped: 0 unless changed, then
    the difference of two independent draws."""
    g = _gain(RANKS)
    var = float(RANK_P @ g**2 - (RANK_P @ g) ** 2)
    return math.sqrt(CHANGED * 2 * var)


def _ranking(q: str, rank: int) -> list[str]:
    others = [f"{q}-n{j}" for j in range(1, 11)]
    return others[: rank - 1] + [f"{q}-rel"] + others[rank - 1 : 9] if rank <= 10 else others


def run_pair(rng: np.random.Generator, n: int, drop: float) -> tuple[list[float], list[float]]:
    """A baseline and a candidate TREC run, scored on nDCG@10 by ir-measures."""
    from calibration.metrics import evaluate_many

    mean_gain = float(RANK_P @ _gain(RANKS))
    lose = drop / (CHANGED * mean_gain)
    base = rng.choice(RANKS, size=n, p=RANK_P)
    changed = rng.random(n) < CHANGED
    cand = np.where(changed, rng.choice(RANKS, size=n, p=RANK_P), base)
    cand = np.where(changed & (rng.random(n) < lose), 11, cand)
    questions = [f"q{i:03d}" for i in range(n)]
    qrels = {q: {f"{q}-rel": 2, f"{q}-n1": 0} for q in questions}
    runs = {"baseline": {q: _ranking(q, int(r)) for q, r in zip(questions, base, strict=True)},
            "candidate": {q: _ranking(q, int(r)) for q, r in zip(questions, cand, strict=True)}}
    scores = evaluate_many(qrels, runs, ["nDCG@10"])
    return ([scores["baseline"].per_query[q]["nDCG@10"] for q in questions],
            [scores["candidate"].per_query[q]["nDCG@10"] for q in questions])


def binary_pair(rng: np.random.Generator, n: int, drop: float) -> tuple[list[float], list[float]]:
    base = (rng.random(n) < 0.6).astype(float)
    discordant = rng.random(n) < DISCORDANT
    favours_base = rng.random(n) < (1 + drop / DISCORDANT) / 2
    # A discordant pair is (1, 0) when it favours the baseline, else (0, 1); concordant: equal.
    a = np.where(discordant, favours_base.astype(float), base)
    b = np.where(discordant, 1.0 - favours_base.astype(float), base)
    return a.tolist(), b.tolist()


def share_failing(kind: str, n: int, drop: float, pairs: int, seed: int) -> tuple[float, float]:
    """Share of pairs the gate fails, and share whose one-sided test alone is significant."""
    rng = np.random.default_rng(seed)
    make = run_pair if kind == "nDCG@10" else binary_pair
    fails = significant = 0
    for i in range(pairs):
        a, b = make(rng, n, drop)
        # A fresh seed of the sign flips per pair, as separate CI runs would draw.
        result = gate_metric(a, b, kind, alpha=ALPHA, n_boot=0, seed=seed * 100_003 + i)
        fails += result.failed
        significant += result.p_value < ALPHA
    return fails / pairs, significant / pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sds = {"nDCG@10": _run_sd(), "correct": math.sqrt(DISCORDANT)}
    print(f"{args.pairs} simulated pairs of runs per row, n = {args.n} questions, alpha {ALPHA}, "
          "tolerance = the MDD (default)")
    print(f"{'metric':<8}{'sd(δ)':>8}{'MDD':>8}{'true drop':>11}{'share failing':>15}  {'required':<8}"
          f"{'test alone p<alpha':>20}  time")
    for kind, sd in sds.items():
        mdd = minimum_detectable_difference(args.n, "per_query", sd=sd, alpha=ALPHA, power=0.8)
        for times, bound in ((0, f"<= {ALPHA}"), (1, ""), (2, ">= 0.8")):
            start = time.perf_counter()
            share, significant = share_failing(kind, args.n, times * mdd, args.pairs, args.seed + times)
            label = f"{times}xMDD" if times else "0"
            print(f"{kind:<8}{sd:>8.4f}{mdd:>8.4f}{label:>11}{share:>15.3f}  {bound:<8}{significant:>20.3f}  "
                  f"{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

"""How often ``goldpool gate`` fails, over simulated pairs of runs with a known true drop.

Each simulated pair is a baseline and a candidate scored on the same n questions; the gate's
own decision (:func:`calibration.gate.gate_metric`, default tolerance = the set's MDD, alpha
0.05) is taken on it, exactly as ``goldpool gate`` takes it. Two kinds of metric:

- **graded** (nDCG@10-like): a baseline value per question in [0, 1]; the candidate's is the
  baseline's minus the true drop plus a symmetric change: 0 on 60% of the questions (a change
  that leaves most rankings alone), else uniform on ±[0, 0.8]. The per-question differences
  are lumpy, as real ones are.
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
ZERO_SHARE = 0.6
SPREAD = 0.8
DISCORDANT = 0.2


def _graded_sd() -> float:
    """SD of one question's difference under no drop: 0 w.p. 0.6, else U(−0.8, 0.8)."""
    return math.sqrt((1 - ZERO_SHARE) * SPREAD**2 / 3)


def graded_pair(rng: np.random.Generator, n: int, drop: float) -> tuple[list[float], list[float]]:
    base = rng.beta(2.0, 1.5, size=n)
    change = np.where(rng.random(n) < ZERO_SHARE, 0.0, rng.uniform(-SPREAD, SPREAD, size=n))
    return base.tolist(), (base + change - drop).tolist()


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
    make = graded_pair if kind == "graded" else binary_pair
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
    sds = {"graded": _graded_sd(), "binary": math.sqrt(DISCORDANT)}
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

"""Coverage and width of prediction-powered intervals on simulated grades where the truth is known.

Grades 0-3 drawn with shares 0.4/0.3/0.2/0.1 (true mean 1.0); the judge is right 70% of the
time and otherwise one grade too high (biased). Each repetition labels n items by "people"
and N more by the judge only. Prints the coverage of the 95% intervals over the repetitions,
their mean widths, and the judge-only bias.

    python bench/ppi_coverage.py [--reps 500] [--n 150] [--big-n 3000] [--seed 2026]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration.ppi import ppi_mean  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--n", type=int, default=150)
    parser.add_argument("--big-n", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    shares, truth = [0.4, 0.3, 0.2, 0.1], 1.0

    def draw(size: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.choice(4, size=size, p=shares).astype(float)
        return y, np.where(rng.random(size) < 0.7, y, np.minimum(y + 1, 3))

    rows = {"PPI": ([], 0), "PPI++": ([], 0), "people only": ([], 0)}
    hits = dict.fromkeys(rows, 0)
    widths: dict[str, list[float]] = {k: [] for k in rows}
    judge_only, worth = [], []
    for _ in range(args.reps):
        y, f = draw(args.n)
        _, fu = draw(args.big_n)
        classic, tuned = ppi_mean(y, f, fu, tuned=False), ppi_mean(y, f, fu)
        for name, e in (("PPI", classic.ppi), ("PPI++", tuned.ppi), ("people only", tuned.human_only)):
            hits[name] += e.low <= truth <= e.high
            widths[name].append(e.high - e.low)
        judge_only.append(tuned.judge_only)
        worth.append(tuned.worth)
    print(f"{args.reps} repetitions, n={args.n} labelled, N={args.big_n} judge-only, true mean {truth}")
    for name in rows:
        print(f"{name:<12} coverage {hits[name] / args.reps:.3f}  mean width {np.mean(widths[name]):.4f}")
    print(f"judge only: mean estimate {np.mean(judge_only):.4f} (bias {np.mean(judge_only) - truth:+.4f})")
    print(f"PPI++ makes {args.n} human labels worth {np.mean(worth):.0f} on average")


if __name__ == "__main__":
    main()

"""Coverage and width of prediction-powered intervals on simulated grades where the truth is known.

Grades 0-3 drawn with shares 0.4/0.3/0.2/0.1 (true mean 1.0); the judge is right 70% of the
time and otherwise one grade too high (biased). Each repetition labels n items by "people"
and N more by the judge only. Prints the coverage of the 95% intervals over the repetitions,
their mean widths, and the judge-only bias.

    python bench/ppi_coverage.py [--reps 500] [--n 150] [--big-n 3000] [--seed 2026]

With ``--dl19`` the population is real instead: the 9,260 TREC DL 2019 (query, passage)
pairs, people = NIST grades, judge = UMBRELA GPT-4 grades (../shared/external). Each
repetition hides the NIST grades of all but ``--n`` random pairs; the truth is the NIST mean
over all pairs (of the grade, or of grade >= 2 with ``--relevant``).
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
    parser.add_argument("--dl19", action="store_true", help="Real population: TREC DL 2019 NIST vs UMBRELA.")
    parser.add_argument("--relevant", action="store_true", help="With --dl19: the share graded 2 or more.")
    args = parser.parse_args()
    if args.dl19:
        return real(args)
    rng = np.random.default_rng(args.seed)
    shares, truth = [0.4, 0.3, 0.2, 0.1], 1.0

    def draw(size: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.choice(4, size=size, p=shares).astype(float)
        return y, np.where(rng.random(size) < 0.7, y, np.minimum(y + 1, 3))

    rows = ("PPI", "PPI++", "people only")
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


def real(args: argparse.Namespace) -> None:
    base = Path(__file__).resolve().parents[1].parent / "shared" / "external" / "trec_dl_llm_vs_nist_qrels"

    def grades(path: Path) -> dict[tuple[str, str], int]:
        rows = (line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
        return {(q, d): int(g) for q, _, d, g in rows}

    nist = grades(base / "nist_qrels" / "qrels.dl19-passage.txt")
    umbrela = grades(base / "llm_qrels" / "umbrela_zeroshot_gpt-4.dl19.txt")
    keys = sorted(nist)
    y_all = np.array([nist[k] for k in keys], dtype=float)
    f_all = np.array([umbrela[k] for k in keys], dtype=float)
    if args.relevant:
        y_all, f_all = (y_all >= 2).astype(float), (f_all >= 2).astype(float)
    truth = y_all.mean()
    rng = np.random.default_rng(args.seed)
    hits, widths, human_widths, human_hits = 0, [], [], 0
    for _ in range(args.reps):
        chosen = np.zeros(len(keys), dtype=bool)
        chosen[rng.choice(len(keys), size=args.n, replace=False)] = True
        r = ppi_mean(y_all[chosen], f_all[chosen], f_all[~chosen])
        hits += r.ppi.low <= truth <= r.ppi.high
        human_hits += r.human_only.low <= truth <= r.human_only.high
        widths.append(r.ppi.high - r.ppi.low)
        human_widths.append(r.human_only.high - r.human_only.low)
    what = "share graded >= 2" if args.relevant else "mean grade"
    print(f"TREC DL 2019, {what}: NIST truth {truth:.4f} over {len(keys)} pairs; UMBRELA alone {f_all.mean():.4f}")
    print(f"{args.reps} repetitions with {args.n} NIST-labelled pairs, the rest judged by UMBRELA only:")
    print(f"PPI++        coverage {hits / args.reps:.3f}  mean width {np.mean(widths):.4f}")
    print(f"people only  coverage {human_hits / args.reps:.3f}  mean width {np.mean(human_widths):.4f}")


if __name__ == "__main__":
    main()

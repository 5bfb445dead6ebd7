"""Coverage and width of nugget-metrics' intervals (people, judge, PPI++) on a simulated system
whose people's scores are known, with a judge biased towards support.

    python bench/nugget_ppi_coverage.py [--reps 300] [--questions 600] [--per-question 2] [--share 0.1]
        [--seed 2026] [--empty 0.05]

One population, drawn once: ``--questions`` questions with 3 + Poisson(4) nuggets each (each
vital with probability 0.4; a question may have none vital), each answered ``--per-question``
times (a question's answers share its difficulty: the clusters). An answer's quality q is drawn
per question (Beta(3, 2)) and moved a little per answer; for each nugget, people's label is
SUPPORT with probability q, else PARTIAL_SUPPORT with probability 0.3, else NOT_SUPPORT. The
judge is biased towards support: it calls a partial support SUPPORT 60% of the time and no
support PARTIAL_SUPPORT 25% and SUPPORT 15% of the time (a support it keeps 95% of the time,
else partial). A share ``--empty`` of the answers are empty (0 for every source). The truth is
the people's value over every answer. Each repetition hands a random ``--share`` of the
questions to people, the judge labels everything, and nugget-metrics' own code
(``labeler.generation.nuggets.system_nuggets``) gives the three estimates of each score.
Prints, per score, the coverage of the 95% intervals and their mean width, people-only against
PPI++, and the judge-only bias.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labeler.generation.nuggets import (
    METRICS,
    AnswerScore,
    nugget_scores,
    system_nuggets,
)

LEVELS = ("SUPPORT", "PARTIAL_SUPPORT", "NOT_SUPPORT")


def _judge(rng: np.random.Generator, said: str) -> str:
    """The biased judge's label of a nugget people labelled ``said``."""
    u = rng.random()
    if said == "SUPPORT":
        return "SUPPORT" if u < 0.95 else "PARTIAL_SUPPORT"
    if said == "PARTIAL_SUPPORT":
        return "SUPPORT" if u < 0.6 else "PARTIAL_SUPPORT"
    return "SUPPORT" if u < 0.15 else "PARTIAL_SUPPORT" if u < 0.40 else "NOT_SUPPORT"


def population(rng: np.random.Generator, questions: int, per: int, empty: float) -> tuple[list[AnswerScore], list[AnswerScore]]:
    """Every answer's scores as people give them and as the judge does."""
    people, judged = [], []
    base = rng.beta(3.0, 2.0, size=questions)
    for q in range(questions):
        importances = ["vital" if rng.random() < 0.4 else "okay" for _ in range(3 + int(rng.poisson(4)))]
        vital = sum(i == "vital" for i in importances)
        for k in range(per):
            common = {"answer_id": f"a{q}-{k}", "system": "sim", "unit": f"q{q}", "nuggets": len(importances),
                      "vital_nuggets": vital}
            if rng.random() < empty:
                zero = {m: (None if m.endswith("vital") and not vital else 0.0) for m in METRICS}
                nothing = AnswerScore(**common, words=0, empty=True, scores=zero)
                people.append(nothing)
                judged.append(nothing)
                continue
            quality = float(np.clip(base[q] + rng.normal(0, 0.05), 0.0, 1.0))
            said = ["SUPPORT" if rng.random() < quality else "PARTIAL_SUPPORT" if rng.random() < 0.3 else "NOT_SUPPORT"
                    for _ in importances]
            people.append(AnswerScore(**common, words=40, empty=False, scores=nugget_scores(importances, said)))
            judged.append(AnswerScore(**common, words=40, empty=False,
                                      scores=nugget_scores(importances, [_judge(rng, s) for s in said])))
    return people, judged


def hidden(a: AnswerScore) -> AnswerScore:
    """``a`` with no people's label (its question was not handed to people); an empty answer
    keeps its values, which its text fixes."""
    return a if a.empty else replace(a, scores=dict.fromkeys(METRICS), why="unjudged")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--questions", type=int, default=600)
    parser.add_argument("--per-question", type=int, default=2)
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--empty", type=float, default=0.05, help="Share of empty answers.")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    people, judged = population(rng, args.questions, args.per_question, args.empty)
    full = system_nuggets("sim", people, judged)
    truth = {m: full.rates[m]["people"].value for m in METRICS}
    sources = ("people", "judge", "ppi")
    hits = {(m, s): 0 for m in METRICS for s in sources}
    widths: dict[tuple[str, str], list[float]] = {(m, s): [] for m in METRICS for s in sources}
    for _ in range(args.reps):
        chosen = set(rng.choice(args.questions, size=int(args.share * args.questions), replace=False).tolist())
        seen = [a if int(a.unit[1:]) in chosen else hidden(a) for a in people]
        got = system_nuggets("sim", seen, judged)
        for m in METRICS:
            for s in sources:
                r = got.rates[m][s]
                hits[(m, s)] += r.low <= truth[m] <= r.high
                widths[(m, s)].append(r.high - r.low)
    print(f"{args.reps} repetitions; {args.questions * args.per_question} answers to {args.questions} questions "
          f"({args.per_question} each, {args.empty:.0%} empty); people label {args.share:.0%} of the questions, the "
          "judge (biased towards support) all; 95% intervals")
    print(f"{'score':<13} {'truth':>6}  {'people cover':>12} {'width':>7}  {'PPI++ cover':>11} {'width':>7}  "
          f"{'judge cover':>11} {'bias':>7}")
    for m in METRICS:
        print(f"{m:<13} {truth[m]:6.3f}  {hits[(m, 'people')] / args.reps:12.3f} {np.mean(widths[(m, 'people')]):7.4f}  "
              f"{hits[(m, 'ppi')] / args.reps:11.3f} {np.mean(widths[(m, 'ppi')]):7.4f}  "
              f"{hits[(m, 'judge')] / args.reps:11.3f} {full.rates[m]['judge'].value - truth[m]:+7.3f}")


if __name__ == "__main__":
    main()

"""Coverage and width of answer-metrics' intervals (people, judge, PPI++) on a simulated system
whose people's values are known, with a judge biased towards praise.

    python bench/answer_ppi_coverage.py [--reps 300] [--questions 1500] [--per-question 2] [--share 0.1] [--seed 2026]
        [--empty 0.1] [--ignore-questions]

One population, drawn once: ``--questions`` questions, each answered ``--per-question`` times
by the system (sampled answers, so a question's answers share its difficulty: the clusters).
An answer's quality q is drawn per question (Beta(4, 1.5)) and moved a little per answer; it
has 1 + Poisson(3) claims, each SUPPORTED with probability q; it is CORRECT with probability q
and ADDRESSES the question with probability 0.9; with ``--empty S`` a share S of the answers
are empty (incorrect, missing the question, for people and judge alike). The judge is biased:
it calls an unsupported claim SUPPORTED 40% of the time (and a supported one UNSUPPORTED 5%),
an incorrect answer CORRECT 35% of the time (a correct one INCORRECT 5%), a missing answer
ADDRESSES 50% of the time. The truth is the people's value over every answer (what people would say if they
labelled all of it). Each repetition hands a random ``--share`` of the questions (all their
answers) to people, the judge labels everything, and answer-metrics' own code
(``labeler.generation.metrics.system_metrics``) gives the three estimates. Prints, per metric, the
coverage of the 95% intervals and their mean width, people-only against PPI++, and the
judge-only bias.

With ``--evouna`` the population is real: EVOUNA's answers of five systems (the proper NQ and
TriviaQA questions, ../shared/external/evouna), people = the human correct/incorrect verdicts,
judge = lexical match (a reference alias, lower-cased without punctuation and articles, inside
the lower-cased response: the automatic check EVOUNA's paper measures, and biased). The truth
is the people's correctness over all of a system's answers; each repetition keeps people's
verdicts on a random ``--share`` of the questions only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labeler.generation.metrics import system_metrics  # noqa: E402
from labeler.generation.outcomes import Outcome  # noqa: E402

METRICS = ("faithfulness", "correctness", "answer-relevance")


def population(rng: np.random.Generator, questions: int, per: int, empty: float = 0.0) -> tuple[list[Outcome], list[Outcome]]:
    """Every answer as people judge it and as the judge does; a share ``empty`` are empty."""
    people, judged = [], []
    base = rng.beta(4.0, 1.5, size=questions)
    for q in range(questions):
        for k in range(per):
            if rng.random() < empty:  # an abstention: incorrect, missing the question, for every source
                nothing = Outcome(f"a{q}-{k}", f"q{q}", f"question {q}", 0, True, False, False, 0, 0, 0, 0)
                people.append(nothing)
                judged.append(nothing)
                continue
            quality = float(np.clip(base[q] + rng.normal(0, 0.05), 0.0, 1.0))
            claims = 1 + int(rng.poisson(3))
            supported = rng.random(claims) < quality
            said = np.where(supported, rng.random(claims) >= 0.05, rng.random(claims) < 0.40)
            correct = bool(rng.random() < quality)
            addresses = bool(rng.random() < 0.9)
            common = {"answer_id": f"a{q}-{k}", "query_id": f"q{q}", "question": f"question {q}", "words": 20,
                      "abstained": False, "claims": claims, "judged": claims, "flagged": 0}
            people.append(Outcome(**common, correct=correct, addresses=addresses, supported=int(supported.sum())))
            judged.append(Outcome(**common, supported=int(said.sum()),
                                  correct=bool(rng.random() >= 0.05) if correct else bool(rng.random() < 0.35),
                                  addresses=True if addresses else bool(rng.random() < 0.5)))
    return people, judged


def hidden(o: Outcome) -> Outcome:
    """``o`` with no people's verdict (the question was not handed to people); an empty answer
    keeps its values, which its text fixes."""
    if o.words == 0:
        return o
    return Outcome(o.answer_id, o.query_id, o.question, o.words, o.abstained, None, None, o.claims, 0, 0, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--questions", type=int, default=1500)
    parser.add_argument("--per-question", type=int, default=2)
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--empty", type=float, default=0.0, help="Share of empty answers (abstentions).")
    parser.add_argument("--ignore-questions", action="store_true",
                        help="Give every answer a question of its own (the intervals then ignore the clusters).")
    parser.add_argument("--evouna", type=Path, nargs="?", const=Path(__file__).resolve().parents[2] / "shared" / "external" / "evouna",
                        default=None, help="Real population: EVOUNA's human verdicts against lexical match.")
    args = parser.parse_args()
    if args.evouna is not None:
        return evouna(args)
    rng = np.random.default_rng(args.seed)
    people, judged = population(rng, args.questions, args.per_question, args.empty)
    if args.ignore_questions:
        from dataclasses import replace

        people, judged = ([replace(o, query_id=o.answer_id) for o in found] for found in (people, judged))
    full = system_metrics("sim", people, judged)
    truth = {m: full.rates[m]["people"].value for m in METRICS}
    rows = ("people", "judge", "ppi")
    hits = {(m, s): 0 for m in METRICS for s in rows}
    widths: dict[tuple[str, str], list[float]] = {(m, s): [] for m in METRICS for s in rows}
    judge_values: dict[str, list[float]] = {m: [] for m in METRICS}
    for _ in range(args.reps):
        chosen = set(rng.choice(args.questions, size=int(args.share * args.questions), replace=False).tolist())
        seen = [o if int(o.answer_id[1:].split("-")[0]) in chosen else hidden(o) for o in people]
        got = system_metrics("sim", seen, judged)
        for m in METRICS:
            for s in rows:
                r = got.rates[m][s]
                hits[(m, s)] += r.low <= truth[m] <= r.high
                widths[(m, s)].append(r.high - r.low)
            judge_values[m].append(got.rates[m]["judge"].value)
    answers = args.questions * args.per_question
    print(f"{args.reps} repetitions; {answers} answers to {args.questions} questions ({args.per_question} each); "
          f"people label {args.share:.0%} of the questions, the judge all; 95% intervals")
    print(f"{'metric':<17} {'truth':>6}  {'people cover':>12} {'width':>7}  {'PPI++ cover':>11} {'width':>7}  "
          f"{'judge cover':>11} {'bias':>7}")
    for m in METRICS:
        print(f"{m:<17} {truth[m]:6.3f}  {hits[(m, 'people')] / args.reps:12.3f} {np.mean(widths[(m, 'people')]):7.4f}  "
              f"{hits[(m, 'ppi')] / args.reps:11.3f} {np.mean(widths[(m, 'ppi')]):7.4f}  "
              f"{hits[(m, 'judge')] / args.reps:11.3f} {np.mean(judge_values[m]) - truth[m]:+7.3f}")


def evouna(args: argparse.Namespace) -> None:
    import json

    from bench.evouna_correctness import lexical
    from labeler.generation.outcomes import is_abstention

    questions = []
    for name in ("NQ", "TQ"):
        records = json.loads((args.evouna / f"{name}.json").read_text(encoding="utf-8"))
        questions += [(f"{name}:{i}", r) for i, r in enumerate(records) if not r.get("improper")]
    rng = np.random.default_rng(args.seed)
    print(f"EVOUNA, {len(questions)} questions; people: the human verdicts on {args.share:.0%} of the questions; "
          f"judge: lexical match on all; {args.reps} repetitions, 95% intervals of correctness")
    print(f"{'system':<9} {'truth':>6} {'judge':>6}  {'people cover':>12} {'width':>7}  {'PPI++ cover':>11} {'width':>7}")
    for system in ("fid", "gpt35", "chatgpt", "gpt4", "newbing"):
        people, judged = [], []
        for qid, r in questions:
            response = r.get(f"answer_{system}") or ""
            verdict = r.get(f"judge_{system}")
            common = {"answer_id": f"{system}:{qid}", "query_id": qid, "question": r["question"],
                      "words": len(response.split()), "abstained": is_abstention(response), "addresses": None,
                      "claims": 0, "judged": 0, "supported": 0, "flagged": 0}
            empty = not response.strip()
            people.append(Outcome(**common, correct=False if empty else (None if verdict is None else bool(verdict))))
            judged.append(Outcome(**common, correct=False if empty else lexical(response, r["golden_answer"])))
        full = system_metrics(system, people, judged)
        truth = full.rates["correctness"]["people"].value
        hits = {"people": 0, "ppi": 0}
        widths: dict[str, list[float]] = {"people": [], "ppi": []}
        for _ in range(args.reps):
            chosen = set(rng.choice(len(questions), size=int(args.share * len(questions)), replace=False).tolist())
            seen = [o if i in chosen else hidden(o) for i, o in enumerate(people)]
            got = system_metrics(system, seen, judged).rates["correctness"]
            for s in hits:
                hits[s] += got[s].low <= truth <= got[s].high
                widths[s].append(got[s].high - got[s].low)
        print(f"{system:<9} {truth:6.3f} {full.rates['correctness']['judge'].value:6.3f}  "
              f"{hits['people'] / args.reps:12.3f} {np.mean(widths['people']):7.4f}  "
              f"{hits['ppi'] / args.reps:11.3f} {np.mean(widths['ppi']):7.4f}")


if __name__ == "__main__":
    main()

"""Nugget evaluation on real answers with real human verdicts (EVOUNA's NQ-open part): does a
judge order the systems as people do? Kendall's τ with its bootstrap interval over questions.

    python bench/nugget_evouna.py [--data ../shared/external/evouna] [--questions 1000] [--seed 2026]
        [--people-share 0.25] [-o bench/out/nugget_evouna.json]

What it is built from (EVOUNA: Wang et al., NeurIPS 2023 Datasets and Benchmarks; Apache-2.0;
read from ``--data`` when present, never copied):

- **Nuggets**: one vital nugget per question, made from its NQ-open reference answer (``The
  answer is A`` with its aliases ``A or B``): what a good answer must contain. ``--questions``
  questions drawn at random (seed ``--seed``) among those not marked ``improper``.
- **Answers**: the five systems' answers to them (fid, gpt35, chatgpt, gpt4, newbing).
- **People**: EVOUNA's human annotators. Their verdict that an answer is correct against the
  reference becomes SUPPORT of the nugget, incorrect NOT_SUPPORT (an answer they gave no verdict
  on is left unlabelled).
- **Judge** (``lexical``): a reference-matching judge of the kind open-QA evaluation still uses
  (normalised text: lower case, no punctuation or articles): SUPPORT when an alias is contained
  in the answer, PARTIAL_SUPPORT when at least half of an alias's words are, else NOT_SUPPORT.

Everything goes through goldpool's own commands on a scratch project (``init``,
``import-queries``, ``import-nuggets``, ``import-answers``, ``import-verdicts --annotator`` and
``--judge``), then ``calibrate --judge lexical --json`` gives the run-level calibration (τ of the
systems' order by each of the four scores, judge against people, with a 95% bootstrap interval
over questions) and the support κ; ``nugget-metrics --judge lexical --json`` gives the scores. A
second project keeps people's verdicts on a random ``--people-share`` of the questions only, so
nugget-metrics' PPI++ value (people on that sample, the judge on all) stands beside the
people-only value on the sample and the full people's value. Prints a table, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from labeler.cli import cli  # noqa: E402

SYSTEMS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")
SCORES = ("all", "vital", "strict_all", "strict_vital")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalise(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return " ".join(_ARTICLES.sub(" ", text).split())


def lexical_verdict(answer: str, aliases: list[str]) -> str:
    """The lexical judge's verdict on the nugget ``aliases`` (the reference's forms) in ``answer``."""
    said = normalise(answer)
    words = set(said.split())
    best = 0.0
    for alias in aliases:
        a = normalise(alias)
        if a and f" {a} " in f" {said} ":
            return "support"
        tokens = a.split()
        if tokens:
            best = max(best, sum(t in words for t in tokens) / len(tokens))
    return "partial_support" if best >= 0.5 else "not_support"


def load(data: Path, n: int, seed: int) -> list[dict]:
    rows = [r for r in json.loads((data / "NQ.json").read_text(encoding="utf-8")) if not r.get("improper")]
    rows = [r for r in rows if any(r.get(f"judge_{s}") is not None for s in SYSTEMS)]
    return random.Random(seed).sample(rows, min(n, len(rows)))


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _run(*args: object) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    if result.exit_code != 0:
        raise SystemExit(f"goldpool {' '.join(map(str, args[:2]))}: {result.output}{result.exception or ''}")
    return result.stdout


def build(folder: Path, rows: list[dict], people_questions: set[str] | None) -> str:
    """A project of ``rows``; people's verdicts on every question, or on ``people_questions`` only."""
    db = str(folder / "project.db")
    _run("init", db)
    _run("import-queries", db, _jsonl(folder / "q.jsonl", [{"query_id": f"nq{k}", "text": r["question"]}
                                                             for k, r in enumerate(rows)]))
    nuggets = []
    for k, r in enumerate(rows):
        aliases = [a for a in r["golden_answer"].split("/") if a.strip()][:3]
        nuggets.append({"query_id": f"nq{k}", "text": "The answer is " + " or ".join(aliases), "importance": "vital"})
    _run("import-nuggets", db, _jsonl(folder / "n.jsonl", nuggets))
    people, judge = [], []
    for s in SYSTEMS:
        answers = [{"answer_id": f"{s}-{k}", "query_id": f"nq{k}", "question": r["question"],
                    "response": r.get(f"answer_{s}") or ""} for k, r in enumerate(rows)]
        _run("import-answers", db, _jsonl(folder / f"{s}.jsonl", answers), "--system", s)
        for k, r in enumerate(rows):
            if not (r.get(f"answer_{s}") or "").strip():
                continue  # an empty answer supports nothing: it scores 0 without a label
            aliases = [a for a in r["golden_answer"].split("/") if a.strip()]
            judge.append({"answer_id": f"{s}-{k}", "nugget_id": f"nq{k}/n1",
                          "verdict": lexical_verdict(r.get(f"answer_{s}") or "", aliases)})
            human = r.get(f"judge_{s}")
            if human is not None and (people_questions is None or f"nq{k}" in people_questions):
                people.append({"answer_id": f"{s}-{k}", "nugget_id": f"nq{k}/n1",
                               "verdict": "support" if human else "not_support"})
    _run("import-verdicts", db, _jsonl(folder / "people.jsonl", people), "--annotator", "evouna")
    _run("import-verdicts", db, _jsonl(folder / "judge.jsonl", judge), "--judge", "lexical")
    return db


def _est(e: dict | None) -> str:
    if e is None or e.get("value") is None:
        return "n/a"
    return f"{e['value']:.3f} [{e['low']:.3f}, {e['high']:.3f}]" if e.get("low") is not None else f"{e['value']:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "external" / "evouna")
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--people-share", type=float, default=0.25)
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "bench" / "out" / "nugget_evouna.json")
    args = parser.parse_args()
    if not (args.data / "NQ.json").is_file():
        raise SystemExit(f"{args.data}: no NQ.json (EVOUNA); give --data")
    rows = load(args.data, args.questions, args.seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="goldpool-evouna-") as scratch:
        full = Path(scratch) / "full"
        full.mkdir()
        db = build(full, rows, None)
        calibrated = json.loads(_run("calibrate", db, "--judge", "lexical", "--json"))
        scores = json.loads(_run("nugget-metrics", db, "--judge", "lexical", "--json"))
        sampled = set(random.Random(args.seed + 1).sample([f"nq{k}" for k in range(len(rows))],
                                                          round(args.people_share * len(rows))))
        part = Path(scratch) / "sample"
        part.mkdir()
        ppi = json.loads(_run("nugget-metrics", build(part, rows, sampled), "--judge", "lexical", "--json"))
    run_level = calibrated["nuggets"]["lexical"]
    support = calibrated["judges"]["lexical"]["nuggets"]
    result = {"questions": len(rows), "systems": list(SYSTEMS), "seed": args.seed, "people_share": args.people_share,
              "tau": run_level["order"], "systems_scores": run_level["systems"],
              "support_agreement": support["agreement"], "support_kappa": support["kappa"],
              "vital": {s: {"people": scores["systems"][s]["vital"]["people"], "judge": scores["systems"][s]["vital"]["judge"],
                            "sample_people": ppi["systems"][s]["vital"]["people"], "sample_ppi": ppi["systems"][s]["vital"]["ppi"]}
                        for s in SYSTEMS},
              "seconds": round(time.perf_counter() - started, 1)}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"EVOUNA NQ-open, {len(rows)} questions, 5 systems, one vital nugget a question (the reference answer); "
          "people: EVOUNA's annotators; judge: lexical match")
    print(f"support, judge against people: agreement {_est(support['agreement'])}, linear kappa {_est(support['kappa'])}")
    for score in SCORES:
        print(f"Kendall's tau, systems' order by {score}: {_est(run_level['order'][score])}")
    print(f"{'system':10} {'people (all q)':>24} {'judge':>24} {'people ({:.0%} of q)'.format(args.people_share):>26} "
          f"{'PPI++ (sample + judge)':>26}")
    for s, v in result["vital"].items():
        print(f"{s:10} {_est(v['people']):>24} {_est(v['judge']):>24} {_est(v['sample_people']):>26} {_est(v['sample_ppi']):>26}")
    print(f"({result['seconds']} s; {args.output})")


if __name__ == "__main__":
    main()

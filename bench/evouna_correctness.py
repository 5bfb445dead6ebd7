"""EVOUNA's answers of five systems and their human correct/incorrect verdicts through
`goldpool import-answers`, `import-verdicts` and `answer-metrics`.

    python bench/evouna_correctness.py [--data ../shared/external/evouna] [--keep DIR] [--a gpt4 --b chatgpt]

Reads ``NQ.json`` and ``TQ.json`` (one question per record with its reference ``golden_answer``
and, for fid, gpt35, chatgpt, gpt4 and newbing, ``answer_<system>`` and the human verdict
``judge_<system>``); leaves out the questions marked ``improper``. Each system's answers are
imported with their reference (answer_id ``SYSTEM:NQ:i``), each human verdict as the verdict
of one annotator (``evouna``) on the answer's correctness, and ``answer-metrics --json`` is run
on the five systems. The bench asserts, per system, correctness equal to an independent count
from the raw files, and the paired difference of every two systems equal to a per-question
count; it prints the correctness table and the paired comparison of ``--a`` and ``--b`` with
its interval and minimum detectable difference.

The count follows goldpool's one rule about empty responses: an empty answer (4 in NQ) answers
nothing, is an abstention, and is incorrect whatever the verdict; EVOUNA's annotators marked 2
of them (newbing) correct, which the count reports apart (``empty_marked_correct``). An answer
without a verdict (one newbing answer) is left out of the rate.

With ``--judge-share S`` a second project gets people's verdicts on a random share S of the
questions only and a judge's on every answer: lexical match (``lexical``: an alias of the
reference, lower-cased without punctuation and articles, inside the response; biased against
long answers), imported with ``import-verdicts --judge lexical``; ``answer-metrics --judge
lexical`` then gives each system's correctness from people on the share, from the judge, and
by PPI++, printed beside the people's value over every answer (the first project's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = "from labeler.cli import main; main()"
SYSTEMS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")


def goldpool(*args: str) -> str:
    result = subprocess.run([sys.executable, "-c", CLI, *args], check=True, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    return result.stdout


def read(folder: Path) -> list[tuple[str, int, dict]]:
    """(dataset, index, record) of every proper question."""
    out = []
    for name in ("NQ", "TQ"):
        records = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
        out += [(name, i, r) for i, r in enumerate(records) if not r.get("improper")]
    return out


def raw_value(record: dict, system: str) -> bool | None:
    """The answer's correctness as goldpool defines it, from the raw record."""
    if not (record.get(f"answer_{system}") or "").strip():
        return False
    verdict = record.get(f"judge_{system}")
    return None if verdict is None else bool(verdict)


def _normal(text: str) -> str:
    import string

    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return " ".join(w for w in text.split() if w not in ("a", "an", "the"))


def lexical(response: str, reference: str) -> bool:
    """Whether an alias of the reference (split on ``/``) appears in the response, normalised.

    >>> lexical("It was Wilhelm Röntgen, in 1901.", "Wilhelm Röntgen/Röntgen"), lexical("Paris", "Lyon")
    (True, False)
    """
    said = f" {_normal(response)} "
    return any(alias and f" {alias} " in said for alias in (_normal(a) for a in reference.split("/")))


def with_judge(questions: list[tuple[str, int, dict]], folder: Path, share: float, seed: int, a: str, b: str) -> dict:
    """People on ``share`` of the questions, lexical match on all, through answer-metrics --judge."""
    import random

    db = str(folder / "judged.db")
    goldpool("init", db)
    keys = sorted({(name, i) for name, i, _ in questions})
    chosen = set(random.Random(seed).sample(keys, int(share * len(keys))))
    people, judge = [], []
    for system in SYSTEMS:
        goldpool("import-answers", db, str(folder / f"{system}.jsonl"), "--system", system)
        for name, i, r in questions:
            response = r.get(f"answer_{system}") or ""
            if not response.strip():
                continue
            answer_id = f"{system}:{name}:{i}"
            judge.append({"item_id": answer_id, "verdict": "CORRECT" if lexical(response, r["golden_answer"]) else "INCORRECT"})
            if (name, i) in chosen and r.get(f"judge_{system}") is not None:
                people.append({"item_id": answer_id, "verdict": "CORRECT" if r[f"judge_{system}"] else "INCORRECT"})
    for records, who in ((people, ["--annotator", "evouna"]), (judge, ["--judge", "lexical"])):
        path = folder / f"judged-{who[1]}.jsonl"
        with path.open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(v) + "\n" for v in records)
        goldpool("import-verdicts", db, str(path), *who)
    measured = json.loads(goldpool("answer-metrics", db, "--judge", "lexical", "--json"))
    (folder / "answer-metrics-judged.txt").write_text(goldpool("answer-metrics", db, "--judge", "lexical"), encoding="utf-8")
    rows = {}
    for system in SYSTEMS:
        c = measured["systems"][system]["correctness"]
        rows[system] = {source: [round(c[source][k], 4) for k in ("value", "low", "high")] + [c[source]["n"]]
                        for source in ("people", "judge", "ppi")}
        rows[system]["lambda"] = round(c["ppi"]["lambda"], 3)
    pair = [p for p in measured["pairs"] if p["metric"] == "correctness" and {p["a"], p["b"]} == {a, b}]
    return {"share": share, "people_verdicts": len(people), "judge_verdicts": len(judge), "correctness": rows,
            "pair": pair}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "external" / "evouna")
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--a", default="gpt4")
    parser.add_argument("--b", default="chatgpt")
    parser.add_argument("--judge-share", type=float, default=None,
                        help="Also: people on this share of the questions, lexical match as the judge, PPI++.")
    parser.add_argument("--seed", type=int, default=2026)
    options = parser.parse_args()
    questions = read(options.data)
    folder = options.keep or Path(tempfile.mkdtemp(prefix="goldpool-evouna-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = str(folder / "p.db")
    goldpool("init", db)
    started = time.perf_counter()
    verdicts = []
    for system in SYSTEMS:
        path = folder / f"{system}.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for name, i, r in questions:
                answer_id = f"{system}:{name}:{i}"
                response = r.get(f"answer_{system}") or ""
                out.write(json.dumps({"answer_id": answer_id, "question": r["question"], "response": response,
                                      "reference": r["golden_answer"]}, ensure_ascii=False) + "\n")
                if response.strip() and r.get(f"judge_{system}") is not None:
                    verdicts.append({"item_id": answer_id, "verdict": "CORRECT" if r[f"judge_{system}"] else "INCORRECT"})
        goldpool("import-answers", db, str(path), "--system", system)
    with (folder / "verdicts.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(v) + "\n" for v in verdicts)
    goldpool("import-verdicts", db, str(folder / "verdicts.jsonl"), "--annotator", "evouna")
    imported = time.perf_counter() - started
    started = time.perf_counter()
    measured = json.loads(goldpool("answer-metrics", db, "--json"))
    seconds = time.perf_counter() - started
    (folder / "answer-metrics.txt").write_text(goldpool("answer-metrics", db), encoding="utf-8")

    table = {}
    for system in SYSTEMS:
        values = [v for _, _, r in questions if (v := raw_value(r, system)) is not None]
        got = measured["systems"][system]["correctness"]["people"]
        assert got["n"] == len(values) and abs(got["value"] - sum(values) / len(values)) < 1e-12, (system, got)
        table[system] = {
            "correctness": got["value"], "raw_count": f"{sum(values)}/{len(values)}", "interval": [got["low"], got["high"]],
            "questions": got["questions"], "words": got["words"],
            "abstention": measured["systems"][system]["abstention"]["people"]["value"],
            "empty_marked_correct": sum(1 for _, _, r in questions if not (r.get(f"answer_{system}") or "").strip()
                                        and r.get(f"judge_{system}")),
        }
    pairs = {(p["a"], p["b"]): p for p in measured["pairs"] if p["metric"] == "correctness" and p["source"] == "people"}
    for (a, b), p in pairs.items():  # the per-question difference, counted from the raw records
        by_question: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for _, _, r in questions:
            for s in (a, b):
                if (v := raw_value(r, s)) is not None:
                    by_question[r["question"]][s].append(float(v))
        diffs = [sum(q[a]) / len(q[a]) - sum(q[b]) / len(q[b]) for q in by_question.values() if q[a] and q[b]]
        assert p["n"] == len(diffs) and abs(p["difference"] - sum(diffs) / len(diffs)) < 1e-12, (a, b, p)
    chosen = pairs.get((options.a, options.b)) or pairs[(options.b, options.a)]
    judged = None if options.judge_share is None else with_judge(questions, folder, options.judge_share, options.seed,
                                                                 options.a, options.b)
    print(json.dumps({
        "with_judge": judged,
        "questions": len(questions), "answers": len(questions) * len(SYSTEMS), "verdicts": len(verdicts),
        "import_seconds": round(imported, 1), "answer_metrics_seconds": round(seconds, 1),
        "correctness": table, "pair": chosen,
        "all_pairs": {f"{a} - {b}": [round(p["difference"], 4), round(p["low"], 4), round(p["high"], 4),
                                     round(p["mdd"], 4)] for (a, b), p in pairs.items()},
    }, indent=2))


if __name__ == "__main__":
    main()

"""Diagnose on real answers: EVOUNA's NQ answers and people's verdicts, a corpus built so that
each wrong answer has a known cause, and a scripted generator for the gold-context test.

    python bench/diagnose_evouna.py EVOUNA_DIR [--system chatgpt] [--questions 300] [--seed 0] [--keep DIR]

EVOUNA (Wang et al. 2023, arXiv 2305.12421) gives, per NQ-open question, the reference answers
(``a/b`` alternatives), five systems' answers and one human correctness verdict each. The
``improper`` questions are left out. For a sample of ``--questions`` questions and one system:

- **reference**: the first alternative of ``golden_answer``;
- **corpus**: per question an answer chunk that states the reference (``A_i``) and a background
  chunk that talks about the question without the answer (``B_i``); hard negatives are other
  questions' chunks;
- each question the system got wrong (people's verdict) is given one cause, in turn:
  ``retrieval-miss`` (A_i labelled 3, not retrieved; retrieved: B_i and another question's A),
  ``context-ignored`` (A_i labelled 3 and retrieved), ``generation`` (A_i labelled 3 and
  retrieved; the generator answers wrong even from A_i), ``knowledge-gap`` (no A_i in the
  corpus; B_i labelled 2, as a lenient annotator might), ``incomplete-labels`` (A_i in the corpus,
  never labelled; B_i labelled 2 and retrieved). A question answered right: A_i labelled 3 and
  retrieved;
- **generator** (a scripted OpenAI-compatible server): given a context that holds the question's
  A_i, it replies the reference, except for the ``generation`` questions, where it repeats the
  system's own wrong answer; otherwise it replies "I don't know.";
- **gold-context verdicts**: a reply equal to the reference is CORRECT, the system's answer
  repeated keeps people's verdict on it (INCORRECT), "I don't know." is INCORRECT; they are
  imported under judge ``key`` and diagnose reads them with ``--judge key`` (people's verdicts
  on the system's own answers come first).

Every step runs the CLI in a child process; the commands are printed. The result: the
confusion of the designed cause against diagnose's outcome, and the run's counts.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
CLI = "from labeler.cli import main; main()"
CAUSES = ("retrieval-miss", "context-ignored", "generation", "knowledge-gap", "incomplete-labels")
DONT_KNOW = "I don't know."


def run(*args: str) -> str:
    print("$ goldpool " + " ".join(args), file=sys.stderr)
    done = subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"goldpool {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def write_jsonl(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return str(path)


def design(records: list[dict], system: str, rng: random.Random) -> dict:
    """Queries, corpus, qrels, answers, people's verdicts and each wrong answer's cause."""
    queries, corpus, qrels, answers, verdicts, cause = [], [], [], [], [], {}
    n = len(records)
    wrong_seen = 0
    for i, r in enumerate(records):
        q = f"q{i:04d}"
        reference = r["golden_answer"].split("/")[0].strip()
        r["reference"] = reference
        queries.append({"query_id": q, "text": r["question"]})
        verdict = bool(r[f"judge_{system}"])
        if not verdict:
            cause[q] = CAUSES[wrong_seen % len(CAUSES)]
            wrong_seen += 1
        c = cause.get(q)
        if c != "knowledge-gap":
            corpus.append({"doc_id": f"A{i:04d}", "text": f"{r['question'].capitalize()}? The answer is {reference}."})
        corpus.append({"doc_id": f"B{i:04d}", "text": f"Many people ask: {r['question']}. Sources differ on the "
                                                      "details and the question has a long history."})
        other = f"A{(i + 1 + rng.randrange(n - 1)) % n:04d}"
        if c in ("retrieval-miss",):
            labels, retrieved = {f"A{i:04d}": 3, f"B{i:04d}": 0}, [f"B{i:04d}", other]
        elif c in ("context-ignored", "generation"):
            labels, retrieved = {f"A{i:04d}": 3, f"B{i:04d}": 0}, [other, f"B{i:04d}", f"A{i:04d}"]
        elif c in ("knowledge-gap", "incomplete-labels"):
            labels, retrieved = {f"B{i:04d}": 2}, [f"B{i:04d}", other]
        else:
            labels, retrieved = {f"A{i:04d}": 3, f"B{i:04d}": 0}, [f"A{i:04d}", f"B{i:04d}"]
        qrels.extend(f"{q} 0 {d} {g}\n" for d, g in labels.items())
        answers.append({"answer_id": f"{system}-{q}", "query_id": q, "response": r[f"answer_{system}"],
                        "reference": reference, "retrieved_ids": retrieved})
        verdicts.append({"item_id": f"{system}-{q}", "verdict": "CORRECT" if verdict else "INCORRECT"})
    # A retrieved hard negative must exist: the knowledge-gap questions have no answer chunk.
    have = {d["doc_id"] for d in corpus}
    for a in answers:
        a["retrieved_ids"] = [d for d in a["retrieved_ids"] if d in have]
    return {"queries": queries, "corpus": corpus, "qrels": qrels, "answers": answers, "verdicts": verdicts,
            "cause": cause}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("evouna", type=Path, help="the EVOUNA folder (NQ.json)")
    parser.add_argument("--system", default="chatgpt", choices=("fid", "gpt35", "chatgpt", "gpt4", "newbing"))
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="build the project here and keep it")
    args = parser.parse_args()

    from judge_server import JudgeServer

    rng = random.Random(args.seed)
    records = [r for r in json.loads((args.evouna / "NQ.json").read_text(encoding="utf-8"))
               if not r["improper"] and r[f"judge_{args.system}"] is not None]
    records = rng.sample(records, min(args.questions, len(records)))
    d = design(records, args.system, rng)
    chunk_of = {c["doc_id"]: c["text"] for c in d["corpus"]}
    by_question = {r["question"]: (f"A{i:04d}", f"q{i:04d}", r) for i, r in enumerate(records)}

    def generator(message: str) -> str:
        question = re.search(r"<question id=(\w+)>\n(.*?)\n</question id=\1>", message, re.S)[2].strip()
        answer_chunk, q, r = by_question[question]
        if answer_chunk in chunk_of and chunk_of[answer_chunk] in message:
            return r[f"answer_{args.system}"] if d["cause"].get(q) == "generation" else f"{r['reference']}."
        return DONT_KNOW

    folder = args.keep or Path(tempfile.mkdtemp(prefix="goldpool-evouna-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = str(folder / "evouna.db")
    server = JudgeServer(answer=generator)
    started = time.perf_counter()
    try:
        run("init", db)
        run("import-corpus", db, write_jsonl(folder / "corpus.jsonl", d["corpus"]))
        run("import-queries", db, write_jsonl(folder / "queries.jsonl", d["queries"]))
        (folder / "qrels.txt").write_text("".join(d["qrels"]), encoding="utf-8")
        run("import-judgments", db, str(folder / "qrels.txt"), "--annotator", "people")
        run("freeze", db, "--version", "v1")
        run("import-answers", db, write_jsonl(folder / "answers.jsonl", d["answers"]), "--system", args.system)
        run("import-verdicts", db, write_jsonl(folder / "verdicts.jsonl", d["verdicts"]), "--annotator", "evouna")
        gold = json.loads(run("gold-context", f"{db}@v1", "--system", args.system, "--base-url", server.url,
                              "--model", "scripted-reader", "--json", "--no-progress"))
        from labeler.store import connect
        from labeler.store.answers import list_answers

        with connect(db) as store:
            rows = [(a.answer_id, a.query_id, a.response, a.reference) for a in list_answers(store, f"{args.system}+gold")]
        original = {a["query_id"]: a["response"] for a in d["answers"]}
        key = []
        for answer_id, q, response, reference in rows:
            right = response.strip() == f"{reference}."
            repeated = response.strip() == original[q].strip()
            key.append({"item_id": answer_id, "verdict": "CORRECT" if right and not repeated else "INCORRECT"})
        run("import-verdicts", db, write_jsonl(folder / "gold_verdicts.jsonl", key), "--judge", "key")
        report = json.loads(run("diagnose", f"{db}@v1", "--system", args.system, "--judge", "key", "--json",
                                "--html", str(folder / "diagnose.html")))
        stages = json.loads(run("stages", f"{db}@v1", "--system", args.system, "--judge", "key", "--json"))
    finally:
        server.close()
    found = {x["query_id"]: x["outcome"] for x in report["questions"]}
    confusion = Counter((d["cause"][q], found.get(q, "not diagnosed")) for q in d["cause"])
    agree = sum(n for (c, o), n in confusion.items() if c == o)
    print(json.dumps({
        "system": args.system, "questions": len(records), "wrong": len(d["cause"]), "generator_calls": gold["calls"],
        "gold_context": {k: gold[k] for k in ("selected", "no_gold", "stored")},
        "counts": report["counts"], "first": report["first"],
        "agreement": f"{agree}/{len(d['cause'])}",
        "confusion": {f"{c} -> {o}": n for (c, o), n in sorted(confusion.items())},
        "stages": {k: round(v["mean"], 3) if v["mean"] is not None else None
                   for k, v in stages["systems"][args.system]["stages"].items()},
        "seconds": round(time.perf_counter() - started, 1), "project": db,
    }, indent=2))


if __name__ == "__main__":
    main()

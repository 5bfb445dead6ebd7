"""Import of a system's answers at scale: seconds and peak memory of `goldpool import-answers`.

    python bench/answers_import.py [--answers 100000] [--format jsonl|parquet] [--keep DIR]

Project: a corpus of 20,000 documents and 10,000 queries (written through the CLI). Answers
file: ``--answers`` synthetic answers of one system, each a question (every other one a
project query's text, the rest new questions), a response of three sentences, three contexts
of ~300 characters, five retrieved doc_ids, a reference and (every other answer) three claims.
Each step below runs the CLI in a child process; its wall time and the child's own peak
resident memory (``ru_maxrss`` from ``wait4``) are printed as JSON, with the rows stored:

- ``import``: the first import (one transaction);
- ``reimport``: the same file again (every answer unchanged, nothing written);
- ``split``: ``split-claims --sentences`` on the answers whose file gave no claims.

The machine is shared: compare figures of runs made one after the other, not across days.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N_DOCS, N_QUERIES = 20_000, 10_000
CLI = "from labeler.cli import main; main()"
WORDS = ("the capital river city system answer model retrieval paris rome berlin data number year population "
         "language history science water energy light music art law health market").split()


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def write_inputs(folder: Path, n_answers: int, fmt: str, rng: random.Random) -> Path:
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for d in range(N_DOCS):
            out.write(json.dumps({"doc_id": f"d{d}", "text": _sentence(rng, 40)}) + "\n")
    queries = [f"Question {q} about {_sentence(rng, 6)}" for q in range(N_QUERIES)]
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for q, text in enumerate(queries):
            out.write(json.dumps({"query_id": f"q{q}", "text": text}) + "\n")

    def records():
        for a in range(n_answers):
            question = queries[a % N_QUERIES] if a % 2 == 0 and a < 2 * N_QUERIES else f"New question {a}?"
            record = {
                "user_input": question,
                "response": " ".join(_sentence(rng, 12) for _ in range(3)),
                "retrieved_contexts": [_sentence(rng, 50) for _ in range(3)],
                "retrieved_ids": rng.sample(range(N_DOCS), 5),
                "reference": _sentence(rng, 10),
                "answer_id": f"ans{a}",
            }
            record["retrieved_ids"] = [f"d{d}" for d in record["retrieved_ids"]]
            if a % 2:
                record["claims"] = [_sentence(rng, 8) for _ in range(3)]
            yield record

    if fmt == "jsonl":
        path = folder / "answers.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for record in records():
                out.write(json.dumps(record) + "\n")
        return path
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Written 10,000 rows at a time, never the whole table in memory.
    texts = pa.list_(pa.string())
    schema = pa.schema([("user_input", pa.string()), ("response", pa.string()), ("retrieved_contexts", texts),
                        ("retrieved_ids", texts), ("reference", pa.string()), ("answer_id", pa.string()),
                        ("claims", texts)])
    path = folder / "answers.parquet"
    with pq.ParquetWriter(path, schema) as writer:
        batch: list[dict] = []
        for record in records():
            batch.append(record)
            if len(batch) == 10_000:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return path


def run(args: list[str]) -> dict[str, float]:
    """Run ``goldpool ARGS`` in a child; its wall seconds and its peak memory (MiB).

    Linux keeps a process's peak across exec, so the figure is at least this process's size
    at the fork: this process reads and writes no big file itself.
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", CLI, *args], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)  # this child's rusage alone
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"goldpool {' '.join(args)} failed ({child.returncode})")
    return {"seconds": round(seconds, 2), "peak_mib": round(usage.ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    parser.add_argument("--keep", type=Path, default=None, help="Write the project here and keep it.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write-only", action="store_true", help="Only write the input files (into --keep).")
    options = parser.parse_args()
    folder = options.keep or Path(tempfile.mkdtemp(prefix="goldpool-answers-"))
    folder.mkdir(parents=True, exist_ok=True)
    if options.write_only:
        write_inputs(folder, options.answers, options.format, random.Random(options.seed))
        return
    # The files are written by a child of their own: a child's peak memory starts from its
    # parent's at the fork, so this process stays as small as it starts.
    subprocess.run([sys.executable, __file__, "--write-only", "--keep", str(folder), "--answers", str(options.answers),
                    "--format", options.format, "--seed", str(options.seed)], check=True)
    answers = folder / f"answers.{options.format}"
    db = str(folder / "p.db")
    for args in (["init", db], ["import-corpus", db, str(folder / "corpus.jsonl")],
                 ["import-queries", db, str(folder / "queries.jsonl")]):
        subprocess.run([sys.executable, "-c", CLI, *args], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    report: dict[str, object] = {"answers": options.answers, "format": options.format,
                                 "file_mib": round(answers.stat().st_size / 2**20, 1)}
    report["import"] = run(["import-answers", db, str(answers), "--system", "bench"])
    report["reimport"] = run(["import-answers", db, str(answers), "--system", "bench"])
    report["split"] = run(["split-claims", db, "--system", "bench", "--sentences"])
    with sqlite3.connect(db) as conn:
        report["stored"] = {
            "answers": conn.execute("SELECT count(*) FROM answers").fetchone()[0],
            "linked": conn.execute("SELECT count(*) FROM answers WHERE query_id IS NOT NULL").fetchone()[0],
            "claims_file": conn.execute("SELECT count(*) FROM claims WHERE source = 'file'").fetchone()[0],
            "claims_sentence": conn.execute("SELECT count(*) FROM claims WHERE source = 'sentence'").fetchone()[0],
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

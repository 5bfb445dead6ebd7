"""The projects of ``bench/labelling_scale.py``, built through the ``goldpool`` command line.

    python bench/scale_project.py DIR [--answers 100000] [--queries 10000] [--checkout PATH]

One project holds both kinds of work, as a team's project does:

- relevance: ``--queries`` queries, each pooled from one TREC run of 100 chunks (``build-pool``
  with BM25 and dense off), so the pool has ``100 x --queries`` entries; the corpus has ten
  chunks per pool entry of a query (at least 1,000), each of about 400 characters;
- answers: ``--answers`` answers of two systems (half each), three claims each (so claims,
  correctness and answer relevance items), two contexts of about 600 characters and a
  reference;
- work already done by another annotator, imported with ``import-verdicts``: verdicts on the
  first ``--done`` share of the claims and labels on the pool entries of the first ``--done``
  share of the queries;
- three people to sign in: ``bench-claims`` and ``bench-relevance`` (annotators) and
  ``bench-admin``. Their tokens go to ``DIR/tokens.json``.

Every step is a ``goldpool`` command of ``--checkout`` (default: this checkout), run with
that checkout first on ``PYTHONPATH``; the seconds each took go to ``DIR/build.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDPOOL = Path(sys.executable).with_name("goldpool")
FILLER = "The delta spreads over a wide plain where the water slows and drops its silt. "
PEOPLE = (("bench-claims", "annotator"), ("bench-relevance", "annotator"), ("bench-admin", "admin"))
DEPTH = 100  # pool entries per query


def goldpool(checkout: Path, *args: str) -> str:
    """Run one ``goldpool`` command of ``checkout``; its standard output."""
    env = {k: v for k, v in os.environ.items() if k != "GOLDPOOL_DB"} | {"PYTHONPATH": str(checkout)}
    done = subprocess.run([str(GOLDPOOL), *args], check=False, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"goldpool {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def _jsonl(path: Path, records: Iterator[dict[str, object]]) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record) + "\n")
    return path


def _docs(n_docs: int) -> Iterator[dict[str, object]]:
    for i in range(n_docs):
        yield {"doc_id": f"d{i}", "title": f"Chunk {i}", "text": f"Chunk {i} is about topic {i % 97}. " + FILLER * 5}


def _queries(n_queries: int) -> Iterator[dict[str, object]]:
    for q in range(n_queries):
        yield {"query_id": f"q{q}", "text": f"what is known about topic {q % 97} and river {q}"}


def _run(path: Path, n_queries: int, n_docs: int) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for q in range(n_queries):
            for rank in range(DEPTH):
                out.write(f"q{q} Q0 d{(q * DEPTH + rank) % n_docs} {rank + 1} {1000 - rank} bench\n")
    return path


def _answers(system: str, n: int) -> Iterator[dict[str, object]]:
    for k in range(n):
        first = f"River {system}-{k} is long."
        yield {
            "answer_id": f"{system}-{k}", "question": f"How long is river {system}-{k}, and where does it end?",
            "response": f"{first} It  crosses THREE\ncountries. It ends in a delta. " + FILLER * 2,
            "contexts": [f"Context one of river {k}. " + FILLER * 7, f"Context two of river {k}. " + FILLER * 7],
            "reference": f"River {k} is 6,650 km long.",
            "claims": [first, "it crosses three countries.", f"River {system}-{k} is blue."],
        }


def _done_verdicts(n_answers: int, share: float) -> Iterator[dict[str, object]]:
    """Verdicts on the first ``share`` of the claims, in import order (system a, then b)."""
    claims = [(s, k, n) for s in ("a", "b") for k in range(n_answers // 2) for n in (1, 2, 3)]
    for s, k, n in claims[: int(len(claims) * share)]:
        yield {"item_id": f"{s}-{k}#{n}", "verdict": "SUPPORTED" if (k + n) % 3 else "UNSUPPORTED", "seconds": 4.0}


def _done_labels(path: Path, n_queries: int, n_docs: int, share: float) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for q in range(int(n_queries * share)):
            for rank in range(DEPTH):
                out.write(f"q{q} 0 d{(q * DEPTH + rank) % n_docs} {(q + rank) % 4}\n")
    return path


def build(directory: Path, n_answers: int, n_queries: int, done: float, checkout: Path = ROOT) -> dict[str, str]:
    """Write the inputs and build ``directory/project.db`` through the CLI; the tokens by name."""
    directory.mkdir(parents=True, exist_ok=True)
    db = str(directory / "project.db")
    n_docs = max(1000, n_queries * 10)
    steps: dict[str, float] = {}

    def step(name: str, *args: str) -> str:
        began = time.perf_counter()
        out = goldpool(checkout, *args)
        steps[name] = round(time.perf_counter() - began, 1)
        print(f"  {name}: {steps[name]} s", flush=True)
        return out

    step("init", "init", db)
    step("import-corpus", "import-corpus", db, str(_jsonl(directory / "corpus.jsonl", _docs(n_docs))))
    step("import-queries", "import-queries", db, str(_jsonl(directory / "queries.jsonl", _queries(n_queries))))
    step("import-run", "import-run", db, str(_run(directory / "run.trec", n_queries, n_docs)), "--name", "bench")
    step("build-pool", "build-pool", db, "--bm25-depth", "0", "--dense-depth", "0", "--run-depth", str(DEPTH),
         "--no-progress")
    for system in ("a", "b"):
        answers = _jsonl(directory / f"answers-{system}.jsonl", _answers(system, n_answers // 2))
        step(f"import-answers {system}", "import-answers", db, str(answers), "--system", system)
    if done > 0:
        verdicts = _jsonl(directory / "done-verdicts.jsonl", _done_verdicts(n_answers, done))
        step("import-verdicts (claims)", "import-verdicts", db, str(verdicts), "--annotator", "other")
        if int(n_queries * done):
            labels = _done_labels(directory / "done-labels.qrels", n_queries, n_docs, done)
            step("import-verdicts (relevance)", "import-verdicts", db, str(labels), "--annotator", "other")
    tokens = {}
    for name, role in PEOPLE:
        out = step(f"add-annotator {name}", "add-annotator", db, name, "--role", role)
        tokens[name] = re.search(r"Access token[^:]*: (\S+)", out)[1]
    (directory / "tokens.json").write_text(json.dumps(tokens, indent=1) + "\n", encoding="utf-8")
    (directory / "build.json").write_text(json.dumps({"answers": n_answers, "queries": n_queries, "pool": n_queries * DEPTH,
                                                      "done": done, "seconds": steps}, indent=1) + "\n", encoding="utf-8")
    for name in directory.glob("*.jsonl"):
        name.unlink()  # the inputs are large and rebuilt from the arguments
    return tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--done", type=float, default=0.3)
    parser.add_argument("--checkout", type=Path, default=ROOT)
    args = parser.parse_args()
    build(args.directory, args.answers, args.queries, args.done, args.checkout.resolve())


if __name__ == "__main__":
    main()

"""A relevance judge end to end on TREC DL 2019: run, resume, cache, key hygiene, calibration.

Builds a project from the TREC DL 2019 passage topics: the first ``--per-query`` NIST-judged
passages of each of the 43 judged topics form the pool (passage texts are not distributed,
so each passage's text is a placeholder naming it). People: the NIST assessors' grades as
annotator ``nist``, and a second annotator simulated from them on a share of the pool (grade
kept with probability 0.75, else moved by one), only so that the human ceiling has two people
to compare; its figures are not real human agreement.

Judges:
- ``umbrela-file``: the UMBRELA GPT-4 grades imported from their qrels file;
- ``umbrela-served``: the same grades served by a local OpenAI-compatible server on 127.0.0.1
  that answers each prompt with the UMBRELA grade of its (query, passage), run with
  ``run-judge`` (with an API key set, to check it appears nowhere). It is run once, killed
  with SIGKILL half-way through a second run under another model name and resumed, then rerun.

Prints every count the checks rest on, then ``calibrate --judge`` for both judges, and
``agree`` on the full DL19 NIST vs UMBRELA qrels. Needs ../shared/external.

    python bench/relevance_check.py [--per-query 20] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DL = ROOT.parent / "shared" / "external" / "trec_dl_llm_vs_nist_qrels"
NIST = DL / "nist_qrels" / "qrels.dl19-passage.txt"
UMBRELA = DL / "llm_qrels" / "umbrela_zeroshot_gpt-4.dl19.txt"
TOPICS = DL / "nist_qrels" / "topics.dl19-passage.txt"
KEY = "sk-bench-" + "".join(random.Random().choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(24))


def qrels(path: Path) -> dict[tuple[str, str], int]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            q, _, d, g = line.split()
            out[(q, d)] = int(g)
    return out


def command(*args: str, env: dict | None = None) -> subprocess.Popen:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environment.pop("OPENAI_API_KEY", None) if env is None else None
    return subprocess.Popen([sys.executable, "-c", "from labeler.cli import main; main()", *args], env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def goldpool(*args: str, env: dict | None = None, outputs: list | None = None) -> str:
    process = command(*args, env=env)
    out, err = process.communicate()
    if outputs is not None:
        outputs += [out, err]
    if process.returncode != 0:
        sys.exit(f"goldpool {' '.join(args)} failed: {err}")
    return out


class Server:
    """Answers each relevance prompt with the UMBRELA grade of its (query, passage)."""

    def __init__(self, grades: dict[tuple[str, str], int], query_ids: dict[str, str]) -> None:
        self.requests = 0
        self.keys: Counter[str] = Counter()
        self.delay = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests += 1
                server.keys[self.headers.get("Authorization", "")] += 1
                message = body["messages"][-1]["content"]
                query = re.search(r"\nQuery: (.*)\n", message)[1]
                passage = re.search(r"MS MARCO passage (\d+)", message)[1]
                time.sleep(server.delay)
                reply = str(grades[(query_ids[query], passage)])
                data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                   "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                                                "finish_reason": "stop"}],
                                   "usage": {"prompt_tokens": len(message.split()), "completion_tokens": 1,
                                             "total_tokens": len(message.split()) + 1}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def build(work: Path, per_query: int, seed: int) -> tuple[str, dict, dict, dict]:
    nist, umbrela = qrels(NIST), qrels(UMBRELA)
    topics = dict(line.split("\t", 1) for line in TOPICS.read_text(encoding="utf-8").splitlines() if line.strip())
    judged = sorted({q for q, _ in nist})
    pool = [(q, d) for q in judged for d in sorted(d for (qq, d) in nist if qq == q)[:per_query]]
    with (work / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in judged:
            f.write(json.dumps({"query_id": q, "text": topics[q].strip()}) + "\n")
    with (work / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for d in sorted({d for _, d in pool}):
            f.write(json.dumps({"doc_id": d, "text": f"MS MARCO passage {d} (text not distributed)"}) + "\n")
    with (work / "run.txt").open("w", encoding="utf-8") as f:
        for i, (q, d) in enumerate(pool):
            f.write(f"{q} Q0 {d} {i % per_query + 1} {1000 - i % per_query} nist-judged\n")
    rng = random.Random(seed)
    second = {k: min(3, max(0, nist[k] + (0 if rng.random() < 0.75 else rng.choice([-1, 1])))) for k in pool if rng.random() < 0.4}
    for name, grades in (("nist", {k: nist[k] for k in pool}), ("second", second), ("umbrela", {k: umbrela[k] for k in pool})):
        (work / f"{name}.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in grades.items()), encoding="utf-8")
    db = str(work / "dl19.db")
    for stale in (db, db + "-wal", db + "-shm"):
        Path(stale).unlink(missing_ok=True)
    for args in (["init", db], ["import-queries", db, str(work / "queries.jsonl")], ["import-corpus", db, str(work / "corpus.jsonl")],
                 ["import-run", db, str(work / "run.txt"), "--name", "nist-judged"],
                 ["build-pool", db, "--bm25-depth", "0", "--dense-depth", "0", "--run-depth", str(per_query), "--no-progress"],
                 ["add-annotator", db, "nist"], ["add-annotator", db, "second"],
                 ["import-verdicts", db, str(work / "nist.qrels"), "--annotator", "nist"],
                 ["import-verdicts", db, str(work / "second.qrels"), "--annotator", "second"],
                 ["import-verdicts", db, str(work / "umbrela.qrels"), "--judge", "umbrela-file"]):
        print(f"$ goldpool {args[0]} ... -> {goldpool(*args).strip().splitlines()[-1]}")
    return db, umbrela, {topics[q].strip(): q for q in judged}, {"pool": len(pool), "second": len(second)}


def judge_runs(db: str, server: Server, work: Path) -> list[str]:
    outputs: list[str] = []
    env = {"OPENAI_API_KEY": KEY}
    base = ["run-judge", db, "--judge", "umbrela-served", "--model", "umbrela-gpt4", "--base-url", server.url, "--concurrency", "8"]
    out = goldpool(*base, env=env, outputs=outputs)
    print(f"first run:  {out.strip()}  [server requests {server.requests}]")
    before = server.requests
    out = goldpool(*base, env=env, outputs=outputs)
    print(f"rerun:      {out.strip()}  [server requests during rerun: {server.requests - before}]")
    # Killed half-way: a second judge name under another model (so the cache cannot answer).
    killed = [*base[:3], "umbrela-killed", "--model", "umbrela-gpt4-b", *base[6:]]
    server.delay = 0.01
    process = command(*killed, env=env)
    conn = sqlite3.connect(db)
    n_pool = conn.execute("SELECT count(*) FROM pool").fetchone()[0]
    while conn.execute("SELECT count(*) FROM judge_verdicts WHERE judge = 'umbrela-killed'").fetchone()[0] < n_pool // 2:
        if process.poll() is not None:
            sys.exit(f"the run to be killed ended first: {process.communicate()[1]}")
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    outputs += list(process.communicate())
    done = conn.execute("SELECT count(*) FROM judge_verdicts WHERE judge = 'umbrela-killed'").fetchone()[0]
    sent = server.requests
    print(f"SIGKILL after {done} of {n_pool} verdicts committed ({sent - before} requests so far)")
    server.delay = 0.0
    out = goldpool(*killed, env=env, outputs=outputs)
    counts = Counter(conn.execute("SELECT query_id, doc_id FROM judge_verdicts WHERE judge = 'umbrela-killed'").fetchall())
    print(f"resumed:    {out.strip()}")
    print(f"after resume: {len(counts)} pool entries judged, each exactly once: {set(counts.values()) == {1}}, "
          f"requests for this judge {server.requests - before} (pool {n_pool}; at most 8 in flight at the kill)")
    conn.close()
    return outputs


def key_check(work: Path, outputs: list[str], server: Server) -> None:
    leaked_out = sum(KEY in text for text in outputs)
    leaked_files = [str(p) for p in work.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    print(f"key sent to the server in {server.keys[f'Bearer {KEY}']} of {server.requests} requests; "
          f"found in {leaked_out} of {len(outputs)} outputs and in {len(leaked_files)} files {leaked_files}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-query", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", default=None)
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="dl19-"))
    work.mkdir(parents=True, exist_ok=True)
    db, umbrela, query_ids, sizes = build(work, args.per_query, args.seed)
    print(f"pool {sizes['pool']} entries of 43 queries; second annotator on {sizes['second']} of them (simulated)")
    server = Server(umbrela, query_ids)
    outputs = judge_runs(db, server, work)
    export = goldpool("export-verdicts", db, outputs=outputs)
    (work / "export.jsonl").write_text(export, encoding="utf-8")
    key_check(work, outputs, server)
    print()
    print(goldpool("calibrate", db, "--judge", "umbrela-file", "--judge", "umbrela-served", "--n-boot", "2000"))
    report = json.loads(goldpool("calibrate", db, "--judge", "umbrela-file", "--judge", "umbrela-served", "--json"))
    a, b = (report["judges"][n]["relevance"] for n in ("umbrela-file", "umbrela-served"))
    same = all(a[k] == b[k] for k in ("agreement", "kappa", "kappa_unweighted", "human_ceiling"))
    print(f"served and imported judges give the same statistics: {same}")
    print("\n$ goldpool agree qrels.dl19-passage.txt umbrela_zeroshot_gpt-4.dl19.txt")
    print(goldpool("agree", str(NIST), str(UMBRELA)))


if __name__ == "__main__":
    main()

"""Labelling benchmark: server time from a key press to the next item being ready.

    python bench/labelling.py

A key press is ``record_judgment`` (commit the label) followed by ``next_item`` (the next
item, handing out a new batch when one is used up). Project: 1,000 queries x 100 pool entries
(100k) with 50k labels already made by eight annotators, as the store would have recorded
them (assignments, holds, 20% overlap, rubric hash). Then:

- one annotator labels 1,000 items alone;
- eight annotators label 500 items each at once, one process each, on the same file: every
  label must be in the database afterwards and no call may fail with "database is locked".

Also shown: ``progress`` (the labelling page draws it on every item) and the first call of
each annotator, which finds their place and the project's first open query and stores both.

Then, busy: one annotator keeps pressing keys (a key every 50 ms) while, in two other
processes on the same file, ``goldpool import-corpus`` reads a synthetic corpus of 1M chunks
(written by the bench into a temporary directory) and ``goldpool build-pool`` (BM25) runs:
key press latency p50, p95 and max, against the same annotator's presses with nothing else
running (the baseline, measured just before). ``--busy-only`` runs only this part on a
project built before; ``--chunks N`` changes the corpus size.

The machine is shared: compare the numbers with each other, not across runs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))

from labeler.retrieval import scheduling  # noqa: E402
from labeler.store import connect, init_db, now  # noqa: E402
from labeler.store.connection import start_checkpointer  # noqa: E402
from labeler.store import access, labels  # noqa: E402
from labeler.store.rubric import current_rubric  # noqa: E402
from labeler.store.vocabulary import OWNER  # noqa: E402
from labeler.store.assign import is_overlap  # noqa: E402

N_QUERIES, PER_QUERY, N_LABELS, N_ANNOTATORS = 1_000, 100, 50_000, 8
SOLO_LABELS, CONCURRENT_LABELS = 1_000, 500
WORDS = "retrieval chunk passage answer relevant query index corpus model score document evidence".split()


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def build(path: Path) -> list[int]:
    """The 100k/50k project; returns the annotator ids."""
    path.unlink(missing_ok=True)
    db = init_db(path)
    rng, at = random.Random(20261130), now()
    queries = [f"q{n:04d}" for n in range(N_QUERIES)]
    conn = db.conn
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO queries (query_id, text, content_hash) VALUES (?, ?, ?)",
        ((q, _text(rng, 8), q) for q in queries),
    )
    conn.executemany(
        "INSERT INTO documents (doc_id, title, text, content_hash) VALUES (?, ?, ?, ?)",
        ((f"{q}-d{n:03d}", "", _text(rng, 90), f"{q}{n}") for q in queries for n in range(PER_QUERY)),
    )
    conn.execute("INSERT INTO pool_builds (id, at, params) VALUES (1, ?, '{}')", [at])
    conn.executemany(
        "INSERT INTO pool (query_id, doc_id, sources, priority, position, added_at, build_id) "
        "VALUES (?, ?, ?, ?, ?, ?, 1)",
        ((q, f"{q}-d{n:03d}", '{"bm25": 1}', 1 / (61 + n), n + 1, at) for q in queries for n in range(PER_QUERY)),
    )
    conn.execute("COMMIT")
    people = [access.add_annotator(db, f"annotator{n}")[0].id for n in range(N_ANNOTATORS)]
    _label_history(db, queries, people, rng)
    db.close()
    return people


def _label_history(db, queries: list[str], people: list[int], rng: random.Random) -> None:
    """50k labels in batches of 10 per query, round robin, overlap entries labelled twice."""
    rubric = current_rubric(db)
    conn, at, far = db.conn, now(), "2999-01-01T00:00:00.000000+00:00"
    order = dict.fromkeys(people, 0)
    assignments, holds, judgments = [], [], []
    turn = 0
    for q in queries:
        for start in range(0, PER_QUERY, 10):
            first = people[turn % len(people)]
            turn += 1
            for n in range(start, start + 10):
                doc_id = f"{q}-d{n:03d}"
                who = [first]
                if is_overlap(q, doc_id, 0.2):
                    who.append(people[(people.index(first) + 1 + turn % (len(people) - 1)) % len(people)])
                else:
                    holds.append((q, doc_id, first, far))
                for a in who:
                    order[a] += 1
                    assignments.append((q, doc_id, a, order[a], at))
                    judgments.append((q, doc_id, a, rng.randrange(4), "", at, rng.uniform(3, 60), rubric.hash))
            if len(judgments) >= N_LABELS:
                break
        if len(judgments) >= N_LABELS:
            break
    conn.execute("BEGIN")
    conn.execute("INSERT INTO rubrics (hash, text, created_at) VALUES (?, ?, ?)", [rubric.hash, rubric.text, at])
    conn.executemany("INSERT INTO assignments VALUES (?, ?, ?, ?, ?)", assignments)
    conn.executemany("INSERT INTO reservations VALUES (?, ?, ?, ?)", holds)
    conn.executemany(
        "INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, note, at, seconds, rubric_hash) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        judgments,
    )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")


def _press(db, annotator_id: int, item, relevance: int) -> tuple[object, float]:
    began = time.perf_counter()
    labels.record_judgment(db, annotator_id, item.query_id, item.doc_id, relevance, 5.0)
    following = scheduling.next_item(db, annotator_id)
    return following, time.perf_counter() - began


def solo(path: Path, annotator_id: int) -> dict[str, list[float]]:
    db = connect(path)
    began = time.perf_counter()
    item = scheduling.next_item(db, annotator_id)
    first = time.perf_counter() - began
    waits, drawing = [], []
    for n in range(SOLO_LABELS):
        item, wait = _press(db, annotator_id, item, n % 4)
        waits.append(wait)
        began = time.perf_counter()
        labels.progress(db, annotator_id, item.query_id)
        drawing.append(time.perf_counter() - began)
    return {"press": waits, "progress": drawing, "first": [first]}


def _worker(path: str, annotator_id: int, start, queue) -> None:
    db = connect(path)
    start.wait()
    ids, waits, locked = [], [], 0
    item = scheduling.next_item(db, annotator_id)
    while len(ids) < CONCURRENT_LABELS and item is not None:
        began = time.perf_counter()
        try:
            ids.append(labels.record_judgment(db, annotator_id, item.query_id, item.doc_id, len(ids) % 4, 5.0))
            item = scheduling.next_item(db, annotator_id)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            locked += 1
            continue
        waits.append(time.perf_counter() - began)
    queue.put((annotator_id, ids, waits, locked))


def concurrent(path: Path, people: list[int]) -> tuple[list[float], int, int, int]:
    """Eight processes at once; returns the waits, labels present, labels expected, lock errors."""
    context = multiprocessing.get_context("fork")
    start, queue = context.Barrier(len(people)), context.Queue()
    workers = [context.Process(target=_worker, args=(str(path), a, start, queue)) for a in people]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=1800) for _ in workers]
    for worker in workers:
        worker.join()
    db = connect(path)
    present, waits, locked, expected = 0, [], 0, 0
    for annotator_id, ids, times, errors in results:
        waits += times
        locked += errors
        expected += CONCURRENT_LABELS
        for n, row_id in enumerate(ids):
            row = db.execute("SELECT annotator_id, relevance FROM judgments WHERE id = ?", [row_id]).fetchone()
            present += row == (annotator_id, n % 4)
    return waits, present, expected, locked


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def write_corpus(path: Path, n: int) -> None:
    """``n`` synthetic chunks as JSONL, ~20 words each, under ids no earlier run used."""
    rng, run = random.Random(7), int(time.time())
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            out.write(json.dumps({"doc_id": f"big{run}-{i:07d}", "text": _text(rng, 20)}) + "\n")


SLOW: list[tuple[float, float, float]] = []  # (seconds since start, label, next item) of presses > 1 s


def _keep_pressing(path: Path, annotator_id: int, until: Callable[[], bool], pause: float = 0.05) -> list[float]:
    """Press a key every ``pause`` seconds until ``until()``; the latency of each press.

    The connection is configured as the app's are: no checkpoint on commit, a checkpointer
    thread beside it.
    """
    db = connect(path, autocheckpoint=False)
    start_checkpointer(path)
    item, waits, n, start = scheduling.next_item(db, annotator_id), [], 0, time.perf_counter()
    while not until() and item is not None:
        began = time.perf_counter()
        labels.record_judgment(db, annotator_id, item.query_id, item.doc_id, n % 4, 5.0)
        saved = time.perf_counter()
        item = scheduling.next_item(db, annotator_id)
        waits.append(time.perf_counter() - began)
        if waits[-1] > 1:
            SLOW.append((began - start, saved - began, time.perf_counter() - saved))
        n += 1
        time.sleep(pause)
    db.close()
    return waits


def busy(path: Path, annotator_id: int, chunks: int) -> dict[str, object]:
    """Key presses alone, then beside an import of ``chunks`` chunks and a BM25 pool build."""
    goldpool = Path(sys.executable).with_name("goldpool")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "big.jsonl"
        began = time.perf_counter()
        write_corpus(corpus, chunks)
        print(f"\nbusy: {chunks:,} chunks written ({corpus.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - began:.0f} s")
        stop_at = time.monotonic() + 20
        alone = _keep_pressing(path, annotator_id, lambda: time.monotonic() > stop_at)
        started = time.perf_counter()
        importer = subprocess.Popen([str(goldpool), "import-corpus", str(path), str(corpus)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        builder = subprocess.Popen([str(goldpool), "build-pool", str(path), "--dense-depth", "0", "--run-depth", "0",
                                    "--no-progress"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        ended: dict[str, float] = {}

        def done() -> bool:
            for name, proc in (("import-corpus", importer), ("build-pool", builder)):
                if name not in ended and proc.poll() is not None:
                    ended[name] = time.perf_counter() - started
            return len(ended) == 2

        beside = _keep_pressing(path, annotator_id, done)
        outputs = {name: proc.communicate()[0].strip().splitlines()[-1:] for name, proc in
                   (("import-corpus", importer), ("build-pool", builder))}
        codes = {"import-corpus": importer.returncode, "build-pool": builder.returncode}
    return {"alone": alone, "beside": beside, "ended": ended, "outputs": outputs, "codes": codes}


def _print_busy(result: dict[str, object]) -> None:
    print(f"\n{'key press (label -> next item)':<44}{'n':>6}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'>1 s':>6}")
    for name, values in (("alone", result["alone"]), ("beside import-corpus 1M + build-pool", result["beside"])):
        values = list(values)  # type: ignore[arg-type]
        print(f"{name:<44}{len(values):>6}{_ms(values, 0.5):>9.1f}{_ms(values, 0.95):>9.1f}"
              f"{1000 * max(values):>9.1f}{sum(v > 1 for v in values):>6}")
    for at, save, following in SLOW:
        print(f"  slow press at {at:.1f} s: label {1000 * save:.0f} ms, next item {1000 * following:.0f} ms")
    for name, seconds in result["ended"].items():  # type: ignore[union-attr]
        print(f"{name}: exit {result['codes'][name]} after {seconds:.0f} s: {' '.join(result['outputs'][name])}")  # type: ignore[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--busy-only", action="store_true", help="only the busy part, on the project built before")
    parser.add_argument("--chunks", type=int, default=1_000_000, help="chunks imported beside the key presses")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "labelling.db"
    if args.busy_only:
        people = [a.id for a in access.list_annotators(connect(path), caller=OWNER)]
        _print_busy(busy(path, people[-1], args.chunks))
        return
    began = time.perf_counter()
    people = build(path)
    db = connect(path)
    pool = db.execute("SELECT count(*) FROM pool").fetchone()[0]
    made = db.execute("SELECT count(*) FROM judgments").fetchone()[0]
    db.close()
    took = time.perf_counter() - began
    print(f"project: {pool:,} pool entries, {made:,} labels, {N_ANNOTATORS} annotators (built in {took:.0f} s)")
    alone = solo(path, people[0])
    waits, present, expected, locked = concurrent(path, people)
    rows = [
        ("one annotator: label -> next item", alone["press"]),
        ("one annotator: progress()", alone["progress"]),
        (f"{len(people)} at once: label -> next item", waits),
    ]
    print(f"\n{'case':<40}{'n':>6}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}{'>300 ms':>9}")
    for name, values in rows:
        slow = sum(v > 0.3 for v in values)
        print(
            f"{name:<40}{len(values):>6}{_ms(values, 0.5):>9.1f}{_ms(values, 0.95):>9.1f}"
            f"{_ms(values, 0.99):>9.1f}{1000 * max(values):>9.1f}{slow:>9}"
        )
    print(f"\nfirst call of a session (finds its place, stores it): {1000 * alone['first'][0]:.0f} ms")
    print(
        f"{len(people)} x {CONCURRENT_LABELS} labels: {present}/{expected} present, "
        f"{locked} 'database is locked' errors"
    )
    print(f"mean label -> next item, one annotator: {1000 * statistics.fmean(alone['press']):.1f} ms")
    _print_busy(busy(path, people[-1], args.chunks))


if __name__ == "__main__":
    main()

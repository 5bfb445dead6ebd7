"""Store calls that read the current row per (item, person): milliseconds per call.

    python bench/current_rows.py [--repeat N] [--keep DIR]

Project (written straight into a fresh database, as the store would have recorded it): 300
queries x 50 pool entries, six annotators, ~20k judgments (20% of the entries labelled twice,
10% of the labels changed once), 600 adjudications (a sixth of them changed), 1,500 verdict
items with two people's verdicts each (changed now and then), and two judges' verdicts on
every item and on 5,000 pool entries (each run twice). Then each call below runs ``--repeat``
times; the median is printed as JSON (milliseconds). Point reads (one item of one person) are
timed over 200 different items per repeat and given per call.

The machine is shared: compare figures of runs made one after the other, not across days.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labeler.store import candidates, init_db, now, verdict_queue  # noqa: E402
from labeler.store import versions as store_versions  # noqa: E402
from labeler.store import labels, review, verdicts  # noqa: E402
from labeler.store.access import OWNER  # noqa: E402
from labeler.store.verdict_io import import_verdicts  # noqa: E402

N_QUERIES, PER_QUERY, N_ANNOTATORS = 300, 50, 6
N_FAITH, N_PAIR, N_JUDGED_POOL = 1_000, 500, 5_000


def build(path: Path, rng: random.Random) -> dict[str, object]:
    """Write the project; return what the timed calls need (items, people, files)."""
    db = init_db(path)
    at = now()
    conn = db.conn
    conn.execute("BEGIN")
    ids = [conn.execute("INSERT INTO annotators (name, role, token_salt, token_hash, active, created_at) "
                        "VALUES (?, ?, '', '', 1, ?)", [f"a{n}", "admin" if n == 0 else "annotator", at]).lastrowid
           for n in range(N_ANNOTATORS)]
    pool = []
    for q in range(N_QUERIES):
        qid = f"q{q:04d}"
        conn.execute("INSERT INTO queries (query_id, text, content_hash) VALUES (?, ?, ?)", [qid, f"query {q}", qid])
        for d in range(PER_QUERY):
            did = f"{qid}-d{d:03d}"
            conn.execute("INSERT INTO documents (doc_id, title, text, content_hash) VALUES (?, '', ?, ?)", [did, f"text {did}", did])
            conn.execute("INSERT INTO pool (query_id, doc_id, sources, priority, position, added_at) VALUES (?, ?, '{}', ?, ?, ?)",
                         [qid, did, 1 / (61 + d), d + 1, at])
            pool.append((qid, did))
    pairs = []
    for n, (qid, did) in enumerate(pool):
        people = [ids[n % N_ANNOTATORS]]
        if rng.random() < 0.2:
            people.append(ids[(n + 1 + rng.randrange(N_ANNOTATORS - 1)) % N_ANNOTATORS])
        pairs += [(qid, did, a) for a in people]
    rows = [(q, d, a, rng.randrange(4)) for q, d, a in pairs]
    rows += [(q, d, a, rng.randrange(4)) for q, d, a in rng.sample(pairs, len(pairs) // 10)]
    rng.shuffle(rows)
    order = {a: 0 for a in ids}
    for q, d, a in pairs:
        order[a] += 1
        conn.execute("INSERT INTO assignments (query_id, doc_id, annotator_id, shown_order, assigned_at) VALUES (?, ?, ?, ?, ?)",
                     [q, d, a, order[a], at])
    conn.executemany("INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, note, at) VALUES (?, ?, ?, ?, '', ?)",
                     [(*r, at) for r in rows])
    adjudicated = rng.sample(pool, 600)
    for q, d in adjudicated + adjudicated[:100]:
        conn.execute("INSERT INTO adjudications (query_id, doc_id, annotator_id, relevance, at) VALUES (?, ?, ?, ?, ?)",
                     [q, d, ids[0], rng.randrange(4), at])
    items = [(f"f{n:05d}", "faithfulness") for n in range(N_FAITH)] + [(f"p{n:05d}", "pairwise") for n in range(N_PAIR)]
    for item_id, kind in items:
        conn.execute("INSERT INTO verdict_items (item_id, kind, question, contexts, response, response_a, response_b, "
                     "content_hash, added_at) VALUES (?, ?, 'q', '[\"c\"]', 'r', 'ra', 'rb', ?, ?)", [item_id, kind, item_id, at])
    human = []
    for n, (item_id, kind) in enumerate(items):
        for a in (ids[n % N_ANNOTATORS], ids[(n + 1) % N_ANNOTATORS]):
            order_ = "AB" if kind == "pairwise" else None
            conn.execute("INSERT INTO verdict_assignments (item_id, annotator_id, kind, batch, shown_order, slot_order, "
                         "assigned_at) VALUES (?, ?, ?, 1, ?, ?, ?)", [item_id, a, kind, n + 1, order_, at])
            for _ in range(1 + (rng.random() < 0.15)):
                verdict = rng.choice(("SUPPORTED", "UNSUPPORTED") if kind == "faithfulness" else ("A", "B", "TIE"))
                human.append((item_id, a, verdict, order_, at))
    rng.shuffle(human)
    conn.executemany("INSERT INTO human_verdicts (item_id, annotator_id, verdict, shown_order, note, at) "
                     "VALUES (?, ?, ?, ?, '', ?)", human)
    judged = []
    for judge in ("j1", "j2"):
        for _ in range(2):  # every unit judged twice: two runs under different prompts
            for item_id, kind in items:
                for order_ in (("AB", "BA") if kind == "pairwise" else (None,)):
                    verdict = rng.choice(("SUPPORTED", "UNSUPPORTED") if kind == "faithfulness" else ("A", "B", "TIE"))
                    judged.append((judge, kind, item_id, None, None, order_, verdict))
            for q, d in pool[:N_JUDGED_POOL]:
                judged.append((judge, "relevance", None, q, d, None, str(rng.randrange(4))))
    conn.executemany("INSERT INTO judge_verdicts (judge, task, item_id, query_id, doc_id, shown_order, verdict, at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(*j, at) for j in judged])
    conn.execute("COMMIT")
    # Import files whose every record equals the current one: the import reads, writes nothing.
    person = "a1"
    mine = conn.execute("SELECT h.item_id, h.verdict, h.shown_order, h.note FROM human_verdicts h WHERE h.annotator_id = ? "
                        "ORDER BY h.id", [ids[1]]).fetchall()
    latest = {item: (v, o, note) for item, v, o, note in mine}
    human_file = path.with_name("human.jsonl")
    with human_file.open("w") as out:
        for item, (v, o, note) in list(latest.items())[:500]:
            out.write(json.dumps({"item_id": item, "verdict": v, "order": o, "note": note}) + "\n")
    relevance = conn.execute("SELECT query_id, doc_id, relevance FROM judgments WHERE annotator_id = ? ORDER BY id",
                             [ids[1]]).fetchall()
    current = {(q, d): r for q, d, r in relevance}
    qrels = [(n, q, d, r) for n, ((q, d), r) in enumerate(list(current.items())[:500], start=1)]
    assigned = {a: [(q, d) for q, d, b in pairs if b == a] for a in ids}
    cards = {a: [i for n, (i, _) in enumerate(items) if a in (ids[n % N_ANNOTATORS], ids[(n + 1) % N_ANNOTATORS])] for a in ids}
    db.close()
    return {"ids": ids, "assigned": assigned, "cards": cards, "human_file": human_file, "person": person,
            "qrels": qrels, "n_judgments": len(rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", type=Path, default=None, help="write the project here instead of a temporary directory")
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = (args.keep or Path(tmp)) / "bench.db"
        path.unlink(missing_ok=True)
        made = build(path, rng)
        from labeler.store import connect

        db = connect(path)
        ids = made["ids"]
        a = ids[1]
        some = rng.sample(made["assigned"][a], 200)
        some_cards = rng.sample(made["cards"][a], 200)
        queries = [f"q{q:04d}" for q in rng.sample(range(N_QUERIES), 100)]
        calls: dict[str, tuple[Callable[[], object], int]] = {
            "get_item (one item, per call)": (lambda: [labels.get_item(db, a, q, d) for q, d in some], len(some)),
            "get_card (one verdict item, per call)": (lambda: [verdict_queue.get_card(db, a, i) for i in some_cards], len(some_cards)),
            "candidates.labels (one query, per call)": (lambda: [candidates.labels(db, q) for q in queries], len(queries)),
            "own_verdicts (one annotator)": (lambda: verdicts.own_verdicts(db, a), 1),
            "latest_judgments": (lambda: labels.latest_judgments(db, caller=OWNER), 1),
            "disagreements": (lambda: review.disagreements(db, caller=OWNER), 1),
            "adjudications": (lambda: review.adjudications(db, caller=OWNER), 1),
            "golden current_labels": (lambda: store_versions.current_labels(db, caller=OWNER), 1),
            "golden current_adjudications": (lambda: store_versions.current_adjudications(db, caller=OWNER), 1),
            "latest_human_verdicts": (lambda: verdicts.latest_human_verdicts(db, caller=OWNER), 1),
            "latest_judge_verdicts (one judge)": (lambda: verdicts.latest_judge_verdicts(db, "j1", caller=OWNER), 1),
            "export_judgments": (lambda: review.export_judgments(db, io.StringIO(), caller=OWNER), 1),
            "import-verdicts, 500 unchanged records": (
                lambda: import_verdicts(db, made["human_file"], annotator=made["person"], caller=OWNER), 1),
            "import-judgments, 500 unchanged labels": (
                lambda: store_versions.import_labels(db, "bench.qrels", made["qrels"], made["person"], caller=OWNER), 1),
        }
        result: dict[str, object] = {"judgments": made["n_judgments"]}
        for name, (call, per) in calls.items():
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                call()
                times.append((time.perf_counter() - start) * 1000 / per)
            result[name] = round(statistics.median(times), 3)
        db.close()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

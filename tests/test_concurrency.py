"""Several annotators label at once, each in its own process, on one project file."""

from __future__ import annotations

from pathlib import Path

from labeler.store import connect
from labeler.store import access
from labels_fixtures import make_project, run_workers

N_PROCESSES = 4
N_LABELS = 50


def test_concurrent_annotators_lose_no_label_and_never_see_a_lock(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    db = make_project(path, n_queries=20, per_query=15, batch_size=5)  # 300 entries, 20% overlap
    people = [access.add_annotator(db, f"annotator{n}")[0].id for n in range(N_PROCESSES)]
    db.close()
    results = run_workers(str(path), people, N_LABELS)

    db = connect(path)
    stored = {r[0]: tuple(r[1:]) for r in db.execute("SELECT id, annotator_id, relevance FROM judgments")}
    assert sum(locked for _, locked, _ in results) == 0
    assert len(stored) == N_PROCESSES * N_LABELS
    for annotator_id, (ids, _, _) in zip(people, results, strict=True):
        assert len(ids) == N_LABELS
        assert [stored[i] for i in ids] == [(annotator_id, n % 4) for n in range(N_LABELS)]
    # Labels went where assignment sent them: no single-label entry was labelled twice.
    per_item = db.execute(
        "SELECT count(*) FROM (SELECT query_id, doc_id FROM judgments j WHERE EXISTS "
        "(SELECT 1 FROM reservations r WHERE r.query_id = j.query_id AND r.doc_id = j.doc_id) "
        "GROUP BY query_id, doc_id HAVING count(DISTINCT annotator_id) > 1)"
    ).fetchone()[0]
    assert per_item == 0
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

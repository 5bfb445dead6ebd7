"""Golden sets and pairs of TREC runs for the gate, built so that the drop is known exactly.

200 questions, one relevant chunk each (grade 2) among 10 retrieved. nDCG@10 of a question is
1/log2(rank + 1) of its relevant chunk: 1.0 at rank 1, 0.5 at rank 3. The candidate moves the
relevant chunk from rank 1 to 3 on ``worse`` questions (−0.5 each) and from 3 to 1 on
``better`` ones (+0.5), so the mean drop is 0.5·(worse − better)/200:

- a 5-point drop: 24 worse, 4 better (sd of the differences 0.1807, MDD 0.0358);
- a 2-point drop: 18 worse, 10 better (sd 0.1865, MDD 0.0369).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from labeler.retrieval.golden_set import content_hash

N = 200
#: drop in points -> (questions made worse, questions made better)
DROPS = {5: (24, 4), 2: (18, 10), 0: (0, 0)}


def _ranks(n: int = N) -> list[int]:
    """The baseline's rank of each question's relevant chunk: 1, 3, then a spread of ranks."""
    spread = [1, 2, 4, 1, 5, 3, 1, 7, 2, 10]
    return [1 if i < 30 else 3 if i < 45 else spread[i % len(spread)] for i in range(n)]


def _run(ranks: list[int], tag: str) -> str:
    lines = []
    for i, rank in enumerate(ranks):
        q = f"q{i:03d}"
        others = iter(f"{q}-n{j}" for j in range(1, 10))
        for position in range(1, 11):
            doc = f"{q}-rel" if position == rank else next(others)
            lines.append(f"{q} Q0 {doc} {position} {11 - position} {tag}")
    return "\n".join(lines) + "\n"


def qrels_text(n: int = N) -> str:
    """Every question's relevant chunk (grade 2) and one judged non-relevant one (grade 0)."""
    return "".join(f"q{i:03d}\t0\tq{i:03d}-rel\t2\nq{i:03d}\t0\tq{i:03d}-n1\t0\n" for i in range(n))


def write_golden(folder: Path) -> Path:
    """An export folder as ``goldpool export --format trec`` leaves it: qrels.txt and a manifest
    listing its sha256."""
    folder.mkdir(parents=True, exist_ok=True)
    qrels = folder / "qrels.txt"
    qrels.write_text(qrels_text(), encoding="utf-8")
    digest = hashlib.sha256(qrels.read_bytes()).hexdigest()
    rows = [line.split("\t") for line in qrels_text().splitlines()]
    manifest = {"name": "v1", "content_hash": content_hash((q, d, int(g)) for q, _, d, g in rows),
                "files": {"qrels.txt": digest}}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return folder


def write_runs(folder: Path, drop_points: int, *, baseline: str = "main.trec", candidate: str = "pr.trec") -> tuple[Path, Path]:
    """The baseline run and a candidate ``drop_points`` nDCG@10 points worse (see :data:`DROPS`)."""
    worse, better = DROPS[drop_points]
    base = _ranks()
    cand = list(base)
    for i in range(worse):  # the first 30 questions have their relevant chunk at rank 1
        cand[i] = 3
    for i in range(30, 30 + better):  # the next 15 at rank 3
        cand[i] = 1
    a, b = folder / baseline, folder / candidate
    a.write_text(_run(base, "main"), encoding="utf-8")
    b.write_text(_run(cand, "pr"), encoding="utf-8")
    return a, b

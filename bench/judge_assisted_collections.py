"""The collections of ``bench/judge_assisted.py``: TREC DL's people and judge labels, the
classic collections with a simulated judge and their runs, and a simulation whose relevant
count per query runs from 2 to 100 (see that module's docstring)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

GRADED_NOISE = (0.5, 0.8, 1.2, 1.7, 2.4, 3.4, 5.0)
TUNED_NOISE = (0.3, 1.0)
Qrels = dict[str, dict[str, int]]


def read_qrels(path: Path) -> Qrels:
    out: Qrels = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    return out


def load_dl(external: Path, year: int) -> tuple[Qrels, Qrels]:
    folder = external / "trec_dl_llm_vs_nist_qrels"
    name = {19: "qrels.dl19-passage.txt", 20: "qrels.dl20-passage.txt", 21: "qrels.dl21-passage.txt"}[year]
    people = read_qrels(folder / "nist_qrels" / name)
    judge = read_qrels(folder / "llm_qrels" / f"umbrela_zeroshot_gpt-4.dl{year}.txt")
    return people, judge


def load_dl23(external: Path, judge_name: str) -> tuple[Qrels, Qrels]:
    folder = external / "llmjudge_trec_dl23"
    people = read_qrels(folder / "human" / "llmjudge_test_qrel_idx.txt")
    judge = read_qrels(folder / "llm_labels" / f"{judge_name}.txt")
    return people, judge


def clip_grades(qrels: Qrels) -> Qrels:
    return {q: {d: min(3, max(0, g)) for d, g in docs.items()} for q, docs in qrels.items()}


def confusion(people: Qrels, judge: Qrels) -> np.ndarray:
    """P(judge grade | people grade), 4 x 4, over the pairs both graded."""
    counts = np.zeros((4, 4))
    for q, docs in people.items():
        for d, g in docs.items():
            if d in judge.get(q, {}):
                counts[min(3, max(0, g)), min(3, max(0, judge[q][d]))] += 1
    return counts / counts.sum(axis=1, keepdims=True)


def graded_runs(people: Qrels, judge: Qrels, rng: np.random.Generator) -> tuple[dict[str, dict[str, list[str]]], list[str]]:
    """7 runs of graded quality (people's grade + noise) and 2 tuned to the judge (judge's grade + noise)."""
    runs: dict[str, dict[str, list[str]]] = {}
    for family, labels, noises in (("graded", people, GRADED_NOISE), ("tuned", judge, TUNED_NOISE)):
        for sd in noises:
            ranking = {}
            for q, docs in people.items():
                ids = sorted(docs)
                score = np.array([labels.get(q, {}).get(d, 0) for d in ids]) + rng.normal(0, sd, len(ids))
                ranking[q] = [ids[i] for i in np.argsort(-score, kind="stable")]
            runs[f"{family}-{sd:g}"] = ranking
    return runs, [f"tuned-{sd:g}" for sd in TUNED_NOISE]


def bm25_rankings(docs: dict[str, str], queries: dict[str, str], *, half: bool) -> dict[str, list[str]]:
    """goldpool's BM25 top 200 per query (``half``: with the first half of each query's words only)."""
    from pooling.retrieve import retrieve
    from pooling.types import content_hash

    doc_ids = sorted(docs)
    texts = [docs[d] for d in doc_ids]
    asked = [(q, " ".join(t.split()[: max(1, len(t.split()) // 2)]) if half else t) for q, t in sorted(queries.items())]
    result = retrieve(asked, doc_ids, [content_hash("", t) for t in texts], lambda: iter(texts),
                      lambda positions: [texts[p] for p in positions], bm25_depth=200, dense_depth=0, progress=False)
    return result.rankings["bm25"]


def _classic_runs(queries_used: list[str], bm25: dict[str, list[str]], dense: dict[str, list[str]],
                  rng: np.random.Generator) -> dict[str, dict[str, list[str]]]:
    """BM25, dense, their RRF fusion and four degraded variants, per query."""

    def rrf(q: str) -> list[str]:
        score: dict[str, float] = {}
        for ranking in (bm25[q], dense[q]):
            for i, d in enumerate(ranking):
                score[d] = score.get(d, 0.0) + 1.0 / (60 + i + 1)
        return sorted(score, key=lambda d: (-score[d], d))

    runs: dict[str, dict[str, list[str]]] = {"bm25": {}, "dense": {}, "rrf": {}, "bm25-reversed10": {},
                                              "dense-reversed10": {}, "bm25-pushed5": {}, "rrf-swapped3": {}}
    for q in queries_used:
        runs["bm25"][q] = bm25[q]
        runs["dense"][q] = dense[q]
        fused = rrf(q)
        runs["rrf"][q] = fused
        runs["bm25-reversed10"][q] = bm25[q][:10][::-1] + bm25[q][10:]
        runs["dense-reversed10"][q] = dense[q][:10][::-1] + dense[q][10:]
        runs["bm25-pushed5"][q] = bm25[q][5:15] + bm25[q][:5] + bm25[q][15:]
        swapped = list(fused)
        outside = [d for d in fused[50:200]]
        for slot, pick in zip(rng.choice(10, 3, replace=False), rng.choice(len(outside), 3, replace=False), strict=True):
            swapped[slot] = outside[pick]
        runs["rrf-swapped3"][q] = list(dict.fromkeys(swapped))
    return runs


def _classic_grades(name: str, external: Path, binary: dict[str, set[str]]) -> dict[str, dict[str, int]]:
    """People's grades: Cranfield's codes 1, 2, 3, 4 as 3, 2, 1, 1; the others' binary qrels as 1."""
    grades: dict[str, dict[str, int]] = {}
    if name == "cranfield":
        for line in (external / "cranfield" / "cranqrel").read_text().splitlines():
            if line.strip():
                q, d, code = line.split()
                grades.setdefault(q, {})[d] = {1: 3, 2: 2, 3: 1, 4: 1}.get(int(code), 0)
    else:
        grades = {q: {d: 1 for d in ds} for q, ds in binary.items()}
    return grades


def classic(name: str, external: Path, dl19: np.ndarray, rng: np.random.Generator, dense: bool):
    """People's qrels over the pool, the simulated judge's, the runs and the judge-tuned names."""
    import pooling_strategies as ps

    ps.EXTERNAL = external
    docs, queries, binary = ps.LOADERS[name]()
    if dense or (ps.OUT / f"{name}-rankings-{ps.CANDIDATE_DEPTH}.json").exists():
        rankings = ps.rankings_for(name, docs, queries)
    else:  # without dense retrieval: BM25 with the whole query and with half of it
        rankings = {"bm25": bm25_rankings(docs, queries, half=False), "dense": bm25_rankings(docs, queries, half=True)}
        print(f"{name}: no cached dense ranking (--dense computes it): the 'dense' runs are BM25 over the first half "
              "of each query's words", flush=True)
    grades = _classic_grades(name, external, binary)
    queries_used = sorted(q for q in queries if any(g > 0 for g in grades.get(q, {}).values()))
    bm25 = rankings["bm25"]
    runs = _classic_runs(queries_used, bm25, rankings["dense"], rng)
    # People's grade of every pooled entry (the union of the runs' top 20), then the simulated judge.
    people: Qrels = {}
    for q in queries_used:
        pooled = dict.fromkeys(d for r in runs.values() for d in r[q][:20])
        people[q] = {d: grades.get(q, {}).get(d, 0) for d in pooled}
    as_nist = {0: 0, 1: 2, 2: 2, 3: 3} if name != "cranfield" else {0: 0, 1: 1, 2: 2, 3: 3}
    judge: Qrels = {q: {d: int(rng.choice(4, p=dl19[as_nist[g]])) for d, g in ds.items()} for q, ds in people.items()}
    tuned = []
    for sd in TUNED_NOISE:
        name_ = f"tuned-{sd:g}"
        ranking = {}
        for q in queries_used:
            top = list(dict.fromkeys(bm25[q][:30]))
            score = np.array([judge[q].get(d, 0) for d in top]) + rng.normal(0, sd, len(top))
            ranking[q] = [top[i] for i in np.argsort(-score, kind="stable")] + bm25[q][30:]
        runs[name_] = ranking
        tuned.append(name_)
    # Re-pool with the tuned runs' top 20 too, so every top-10 entry of every run has both labels.
    for q in queries_used:
        for r in tuned:
            for d in runs[r][q][:20]:
                if d not in people[q]:
                    people[q][d] = grades.get(q, {}).get(d, 0)
                    judge[q][d] = int(rng.choice(4, p=dl19[as_nist[people[q][d]]]))
    return people, judge, runs, tuned


def simulated(dl19: np.ndarray, rng: np.random.Generator, *, n_queries: int = 60, per_query: int = 200):
    """A pool of ``n_queries`` queries of ``per_query`` entries whose relevant counts run from 2
    to 100 (evenly on a log scale, in a random order of queries); a relevant entry's grade is 1,
    2 or 3 with probabilities 0.4, 0.35, 0.25; the judge's grade is drawn from DL19's
    UMBRELA-given-NIST confusion; runs as for TREC DL (:func:`graded_runs`)."""
    counts = rng.permutation(np.round(np.geomspace(2, 100, n_queries)).astype(int))
    people: Qrels = {}
    judge: Qrels = {}
    for q, n_rel in enumerate(counts):
        grades = np.zeros(per_query, dtype=int)
        grades[rng.choice(per_query, n_rel, replace=False)] = rng.choice([1, 2, 3], n_rel, p=[0.4, 0.35, 0.25])
        qid = f"s{q:03d}"
        people[qid] = {f"{qid}-d{i:03d}": int(g) for i, g in enumerate(grades)}
        judge[qid] = {d: int(rng.choice(4, p=dl19[g])) for d, g in people[qid].items()}
    runs, tuned = graded_runs(people, judge, rng)
    return people, judge, runs, tuned

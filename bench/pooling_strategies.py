"""Adaptive pooling replay on Vaswani, Cranfield and CISI (complete qrels).

    python bench/pooling_strategies.py                  # all three collections
    python bench/pooling_strategies.py --collections cisi --strategies active   # rerun one
    python bench/pooling_strategies.py --report         # reprint the last results

Each strategy is replayed to 1.25 depth-50 budgets (``--budget-factor``); the stopping rule
(target recall 0.8, confidence 0.9) is asked every 10 judgments of a query (``--stop-every``).
The settings of the strategies were fixed before these runs except ``active``'s rank
features (``RANK_WEIGHT``), added and set to 1 after text-only TF-IDF lost to RRF on
Vaswani: its figures were tuned on these collections.

Sources are BM25 and dense (all-MiniLM-L6-v2) to candidate depth 200; the baseline is the
depth-50 union judged in full, in RRF order. Rankings and embeddings are cached under
bench/out/pooling_strategies/, so a rerun only replays. The qrels are read here and handed
to the replay only: strategies and the stopping rule never see them.

Collections (from ``../shared/external`` relative to the checkout, or ``$GOLDPOOL_EXTERNAL``):

- Vaswani (NPL): TREC SGML corpus and topics, binary qrels.
- Cranfield: SMART ``.I/.T/.W`` files; qrels number queries 1..225 in file order (not by
  their ``.I`` id); grades 1 (complete answer) .. 4 (minimum interest) count as relevant,
  -1 (no interest) as not relevant.
- CISI: SMART files; CISI.REL lists binary relevant pairs; queries without any relevant
  document are left out (their recall is undefined).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTERNAL = Path(os.environ.get("GOLDPOOL_EXTERNAL") or ROOT.parent / "shared" / "external")
OUT = ROOT / "bench" / "out" / "pooling_strategies"
sys.path.insert(0, str(ROOT))

CANDIDATE_DEPTH = 200
POOL_DEPTH = 50


# --------------------------------------------------------------------------- collections


def _smart_records(path: Path) -> list[tuple[str, dict[str, str]]]:
    """``.I id`` records of a SMART file as (id, {field letter: text})."""
    records: list[tuple[str, dict[str, str]]] = []
    field = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(".I"):
            records.append((line.split()[1], {}))
            field = None
        elif len(line) >= 2 and line[0] == "." and line[1].isalpha() and line[2:].strip() == "":
            field = line[1]
            records[-1][1].setdefault(field, "")
        elif field is not None and records:
            records[-1][1][field] += line.strip() + " "
    return records


def load_vaswani() -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    from pooling.readers import read_corpus, read_queries

    root = EXTERNAL / "vaswani_npl"
    docs = {d.doc_id: d.text for d in read_corpus(root / "corpus" / "doc-text.trec")}
    queries = {q.query_id: q.text for q in read_queries(root / "query-text.trec")}
    qrels: dict[str, set[str]] = {}
    for line in (root / "qrels").read_text().splitlines():
        query_id, _, doc_id, grade = line.split()
        if int(grade) > 0:
            qrels.setdefault(query_id, set()).add(doc_id)
    return docs, queries, qrels


def load_cranfield() -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    root = EXTERNAL / "cranfield"
    docs = {i: (f.get("T", "") + "\n" + f.get("W", "")).strip() for i, f in _smart_records(root / "cran.all.1400")}
    # qrels number the queries 1..225 in file order, not by their .I id
    queries = {str(n): f.get("W", "").strip() for n, (_, f) in enumerate(_smart_records(root / "cran.qry"), start=1)}
    qrels: dict[str, set[str]] = {}
    for line in (root / "cranqrel").read_text().splitlines():
        if line.strip():
            query_id, doc_id, grade = line.split()
            if int(grade) > 0:
                qrels.setdefault(query_id, set()).add(doc_id)
    return docs, queries, qrels


def load_cisi() -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    root = EXTERNAL / "cisi"
    docs = {i: (f.get("T", "") + "\n" + f.get("W", "")).strip() for i, f in _smart_records(root / "CISI.ALL")}
    queries = {i: f.get("W", "").strip() for i, f in _smart_records(root / "CISI.QRY")}
    qrels: dict[str, set[str]] = {}
    for line in (root / "CISI.REL").read_text().splitlines():
        if line.strip():
            query_id, doc_id = line.split()[:2]
            qrels.setdefault(query_id, set()).add(doc_id)
    return docs, queries, qrels


LOADERS = {"vaswani": load_vaswani, "cranfield": load_cranfield, "cisi": load_cisi}


def rankings_for(name: str, docs: dict[str, str], queries: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """BM25 and dense rankings to the candidate depth, cached on disk."""
    cached = OUT / f"{name}-rankings-{CANDIDATE_DEPTH}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    from pooling.retrieve import retrieve
    from pooling.types import content_hash

    doc_ids = sorted(docs)
    texts = [docs[d] for d in doc_ids]
    result = retrieve(
        sorted(queries.items()),
        doc_ids,
        [content_hash("", t) for t in texts],
        lambda: iter(texts),
        lambda positions: [texts[p] for p in positions],
        bm25_depth=CANDIDATE_DEPTH,
        dense_depth=CANDIDATE_DEPTH,
        cache_dir=OUT / "embeddings",
        progress=False,
    )
    cached.write_text(json.dumps(result.rankings))
    return result.rankings


def candidates_for(name: str, seed_texts: bool = True) -> tuple[list, dict[str, set[str]]]:
    """Candidate lists (with texts, for ``active``) of every judged query, and the qrels."""
    from pooling.strategies import Candidates

    docs, queries, qrels = LOADERS[name]()
    rankings = rankings_for(name, docs, queries)
    judged = sorted(q for q in queries if qrels.get(q))
    out = []
    for query_id in judged:
        lists = {source: rankings[source][query_id] for source in sorted(rankings)}
        ids = {d for r in lists.values() for d in r}
        out.append(Candidates(query_id, lists, queries[query_id], {d: docs[d] for d in ids}, POOL_DEPTH))
    return out, qrels


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


_ORDER = ["depth", "rrf", "mtf", "bandit", "hedge", "active"]


def run(name: str, strategies: list[str], stop_every: int, budget_factor: float) -> dict:
    from pooling.replay import replay, to_json

    candidates, qrels = candidates_for(name)
    clock = time.perf_counter()
    baseline = replay(candidates, qrels, [], stop_every=0).baseline_judgments
    budget = round(budget_factor * baseline)
    out: dict = {"strategies": {}}
    previous = OUT / f"{name}-replay.json"
    if previous.exists():  # rerunning some strategies keeps the others' results of the same setup
        kept = json.loads(previous.read_text())
        if (kept.get("budget"), kept.get("stop_every")) == (budget, stop_every):
            out["strategies"] = {s: v for s, v in kept["strategies"].items() if s not in strategies}
    for strategy in strategies:
        part = to_json(replay(candidates, qrels, [strategy], budget=budget, stop_every=stop_every))
        out["baseline"] = part["baseline"]
        out["strategies"].update(part["strategies"])
        print(f"  {name} {strategy}: {time.perf_counter() - clock:.0f} s", file=sys.stderr, flush=True)
    out["budget"] = budget
    out["stop_every"] = stop_every
    out["strategies"] = {s: out["strategies"][s] for s in sorted(out["strategies"], key=_ORDER.index)}
    out["collection"] = name
    out["queries"] = len(candidates)
    out["relevant_total"] = sum(len(qrels[c.query_id]) for c in candidates)
    out["relevant_in_candidates"] = sum(len(c.doc_ids & qrels[c.query_id]) for c in candidates)
    out["candidates"] = sum(len(c.doc_ids) for c in candidates)
    out["seconds"] = time.perf_counter() - clock
    (OUT / f"{name}-replay.json").write_text(json.dumps(out))
    return out


def run_stopping(name: str, strategies: list[str], stop_every: int) -> dict:
    """Every query labelled until the rule says stop (no budget), as a project with the rule on."""
    from pooling.replay import replay

    candidates, qrels = candidates_for(name)
    clock = time.perf_counter()
    out: dict = {"collection": name, "stop_every": stop_every, "strategies": {}}
    previous = OUT / f"{name}-stopping.json"
    if previous.exists():
        kept = json.loads(previous.read_text())
        if kept.get("stop_every") == stop_every:
            out["strategies"] = {s: v for s, v in kept["strategies"].items() if s not in strategies}
    base = replay(candidates, qrels, [], stop_every=0)
    out["baseline"] = {"judgments": base.baseline_judgments, "relevant_found": base.baseline_found}
    for strategy in strategies:
        r = replay(candidates, qrels, [strategy], stop_every=stop_every, until_stop=True).strategies[strategy]
        traces = [t for t in r.traces if t.findable]
        said = [t for t in traces if t.stop_at is not None]
        recall = [sum(t.relevant[: t.stop_at]) / t.findable for t in said]
        out["strategies"][strategy] = {
            "queries": len(traces),
            "said_stop": len(said),
            "at_or_above_target": sum(x >= STOP_TARGET - 1e-12 for x in recall),
            "mean_recall": sum(recall) / len(recall) if recall else None,
            "ran_out": len(traces) - len(said),
            "judgments": sum(len(t.judged) for t in r.traces),
            "relevant_found": sum(sum(t.relevant) for t in r.traces),
        }
        print(f"  {name} {strategy} (until stop): {time.perf_counter() - clock:.0f} s", file=sys.stderr, flush=True)
    out["strategies"] = {s: out["strategies"][s] for s in sorted(out["strategies"], key=_ORDER.index)}
    previous.write_text(json.dumps(out))
    return out


def print_stopping(results: list[dict]) -> None:
    rows = []
    totals = [0, 0]
    for r in results:
        base = r["baseline"]
        for strategy, s in r["strategies"].items():
            totals[0] += s["at_or_above_target"]
            totals[1] += s["said_stop"]
            share = f" ({s['at_or_above_target'] / s['said_stop']:.0%})" if s["said_stop"] else ""
            rows.append([r["collection"], strategy, f"{s['queries']}", f"{s['said_stop']}",
                         f"{s['at_or_above_target']}{share}", "-" if s["mean_recall"] is None else f"{s['mean_recall']:.2f}",
                         f"{s['ran_out']}", f"{s['judgments']:,} ({s['judgments'] / base['judgments']:.2f}x)",
                         f"{s['relevant_found']:,} ({s['relevant_found'] / base['relevant_found']:.2f}x)"])
    print(f"\nStopping rule, every query labelled until it says stop (target recall {STOP_TARGET}, "
          f"stated confidence {STOP_CONFIDENCE:.0%}, recall within the candidates; `depth` cannot leave "
          f"the depth-{POOL_DEPTH} union, so it mostly runs out first):")
    print(_table(["collection", "strategy", "queries", "said stop", "of those at/above target", "mean recall there",
                  "ran out first", "judgments (vs depth-50)", "relevant found (vs depth-50)"], rows))
    if totals[1]:
        print(f"All: where the rule said stop, {totals[0]} of {totals[1]} queries ({totals[0] / totals[1]:.1%}) "
              f"were at or above the target recall.")


def main() -> None:
    from pooling.strategies import STRATEGIES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", nargs="+", choices=sorted(LOADERS), default=["vaswani", "cranfield", "cisi"])
    parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    parser.add_argument("--stop-every", type=int, default=10, help="ask the stopping rule every n judgments of a query")
    parser.add_argument("--budget-factor", type=float, default=1.25, help="replay budget, in depth-50 unions")
    parser.add_argument("--report", action="store_true", help="print the tables of the last runs, replay nothing")
    parser.add_argument("--stopping", action="store_true",
                        help="only the stopping rule: every query labelled until it says stop, no budget")
    options = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if options.stopping:
        results = [json.loads((OUT / f"{n}-stopping.json").read_text()) if options.report
                   else run_stopping(n, options.strategies, options.stop_every) for n in options.collections]
        print_stopping(results)
        return
    rows, stops = [], []
    for name in options.collections:
        if options.report:
            r = json.loads((OUT / f"{name}-replay.json").read_text())
        else:
            r = run(name, options.strategies, options.stop_every, options.budget_factor)
        base = r["baseline"]
        print(f"{name}: {r['queries']} queries, {r['candidates']:,} candidates, relevant {r['relevant_total']:,} "
              f"(in candidates {r['relevant_in_candidates']:,}); depth-{POOL_DEPTH} union: {base['judgments']:,} "
              f"judgments, {base['relevant_found']:,} relevant ({r['seconds']:.0f} s)", flush=True)
        for strategy, s in r["strategies"].items():
            to90 = s["judgments_to_90"]
            rows.append([name, strategy, f"{to90:,}" if to90 else "never",
                         f"{to90 / base['judgments']:.0%}" if to90 else "-",
                         f"{s['found_at_baseline_budget']:,}",
                         f"{s['found_at_baseline_budget'] / base['relevant_found']:.2f}x"])
            st = s["stopping"]
            share = st["share_at_or_above_target"]
            stops.append([name, strategy, f"{st['queries']}", f"{st['stopped']}",
                          "-" if share is None else f"{share:.0%}", f"{st['confidence']:.0%}",
                          "-" if share is None else f"{st['mean_recall_at_stop']:.2f}",
                          f"{st['judgments_at_stop']:,}",
                          f"{st['final_interval_covers']}/{st['final_intervals']}"])
    print()
    print(_table(["collection", "strategy", "judgments to 90% of depth-50's relevant", "share of depth-50's judgments",
                  "relevant at depth-50's budget", "vs depth-50"], rows))
    print(f"\nStopping rule (target recall {TARGET_TEXT}, within the candidates):")
    print(_table(["collection", "strategy", "queries", "stopped", "of those at/above target", "stated confidence",
                  "mean recall at stop", "judgments to stop", "final interval holds true recall"], stops))


TARGET_TEXT = "0.8"
from pooling.recall_estimate import CONFIDENCE as STOP_CONFIDENCE, TARGET as STOP_TARGET  # noqa: E402

if __name__ == "__main__":
    main()

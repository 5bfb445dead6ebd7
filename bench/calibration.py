"""Calibration benchmarks and real-data runs.

    python bench/calibration.py [--external DIR]

1. Bootstrap interval of kappa, 10,000 resamples of 1M items (multinomial over the table),
   against naive per-item resampling on a smaller n in the same run (ratio per resample-item).
2. Cluster bootstrap cost (queries resampled) at two numbers of queries.
3. ``goldpool agree`` on TREC RAG 2025 NIST vs UMBRELA qrels (10,284 pairs), then what
   ``goldpool plan`` says a judge with that sensitivity/specificity (at grade >= 2) resolves.
4. The position-bias probe on LLMBar's judgments in both presentation orders.

Sections 3 and 4 need the external data folder (default: ../shared/external beside the repo).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

# Run as a script, this file's folder comes first on sys.path, where its own name would shadow
# the calibration package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from calibration import cohen_kappa, format_estimate, position_bias  # noqa: E402
from calibration.agreement import disagreement_weights, kappa_of_tables  # noqa: E402
from calibration.bootstrap import bootstrap_tables  # noqa: E402
from calibration.tables import pair_tables  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _timed(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _naive_kappa_replicates(a: np.ndarray, b: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """Per-item resampling: draw n indices, count the table, compute kappa; once per replicate."""
    rng = np.random.default_rng(seed)
    weights = disagreement_weights(4, "quadratic")
    out = np.empty(n_boot)
    for r in range(n_boot):
        idx = rng.integers(0, len(a), len(a))
        table = np.bincount(a[idx] * 4 + b[idx], minlength=16).reshape(1, 4, 4)
        out[r] = kappa_of_tables(table, weights)[0]
    return out


def bench_bootstrap() -> None:
    rng = np.random.default_rng(0)
    n, n_boot = 1_000_000, 10_000
    a = rng.integers(0, 4, n)
    b = np.clip(a + rng.integers(-1, 2, n), 0, 3)
    fast_s, est = _timed(lambda: cohen_kappa(a, b, "quadratic", labels=[0, 1, 2, 3], n_boot=n_boot, seed=1))
    boot_s = _bootstrap_only(a, b, None, n_boot)
    print(f"[1] kappa_quadratic on {n:,} items, {n_boot:,} resamples (table multinomial): {fast_s:.3f} s "
          f"in all, of which {boot_s * 1000:.1f} ms resampling (the rest counts the table)")
    print(f"    {format_estimate(est)} n={est.n}")
    n_small, boot_small = 100_000, 50
    naive_s, reps = _timed(lambda: _naive_kappa_replicates(a[:n_small], b[:n_small], boot_small, 2), repeat=1)
    small_s, small = _timed(lambda: cohen_kappa(a[:n_small], b[:n_small], "quadratic", labels=[0, 1, 2, 3], n_boot=boot_small, seed=2))
    per_item_naive = naive_s / (n_small * boot_small)
    per_item_fast = fast_s / (n * n_boot)
    print(f"    naive per-item baseline: {boot_small} resamples of {n_small:,} items in {naive_s:.3f} s "
          f"(the table method, same n and resamples: {small_s:.4f} s, ratio {naive_s / small_s:.0f}x)")
    print(f"    per resample-item: naive {per_item_naive * 1e9:.2f} ns, table {per_item_fast * 1e9:.5f} ns, "
          f"ratio {per_item_naive / per_item_fast:,.0f}x; naive extrapolated to 1M x 10k: {per_item_naive * n * n_boot:,.0f} s")
    print(f"    naive replicates SD {np.std(reps):.4f}  vs table-interval width/3.92 {(small.high - small.low) / 3.92:.4f}")


def _bootstrap_only(a: np.ndarray, b: np.ndarray, groups: np.ndarray | None, n_boot: int) -> float:
    """Seconds of the resampling alone, tables already counted."""
    pt = pair_tables(a, b, [0, 1, 2, 3], groups)
    weights = disagreement_weights(4, "quadratic")
    seconds, _ = _timed(lambda: bootstrap_tables(
        pt.tables, lambda t: kappa_of_tables(t, weights), grouped=groups is not None, n_boot=n_boot, ci=0.95, seed=1
    ))
    return seconds


def bench_cluster() -> None:
    rng = np.random.default_rng(3)
    n = 1_000_000
    a = rng.integers(0, 4, n)
    b = np.clip(a + rng.integers(-1, 2, n), 0, 3)
    for n_groups in (22, 1_000, 5_000):
        groups = rng.integers(0, n_groups, n)
        seconds, est = _timed(lambda: cohen_kappa(a, b, "quadratic", labels=[0, 1, 2, 3], groups=groups, n_boot=10_000, seed=1), repeat=1)
        boot_s = _bootstrap_only(a, b, groups, 10_000)
        print(f"[2] cluster bootstrap, {n:,} items in {n_groups:,} queries, 10,000 resamples: {seconds:.3f} s in all, "
              f"{boot_s:.3f} s resampling  {format_estimate(est)}")


def _goldpool() -> list[str]:
    exe = shutil.which("goldpool", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "labeler.cli"]


def _run(args: list[str]) -> str:
    print("    $ goldpool " + " ".join(args))
    start = time.perf_counter()
    out = subprocess.run(_goldpool() + args, capture_output=True, text=True, check=True).stdout
    print("    " + out.rstrip().replace("\n", "\n    "))
    print(f"    ({time.perf_counter() - start:.2f} s)")
    return out


def _read_qrels(path: Path) -> dict[tuple[str, str], int]:
    rows = (line.split() for line in path.read_text().splitlines() if line.strip())
    return {(q, d): int(r) for q, _, d, r in rows}


def bench_trec_rag(external: Path) -> None:
    folder = external / "trec_rag25_nist_vs_umbrela"
    nist, judge = folder / "qrels.rag25.test.txt", folder / "qrels.rag25.test-umbrela2.txt"
    if not nist.is_file():
        print(f"[3] skipped: {folder} not found")
        return
    print("[3] TREC RAG 2025: NIST assessors (A) vs UMBRELA v2 judge (B); both files are TREC qrels")
    _run(["agree", str(nist), str(judge), "--level", "ordinal", "--level", "interval", "--level", "nominal"])
    human, llm = _read_qrels(nist), _read_qrels(judge)
    keys = sorted(human.keys() & llm.keys())
    h = np.array([human[k] >= 2 for k in keys])
    j = np.array([llm[k] >= 2 for k in keys])
    se, sp = float(j[h].mean()), float((~j[~h]).mean())
    print(f"    binary at grade >= 2: sensitivity {se:.3f} ({int(j[h].sum())}/{int(h.sum())}), "
          f"specificity {sp:.3f} ({int((~j[~h]).sum())}/{int((~h).sum())}), J = {se + sp - 1:.3f}")
    judge_args = ["--judge-sensitivity", f"{se:.3f}", "--judge-specificity", f"{sp:.3f}"]
    n_topics = len({q for q, _ in keys})
    _run(["plan", "--n", "200", "--paired", "--discordant", "0.2", "--delta", "0.03"])
    _run(["plan", "--n", "200", "--paired", "--discordant", "0.2", "--delta", "0.03", *judge_args])
    _run(["plan", "--n", str(n_topics), "--paired", "--discordant", "0.2", *judge_args])


def bench_llmbar(external: Path) -> None:
    path = external / "llmbar" / "llmbar_judgments.tsv"
    if not path.is_file():
        print(f"[4] skipped: {path} not found")
        return
    rows = [line.rstrip("\r\n").split("\t") for line in path.read_text().splitlines()[1:] if line.strip()]
    bias = position_bias([r[5] for r in rows], [r[6] for r in rows])
    runs = len({(r[0], r[3], r[4]) for r in rows})
    print(f"[4] LLMBar position bias, {runs} runs (dataset x judge x strategy) pooled, {len(rows):,} pairs:")
    print(f"    consistency {format_estimate(bias.consistency)} (n={bias.consistency.n}); first-slot preference among "
          f"flips {format_estimate(bias.first_slot_preference)} (n={bias.first_slot_preference.n}); "
          f"excluded (no verdict) {bias.n_excluded}")
    by_judge: dict[str, list[list[str]]] = defaultdict(list)
    for r in rows:
        by_judge[r[3]].append(r)
    for judge, judged in sorted(by_judge.items()):
        b = position_bias([r[5] for r in judged], [r[6] for r in judged])
        print(f"    {judge:<14} pairs {b.consistency.n:>6}  consistency {format_estimate(b.consistency)}  "
              f"first-slot {format_estimate(b.first_slot_preference)} (n={b.first_slot_preference.n})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--external", type=Path, default=REPO.parent / "shared" / "external")
    args = parser.parse_args()
    bench_bootstrap()
    bench_cluster()
    bench_trec_rag(args.external)
    bench_llmbar(args.external)


if __name__ == "__main__":
    main()

"""Two prompt versions of one judge compared on people's labels: LLMBar through
``goldpool calibrate --judge A --judge B --paired``, against an independent count.

LLMBar (Zeng et al., ICLR 2024) asked GPT-4 (and other judges) which of two outputs follows an
instruction better, under 15 prompting strategies, on pairs with a gold label. Here the pairs of
``--subsets`` (default: Natural and the four Adversarial sets, 419 pairs) are imported as
pairwise items, the gold label as annotator ``llmbar-gold``, and two strategies of one judge
(default GPT-4's ``Vanilla_NoRules`` and ``Metrics_Reference``, the paper's plain prompt and its
rules + self-generated metrics + reference) as judges A and B, each in both orders (a flip is a
tie). goldpool's paired difference (agreement and kappa A - B, paired cluster bootstrap) is
printed beside the same point differences counted here from the raw file, without goldpool, and
the first items ``goldpool disagreements`` lists for judge A. Needs ../shared/external/llmbar.

    python bench/paired_prompts.py [--judge GPT-4] [--a Vanilla_NoRules] [--b Metrics_Reference]
    python bench/paired_prompts.py --external DIR              # where ../shared/external is
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LLMBAR = ROOT.parent / "shared" / "external" / "llmbar"  # --external changes where
SUBSETS = ["LLMBar/Natural", "LLMBar/Adversarial/GPTInst", "LLMBar/Adversarial/GPTOut", "LLMBar/Adversarial/Manual",
           "LLMBar/Adversarial/Neighbor"]
SLOT = {"1": "A", "2": "B"}


def goldpool(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", "from labeler.cli import main; main()", *args],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"goldpool {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def load(subsets: list[str], judge: str, strategies: tuple[str, str]) -> tuple[dict, dict]:
    """Items by id, and each strategy's (AB, BA) winners by item id."""
    items = {}
    for subset in subsets:
        for i, it in enumerate(json.loads((LLMBAR / "Dataset" / subset / "dataset.json").read_text(encoding="utf-8"))):
            items[f"{subset.split('/')[-1]}-{i:03d}"] = it
    runs: dict[str, dict] = {s: {} for s in strategies}
    with (LLMBAR / "llmbar_judgments.tsv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["dataset"] in subsets and row["judge"] == judge and row["strategy"] in runs:
                key = f"{row['dataset'].split('/')[-1]}-{int(row['item_index']):03d}"
                runs[row["strategy"]][key] = (row["winner_swap_false"], row["winner_swap_true"])
    for s, got in runs.items():
        if set(got) != set(items):
            sys.exit(f"{judge}/{s}: {len(got)} judged items of {len(items)}")
    return items, runs


def counted(items: dict, run: dict) -> tuple[float, float]:
    """Agreement and Cohen's kappa of a run's combined verdict (a flip is a tie) with gold, by counting."""
    gold = [SLOT[str(items[k]["label"])] for k in sorted(items)]
    combined = [SLOT.get(run[k][0], "TIE") if run[k][0] == run[k][1] else "TIE" for k in sorted(items)]
    n = len(gold)
    p_o = sum(g == c for g, c in zip(gold, combined, strict=True)) / n
    rows, cols = Counter(gold), Counter(combined)
    p_e = sum(rows[x] * cols[x] for x in set(rows) | set(cols)) / n**2
    return p_o, (p_o - p_e) / (1 - p_e)


def write_project(work: Path, items: dict, runs: dict) -> str:
    with (work / "items.jsonl").open("w", encoding="utf-8") as f:
        for k, it in sorted(items.items()):
            f.write(json.dumps({"item_id": k, "kind": "pairwise", "question": it["input"], "response_a": it["output_1"],
                                "response_b": it["output_2"]}) + "\n")
    with (work / "gold.jsonl").open("w", encoding="utf-8") as f:
        for k, it in sorted(items.items()):
            f.write(json.dumps({"item_id": k, "verdict": SLOT[str(it["label"])]}) + "\n")
    for s, run in runs.items():
        with (work / f"{s}.jsonl").open("w", encoding="utf-8") as f:
            for k, (ab, ba) in sorted(run.items()):
                for order, winner in (("AB", ab), ("BA", ba)):
                    if winner in SLOT:
                        f.write(json.dumps({"item_id": k, "verdict": SLOT[winner], "order": order}) + "\n")
    db = str(work / "llmbar.db")
    for stale in (db, db + "-wal", db + "-shm"):
        Path(stale).unlink(missing_ok=True)
    commands = [["init", db], ["import-items", db, str(work / "items.jsonl")], ["add-annotator", db, "llmbar-gold"],
                ["import-verdicts", db, str(work / "gold.jsonl"), "--annotator", "llmbar-gold"]]
    commands += [["import-verdicts", db, str(work / f"{s}.jsonl"), "--judge", s] for s in runs]
    for command in commands:
        goldpool(*command)
    return db


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", default="GPT-4")
    parser.add_argument("--a", default="Vanilla_NoRules")
    parser.add_argument("--b", default="Metrics_Reference")
    parser.add_argument("--subsets", nargs="+", default=SUBSETS)
    parser.add_argument("--keep", default=None, help="Directory to keep the project and files in.")
    parser.add_argument("--external", default=None, help="Where ../shared/external is.")
    args = parser.parse_args()
    global LLMBAR
    if args.external:
        LLMBAR = Path(args.external) / "llmbar"
    if not LLMBAR.is_dir():
        sys.exit(f"{LLMBAR} not found")
    items, runs = load(args.subsets, args.judge, (args.a, args.b))
    work = Path(args.keep or tempfile.mkdtemp(prefix="llmbar-paired-"))
    work.mkdir(parents=True, exist_ok=True)
    db = write_project(work, items, runs)
    print(f"$ goldpool calibrate {Path(db).name} --judge {args.a} --judge {args.b} --paired --json")
    out = json.loads(goldpool("calibrate", db, "--judge", args.a, "--judge", args.b, "--paired", "--json",
                              "--n-boot", "2000"))["paired"]["tasks"]["pairwise"]
    ref = {"agreement": [counted(items, runs[s])[0] for s in (args.a, args.b)],
           "kappa": [counted(items, runs[s])[1] for s in (args.a, args.b)]}
    print(f"LLMBar {', '.join(s.split('/')[-1] for s in args.subsets)}: {out['n']} pairs, judge {args.judge}, "
          f"A = {args.a}, B = {args.b}; the two prompts differ on {out['n_changed']} pairs")
    print(f"{'':<10}{'A':>8}{'B':>8}{'A - B [95% paired interval]':>34}{'counted A - B':>16}")
    ok = True
    for stat in ("agreement", "kappa"):
        a, b, d = (out[stat][side] for side in ("a", "b", "difference"))
        want = ref[stat][0] - ref[stat][1]
        ok &= abs(d["value"] - want) < 1e-12
        print(f"{stat:<10}{a['value']:>8.4f}{b['value']:>8.4f}{d['value']:>12.4f} [{d['low']:.4f}, {d['high']:.4f}]"
              f"{want:>16.4f}")
    listing = goldpool("disagreements", db, "--judge", args.a).splitlines()
    print("\n$ goldpool disagreements ... --judge " + args.a + "\n" + "\n".join(listing[:4]))
    print("equal" if ok else "DIFFERENT")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

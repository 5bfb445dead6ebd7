"""LLMBar's MT-Bench subset through goldpool, against an independent count.

Imports the 200 MT-Bench pairs as pairwise items, the human preference (gold label) as
annotator ``mtbench-humans``, and one judge run of ``llmbar_judgments.tsv`` in both orders as a
judge (``winner_swap_false``: output 1 shown first, order AB; ``winner_swap_true``: output 2
shown first, order BA; both name the output, not the slot). Then runs ``goldpool calibrate
--judge --json`` and recomputes agreement, kappa, position consistency and first-slot
preference here from the raw files, without goldpool. Needs ../shared/external/llmbar.

    python bench/llmbar_check.py [--judge GPT-4] [--strategy Vanilla_NoRules] [--keep DIR]
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
LLMBAR = ROOT.parent / "shared" / "external" / "llmbar"
SUBSET = "Processed/MT-Bench"


def goldpool(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", "from labeler.cli import main; main()", *args],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"goldpool {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def load(judge: str, strategy: str) -> tuple[list[dict], dict[int, tuple[str, str, str]]]:
    items = json.loads((LLMBAR / "Dataset" / SUBSET / "dataset.json").read_text(encoding="utf-8"))
    runs = {}
    with (LLMBAR / "llmbar_judgments.tsv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["dataset"] == SUBSET and row["judge"] == judge and row["strategy"] == strategy:
                runs[int(row["item_index"])] = (row["gold_label"], row["winner_swap_false"], row["winner_swap_true"])
    if len(runs) != len(items):
        sys.exit(f"{judge}/{strategy}: {len(runs)} judged items of {len(items)}")
    return items, runs


def independent(items: list[dict], runs: dict[int, tuple[str, str, str]]) -> dict[str, float]:
    """Agreement, Cohen's kappa (p_o − p_e)/(1 − p_e), consistency and first-slot share, by counting."""
    gold = [str(items[i]["label"]) for i in range(len(items))]
    combined = [runs[i][1] if runs[i][1] == runs[i][2] else "tie" for i in range(len(items))]
    n = len(gold)
    p_o = sum(g == c for g, c in zip(gold, combined)) / n
    rows, cols = Counter(gold), Counter(combined)
    p_e = sum(rows[k] * cols[k] for k in set(rows) | set(cols)) / n**2
    flips = [(runs[i][1], runs[i][2]) for i in range(n) if runs[i][1] != runs[i][2]]
    return {
        "agreement": p_o,
        "kappa": (p_o - p_e) / (1 - p_e),
        "position_consistency": 1 - len(flips) / n,
        "first_slot_preference": sum(1 for ab, ba in flips if (ab, ba) == ("1", "2")) / len(flips),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", default="GPT-4")
    parser.add_argument("--strategy", default="Vanilla_NoRules")
    parser.add_argument("--keep", default=None, help="Directory to keep the project and files in.")
    args = parser.parse_args()
    if not LLMBAR.is_dir():
        sys.exit(f"{LLMBAR} not found")
    items, runs = load(args.judge, args.strategy)
    work = Path(args.keep or tempfile.mkdtemp(prefix="llmbar-"))
    work.mkdir(parents=True, exist_ok=True)
    name = f"{args.judge}-{args.strategy}"
    slot = {"1": "A", "2": "B"}
    with (work / "items.jsonl").open("w", encoding="utf-8") as f:
        for i, it in enumerate(items):
            f.write(json.dumps({"item_id": f"mtb-{i:03d}", "kind": "pairwise", "question": it["input"],
                                "response_a": it["output_1"], "response_b": it["output_2"]}) + "\n")
    with (work / "humans.jsonl").open("w", encoding="utf-8") as f:
        for i, it in enumerate(items):
            f.write(json.dumps({"item_id": f"mtb-{i:03d}", "verdict": slot[str(it["label"])]}) + "\n")
    with (work / "judge.jsonl").open("w", encoding="utf-8") as f:
        for i in range(len(items)):
            f.write(json.dumps({"item_id": f"mtb-{i:03d}", "verdict": slot[runs[i][1]], "order": "AB"}) + "\n")
            f.write(json.dumps({"item_id": f"mtb-{i:03d}", "verdict": slot[runs[i][2]], "order": "BA"}) + "\n")
    db = str(work / "llmbar.db")
    for stale in (db, db + "-wal", db + "-shm"):
        Path(stale).unlink(missing_ok=True)
    for command in (["init", db], ["import-items", db, str(work / "items.jsonl")], ["add-annotator", db, "mtbench-humans"],
                    ["import-verdicts", db, str(work / "humans.jsonl"), "--annotator", "mtbench-humans"],
                    ["import-verdicts", db, str(work / "judge.jsonl"), "--judge", name]):
        out = goldpool(*command).strip().splitlines()
        print(f"$ goldpool {' '.join(command[:1])} ... -> {out[0] if out else ''}")
    report = json.loads(goldpool("calibrate", db, "--judge", name, "--json", "--n-boot", "2000"))
    ours = report["judges"][name]["pairwise"]
    ref = independent(items, runs)
    print(f"\nLLMBar {SUBSET}, judge {name}: {ours['n']} items")
    print(f"{'statistic':<24}{'goldpool [95% interval]':<36}{'independent count':>18}")
    ok = True
    for key, value in ref.items():
        got = ours[key]
        ok &= abs(got["value"] - value) < 1e-12
        print(f"{key:<24}{got['value']:.4f} [{got['low']:.4f}, {got['high']:.4f}] n={got['n']:<6}{value:>16.4f}")
    print(f"unparseable rate {ours['unparseable_rate']['value']:.3f}; flips {ours['position']['flips']}")
    print("equal" if ok else "DIFFERENT")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

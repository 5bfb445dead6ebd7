"""Abstention from the text rule and from people on real answers: EVOUNA's QA systems.

Usage:
    python bench/abstention_check.py [--data ../shared/external/evouna] [--keep DIR]

EVOUNA (Wang et al. 2023) holds the answers of GPT-3.5, ChatGPT, GPT-4 and New Bing to NQ-open
and TriviaQA questions; many decline ("As an AI language model, I do not have access to
real-time information.", "I'm sorry, but I couldn't find any information about ..."), often
followed by an answer after all. It has no abstention label, so ``abstention_labels.json``
(beside this script) holds people's answer relevance verdicts on 119 of its answers (which, how
drawn and how labelled is written in the file; no text of the data is in it). This imports
those answers, one system per EVOUNA system, into a fresh project with the labels as one
annotator's verdicts, and prints what ``answer-metrics --json`` reports: per system the
abstention rate by the text rule and by people, and the text rule's agreement with people,
then the agreement over all systems and every answer the two read differently. No judge model
is reachable offline, so the judge's column is not filled here (``run-judge --task
answer-relevance`` fills it on a real endpoint).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LABELS = Path(__file__).with_name("abstention_labels.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "external" / "evouna")
    parser.add_argument("--keep", type=Path, default=None, help="build the project in DIR and keep it")
    args = parser.parse_args()
    if not (args.data / "NQ.json").is_file():
        sys.exit(f"{args.data}: no EVOUNA files (NQ.json, TQ.json) here; give --data")

    from click.testing import CliRunner

    from labeler.generation.abstention import decline_family
    from labeler.cli import cli

    labels = json.loads(LABELS.read_text(encoding="utf-8"))["labels"]
    data = {name: json.loads((args.data / f"{name}.json").read_text(encoding="utf-8")) for name in ("NQ", "TQ")}
    by_system: dict[str, list[dict]] = {}
    verdicts = []
    for key, verdict in labels.items():
        name, index, system = key.split(":")
        record = data[name][int(index)]
        answer_id = f"{name}-{index}-{system}"
        by_system.setdefault(system, []).append({"answer_id": answer_id, "question": record["question"],
                                                 "response": record[f"answer_{system}"]})
        verdicts.append({"item_id": f"{answer_id}@answer-relevance", "verdict": verdict})
    work = args.keep or Path(tempfile.mkdtemp(prefix="abstention-"))
    work.mkdir(parents=True, exist_ok=True)
    db = str(work / "evouna.db")
    runner = CliRunner()

    def run(*cmd: str) -> str:
        result = runner.invoke(cli, list(cmd))
        if result.exit_code != 0:
            sys.exit(f"goldpool {' '.join(cmd)}: {result.output}")
        return result.output

    run("init", db)
    for system, answers in sorted(by_system.items()):
        path = work / f"{system}.jsonl"
        path.write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
        run("import-answers", db, str(path), "--system", system)
    path = work / "people.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in verdicts), encoding="utf-8")
    run("import-verdicts", db, str(path), "--annotator", "reader")
    out = json.loads(run("answer-metrics", db, "--json"))["systems"]

    print(f"{len(labels)} EVOUNA answers, {sum(v == 'DECLINES' for v in labels.values())} marked DECLINES by people\n")
    print(f"{'system':10} {'answers':>7} {'text rule':>9} {'people':>7}  agreement of the text rule with people")
    total: Counter = Counter()
    for system in sorted(out):
        a = out[system]["abstention"]
        g = a["text"]["agreement"]
        total.update({k: g[k] for k in ("both", "text_only", "people_only", "neither")})
        kappa = "-" if g["kappa"] is None else f"{g['kappa']:.3f}"
        print(f"{system:10} {a['text']['n']:>7} {a['text']['value']:>9.3f} {a['people']['value']:>7.3f}  "
              f"agree {g['agree']}, disagree {g['disagree']} (rule only {g['text_only']}, people only "
              f"{g['people_only']}), kappa {kappa}")
    n = sum(total.values())
    both, text_only, people_only = total["both"], total["text_only"], total["people_only"]
    p_o = (both + total["neither"]) / n
    text_yes, people_yes = (both + text_only) / n, (both + people_only) / n
    p_e = text_yes * people_yes + (1 - text_yes) * (1 - people_yes)
    print(f"\nall systems: {n} answers; text rule {both + text_only}, people {both + people_only}; both {both}, "
          f"rule only {text_only}, people only {people_only}, neither {total['neither']}; agreement {p_o:.3f}, "
          f"kappa {(p_o - p_e) / (1 - p_e):.3f}, sensitivity {both / (both + people_only):.3f}, "
          f"precision {both / (both + text_only) if both + text_only else float('nan'):.3f}")
    print("\nanswers read differently (people's verdict, the rule's family, the answer's opening):")
    for key, verdict in labels.items():
        name, index, system = key.split(":")
        response = data[name][int(index)][f"answer_{system}"]
        family = decline_family(response)
        if (verdict == "DECLINES") != (family is not None):
            print(f"  {key:18} people {verdict:9} rule {family or 'answers':15} {response[:90]!r}")
    if args.keep is None:
        print(f"\n(project built in {work}; give --keep DIR to keep it somewhere)")


if __name__ == "__main__":
    main()

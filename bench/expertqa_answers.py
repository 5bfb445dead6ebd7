"""ExpertQA's answers and claims through `goldpool import-answers`, and the sentence splitter
against ExpertQA's own sentence-level claims.

    python bench/expertqa_answers.py [--data ../shared/external/expertqa] [--keep DIR]

Reads the four ``data/lfqa/*.jsonl`` files (one question with one system's answer per line; the
splits overlap, so answers are deduplicated on (question, system)), writes one import file per
system (question, response = ``answer_string``, contexts = the evidence passages the claims
cite, in first-cited order, claims = the ``claim_string`` of each claim in order), imports each
with ``--system NAME`` into a fresh project, and prints as JSON, per system, the answers and
claims the project holds beside an independent count from the raw files. A second import of
the same answers without their claims (system ``NAME-sent``) is cut by ``split-claims
--sentences``: how many answers it cuts exactly as ExpertQA did (``answers_split_as_expertqa``),
and how many of ExpertQA's claims are, whitespace aside, one of its sentences
(``expertqa_claims_among_sentences``), say how close the offline splitter comes to the
upstream one (ExpertQA's claims skip some sentences and keep list items inside theirs).

Then the experts' labels as people's verdicts, and ``answer-metrics`` on them (``faithfulness``
in the JSON), each system's numbers asserted equal to an independent count from the raw files:

- a claim is held to its answer when its ``worthiness`` is not ``"No"`` (as upstream's own
  evaluation skips those) and it has a ``support`` label; ``support == "Complete"`` is
  SUPPORTED, every other label (``Partial``, ``Incomplete``, ``Missing``, ``N/A``) is
  UNSUPPORTED, upstream's binarisation. Claims not worth citing and the few unlabelled ones are
  left out of the import, so each answer's faithfulness is over claims that all have a verdict;
- the answer's ``usefulness`` stands in for answer relevance (``Useful`` and ``Partially
  useful`` ADDRESSES, ``Not useful at all`` MISSES), so faithfulness is shown beside it;
- ExpertQA has no "not one claim" label. The share people would flag is what ``answer-metrics``
  reports as ``flag_rate`` (NOT_ONE_CLAIM verdicts over claims with a verdict) once people
  label claims on the claims page; here a second project maps ``Partial`` support (the
  evidence backs part of the claim, the symptom a compound claim gives) to NOT_ONE_CLAIM as a
  proxy, and the flag rate per system is checked against the raw count of ``Partial`` labels.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = "from labeler.cli import main; main()"
FILES = ("rand_test.jsonl", "rand_val.jsonl", "domain_test.jsonl", "domain_val.jsonl")


def goldpool(*args: str) -> str:
    result = subprocess.run([sys.executable, "-c", CLI, *args], check=True, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    return result.stdout


def read_answers(folder: Path) -> dict[tuple[str, str], dict]:
    """(question, system) -> that answer (the first copy met; every copy is checked equal)."""
    answers: dict[tuple[str, str], dict] = {}
    for name in FILES:
        with (folder / "data" / "lfqa" / name).open(encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                for system, answer in record["answers"].items():
                    key = (record["question"], system)
                    if key in answers:
                        assert answers[key]["answer_string"] == answer["answer_string"], key
                        continue
                    answers[key] = answer
    return answers


def to_record(question: str, answer: dict, *, with_claims: bool) -> dict:
    contexts: list[str] = []
    for claim in answer.get("claims") or []:
        for passage in claim.get("evidence") or []:
            if passage not in contexts:
                contexts.append(passage)
    record = {"question": question, "response": answer.get("answer_string") or "", "contexts": contexts}
    if with_claims:
        record["claims"] = [c["claim_string"] for c in answer.get("claims") or [] if (c.get("claim_string") or "").strip()]
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "external" / "expertqa")
    parser.add_argument("--keep", type=Path, default=None)
    options = parser.parse_args()
    answers = read_answers(options.data)
    folder = options.keep or Path(tempfile.mkdtemp(prefix="goldpool-expertqa-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = str(folder / "p.db")
    goldpool("init", db)
    systems = sorted({system for _, system in answers})
    expected = {s: Counter() for s in systems}
    for (question, system), answer in answers.items():
        expected[system]["answers"] += 1
        expected[system]["claims"] += sum(bool((c.get("claim_string") or "").strip()) for c in answer.get("claims") or [])
    for system in systems:
        for suffix, with_claims in (("", True), ("-sent", False)):
            path = folder / f"{system}{suffix}.jsonl"
            with path.open("w", encoding="utf-8") as out:
                for (question, s), answer in answers.items():
                    if s == system:
                        out.write(json.dumps(to_record(question, answer, with_claims=with_claims), ensure_ascii=False) + "\n")
            goldpool("import-answers", db, str(path), "--system", system + suffix)
        goldpool("split-claims", db, "--system", system + "-sent", "--sentences")
    report: dict[str, dict] = {}
    with sqlite3.connect(db) as conn:
        for system in systems:
            stored_answers = conn.execute("SELECT count(*) FROM answers WHERE system = ?", [system]).fetchone()[0]
            stored_claims = conn.execute("SELECT count(*) FROM claims c JOIN answers a USING (answer_id) "
                                         "WHERE a.system = ?", [system]).fetchone()[0]
            theirs = _claims_by_question(conn, system)
            ours = _claims_by_question(conn, system + "-sent")
            same = sum(ours.get(q) == texts for q, texts in theirs.items())
            found = sum(" ".join(t.split()) in {" ".join(o.split()) for o in ours.get(q, [])}
                        for q, texts in theirs.items() for t in texts)
            report[system] = {
                "answers": stored_answers, "answers_raw": expected[system]["answers"],
                "claims": stored_claims, "claims_raw": expected[system]["claims"],
                "sentence_claims": sum(len(t) for t in ours.values()),
                "answers_split_as_expertqa": same,
                "expertqa_claims_among_sentences": found,
            }
    total = {key: sum(r[key] for r in report.values()) for key in next(iter(report.values()))}
    faithfulness = {mapping: expert_metrics(answers, folder, systems, mapping) for mapping in ("upstream", "partial-as-flag")}
    print(json.dumps({"systems": report, "total": total, "faithfulness": faithfulness}, indent=2))


#: The experts' support label as a verdict on the claim: upstream's binarisation, or with
#: ``Partial`` read as "not one claim" (the proxy for a compound claim).
VERDICTS = {
    "upstream": {"Complete": "SUPPORTED", "Partial": "UNSUPPORTED", "Incomplete": "UNSUPPORTED",
                 "Missing": "UNSUPPORTED", "N/A": "UNSUPPORTED"},
    "partial-as-flag": {"Complete": "SUPPORTED", "Partial": "NOT_ONE_CLAIM", "Incomplete": "UNSUPPORTED",
                        "Missing": "UNSUPPORTED", "N/A": "UNSUPPORTED"},
}
USEFUL = {"Useful": "ADDRESSES", "Partially useful": "ADDRESSES", "Not useful at all": "MISSES"}


def held_claims(answer: dict) -> list[dict]:
    """The claims an answer is held to: worth citing, labelled, not empty."""
    return [c for c in answer.get("claims") or []
            if c.get("worthiness") != "No" and c.get("support") is not None and (c.get("claim_string") or "").strip()]


def expert_metrics(answers: dict[tuple[str, str], dict], folder: Path, systems: list[str], mapping: str) -> dict:
    """Import every answer with its held claims and the experts' verdicts into a fresh project,
    run ``answer-metrics --json``, and check each system against a count of the raw labels."""
    db = str(folder / f"{mapping}.db")
    goldpool("init", db)
    verdicts = []
    for system in systems:
        path = folder / f"{mapping}-{system}.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for i, ((question, s), answer) in enumerate(sorted(answers.items())):
                if s != system:
                    continue
                answer_id = f"{system}:{i}"
                claims = held_claims(answer)
                record = {**to_record(question, answer, with_claims=False), "answer_id": answer_id,
                          "claims": [c["claim_string"] for c in claims]}
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                verdicts += [{"item_id": f"{answer_id}#{n}", "verdict": VERDICTS[mapping][c["support"]]}
                             for n, c in enumerate(claims, 1)]
                if answer.get("usefulness") in USEFUL:
                    verdicts.append({"item_id": answer_id, "task": "answer-relevance", "verdict": USEFUL[answer["usefulness"]]})
        goldpool("import-answers", db, str(path), "--system", system)
    with (folder / f"{mapping}-verdicts.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(v) + "\n" for v in verdicts)
    goldpool("import-verdicts", db, str(folder / f"{mapping}-verdicts.jsonl"), "--annotator", "expertqa-experts")
    measured = json.loads(goldpool("answer-metrics", db, "--json"))
    out: dict[str, dict] = {}
    for system in systems:
        mine = [a for (_, s), a in answers.items() if s == system]
        labels = [[c["support"] for c in held_claims(a)] for a in mine]
        flag = "Partial" if mapping == "partial-as-flag" else None
        scored = [ls for ls in labels if any(x != flag for x in ls)]
        raw = sum(ls.count("Complete") / sum(x != flag for x in ls) for ls in scored) / len(scored)
        raw_flags = sum(ls.count(flag) for ls in labels) / sum(map(len, labels)) if flag else 0.0
        useful = [USEFUL[a["usefulness"]] == "ADDRESSES" for a in mine if a.get("usefulness") in USEFUL]
        got = measured["systems"][system]
        people = got["faithfulness"]["people"]
        assert people["n"] == len(scored) and abs(people["value"] - raw) < 1e-12, (system, people, raw)
        assert abs(people["flag_rate"] - raw_flags) < 1e-12, (system, people["flag_rate"], raw_flags)
        relevance = got["answer-relevance"]["people"]
        assert relevance["n"] == len(useful) and abs(relevance["value"] - sum(useful) / len(useful)) < 1e-12
        out[system] = {
            "answers": len(mine), "answers_scored": people["n"], "faithfulness": people["value"], "faithfulness_raw": raw,
            "interval": [people["low"], people["high"]], "claims": people["claims"],
            "claims_per_answer": people["claims_per_answer"], "claim_weighted": people["claim_weighted"],
            "flag_rate": people["flag_rate"], "flag_rate_raw": raw_flags, "words": people["words"],
            "answer_relevance": relevance["value"], "abstention": got["abstention"]["people"]["value"],
        }
    pairs = [p for p in measured["pairs"] if p["metric"] == "faithfulness" and p["difference"] is not None]
    return {"systems": out, "faithfulness_pairs": pairs}


def _claims_by_question(conn: sqlite3.Connection, system: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for question, text in conn.execute("SELECT a.question, c.text FROM answers a JOIN claims c USING (answer_id) "
                                       "WHERE a.system = ? ORDER BY a.answer_id, c.n", [system]):
        out.setdefault(question, []).append(text)
    return out


if __name__ == "__main__":
    main()

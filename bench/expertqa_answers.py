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
    print(json.dumps({"systems": report, "total": total}, indent=2))


def _claims_by_question(conn: sqlite3.Connection, system: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for question, text in conn.execute("SELECT a.question, c.text FROM answers a JOIN claims c USING (answer_id) "
                                       "WHERE a.system = ? ORDER BY a.answer_id, c.n", [system]):
        out.setdefault(question, []).append(text)
    return out


if __name__ == "__main__":
    main()

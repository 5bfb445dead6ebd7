"""The files the README's commands name, small: 40 chunks on 6 topics, 6 questions, a run, the
answers of three systems (my-rag, old, new), people's and a judge's labels, verdict items,
nuggets and people's support labels, a gold-context prompt, two runs to compare, two weeks of a
system's traces (made by the OpenTelemetry SDK: OTLP JSON and Phoenix's spans); and the stub
judge's answer to each task's prompt."""

from __future__ import annotations

import json
import re
from pathlib import Path

TOPICS = [
    ("q1", "python list sort order", "How do I sort a Python list in place?", "Call list.sort() to sort the list in place."),
    ("q2", "http status code redirect", "Which HTTP status code means a permanent redirect?", "Status 301 is a permanent redirect."),
    ("q3", "sqlite wal journal mode", "What does SQLite's WAL journal mode do?", "WAL mode writes changes to a separate log file."),
    ("q4", "git rebase branch history", "What does git rebase do to a branch?", "Rebase replays the branch's commits onto another base."),
    ("q5", "unicode normalisation nfc form", "What is Unicode NFC normalisation?", "NFC composes characters into their canonical composed form."),
    ("q6", "tcp handshake syn ack", "How does the TCP handshake start?", "The client sends SYN, the server answers SYN-ACK."),
]
CHUNKS_PER_TOPIC = 6  # 36 on the topics, 4 off every topic: 40 chunks
MODEL = "stub-model"


def doc_ids(topic: int) -> list[str]:
    return [f"d{topic * CHUNKS_PER_TOPIC + i + 1:02d}" for i in range(CHUNKS_PER_TOPIC)]


def grade(query: int, doc: str, annotator: str = "alice") -> int:
    """Alice's grade of chunk ``doc`` for query ``query`` (0-based); Bob differs on a few."""
    n = int(doc[1:]) - 1
    if n // CHUNKS_PER_TOPIC != query:
        return 0
    g = 3 if n % CHUNKS_PER_TOPIC < 2 else 2 if n % CHUNKS_PER_TOPIC < 4 else 1
    if annotator == "bob" and n % 5 == 0:
        g = max(0, g - 1)
    return g


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _jsonl(path: Path, records: list[dict]) -> None:
    _write(path, [json.dumps(r) for r in records])


def chunk_text(doc: str) -> str:
    n = int(doc[1:]) - 1
    if n >= len(TOPICS) * CHUNKS_PER_TOPIC:
        return f"An unrelated note number {n} about gardening, tomatoes and the weather."
    words, question, answer = TOPICS[n // CHUNKS_PER_TOPIC][1:]
    return f"Part {n % CHUNKS_PER_TOPIC + 1} on {words}. {answer} More on {words} follows here."


def all_docs() -> list[str]:
    return [f"d{n:02d}" for n in range(1, 41)]


def _run(path: Path, name: str, shift: int) -> None:
    """A run: each query's own chunks first (rotated by ``shift``), then others."""
    lines = []
    for q, (qid, *_rest) in enumerate(TOPICS):
        own = doc_ids(q)
        own = own[shift:] + own[:shift]
        ranked = own + [d for d in all_docs() if d not in own][:4]
        lines += [f"{qid} Q0 {d} {r} {20 - r:.1f} {name}" for r, d in enumerate(ranked, 1)]
    _write(path, lines)


def _answers(system: str, prefix: str, wrong: set[int], shift: int) -> list[dict]:
    records = []
    for q, (qid, _words, question, answer) in enumerate(TOPICS):
        retrieved = doc_ids(q)[shift:] + [d for d in all_docs() if d not in doc_ids(q)][:shift]
        if q in wrong:
            response = f"It depends on the version of {_words.split()[0]} you use."
        else:
            response = answer
        if system == "my-rag" and q == 5:
            response = "The provided documents do not say how that works."
        records.append({"answer_id": f"{prefix}{q + 1}", "query_id": qid, "question": question, "response": response,
                        "retrieved_ids": retrieved[:5], "contexts": [chunk_text(d) for d in retrieved[:3]],
                        "reference": answer})
    return records


def _traces(week: int) -> list:
    """A week of the production system's traces: each question asked once, an off-corpus
    document beside the corpus's, and a greeting with no retrieval."""
    from trace_fixtures import Trace

    traces = [Trace(question, answer if (q + week) % 4 else f"Perhaps {words.split()[0]}.",
                    [[(d, chunk_text(d), 1.0 - r / 10) for r, d in enumerate(doc_ids(q)[:2])] + [("web-1", "A web page.", 0.1)]],
                    session=f"s{q % 2}", user=f"u{q}", metadata={"week": week})
              for q, (_qid, words, question, answer) in enumerate(TOPICS)]
    return [*traces, Trace("Hello?", "Hello! Ask me about the docs.")]


def write_project_files(root: Path) -> None:
    """Every input file the README names, under its name, and the setup's own files."""
    from trace_fixtures import phoenix_frame, record_spans, write_traces

    (root / "v2.txt").write_text("You compare two responses to the same question: which one answers it correctly?\n"
                                 "{question}\n{context}\n{first}\n\n{second}\n\nReply with A, B or TIE only.\n",
                                 encoding="utf-8")
    write_traces(root / "traces.jsonl", _traces(49))
    phoenix_frame(record_spans(_traces(50))[0]).to_parquet(root / "phoenix_spans.parquet")
    _jsonl(root / "chunks.jsonl", [{"doc_id": d, "title": f"Chunk {d}", "text": chunk_text(d)} for d in all_docs()])
    _jsonl(root / "questions.jsonl", [{"query_id": qid, "text": question} for qid, _w, question, _a in TOPICS])
    _run(root / "my_rag.trec", "my-rag", 0)
    _run(root / "runs" / "a.trec", "a", 0)
    _run(root / "runs" / "b.trec", "b", 3)
    my_rag = _answers("my-rag", "m", {0, 1}, 0)
    my_rag[2]["claims"] = [my_rag[2]["response"]]  # one answer brings its own claims
    _jsonl(root / "answers.jsonl", my_rag)
    _jsonl(root / "setup" / "answers_old.jsonl", _answers("old", "o", {0}, 0))
    _jsonl(root / "setup" / "answers_new.jsonl", _answers("new", "n", {0, 1, 2, 3}, 3))
    # People's relevance grades of every pool entry (the pool is every pair: 40 chunks, top 50).
    # Three people, so that Bob's few different grades never tie a majority.
    for who in ("alice", "bob", "carol"):
        _jsonl(root / "setup" / f"relevance_{who}.jsonl",
               [{"query_id": qid, "doc_id": d, "relevance": grade(q, d, "alice" if who == "carol" else who)}
                for q, (qid, *_r) in enumerate(TOPICS) for d in all_docs()])
    # Verdicts on the answers, by a third person, before the README's answer-metrics and stages.
    answer_verdicts = []
    for prefix, wrong in (("m", {0, 1, 5}), ("o", {0}), ("n", {0, 1, 2, 3})):
        for q in range(len(TOPICS)):
            aid = f"{prefix}{q + 1}"
            answer_verdicts.append({"item_id": f"{aid}@correctness", "verdict": "INCORRECT" if q in wrong else "CORRECT"})
            declines = prefix == "m" and q == 5
            answer_verdicts.append({"item_id": f"{aid}@answer-relevance", "verdict": "DECLINES" if declines else "ADDRESSES"})
            answer_verdicts.append({"item_id": f"{aid}@faithfulness", "verdict": "UNSUPPORTED" if q == 1 else "SUPPORTED"})
            if prefix == "m" and not declines:
                answer_verdicts.append({"item_id": f"{aid}#1", "verdict": "UNSUPPORTED" if q == 1 else "SUPPORTED"})
    _jsonl(root / "setup" / "answer_verdicts_carol.jsonl", answer_verdicts)
    # qrels: people's (alice) and a judge's, for `agree`; another judge's, for `calibrate --judge umbrela`.
    human = [f"{qid} 0 {d} {grade(q, d)}" for q, (qid, *_r) in enumerate(TOPICS) for d in all_docs()]
    judge = [f"{qid} 0 {d} {grade(q, d, 'bob')}" for q, (qid, *_r) in enumerate(TOPICS) for d in all_docs()]
    _write(root / "human.qrels", human)
    _write(root / "judge.qrels", judge)
    _write(root / "setup" / "umbrela.qrels", judge)
    # Verdict items and people's verdicts on them.
    items, verdicts = [], []
    for q, (qid, words, question, answer) in enumerate(TOPICS):
        items.append({"item_id": f"f{q + 1}", "kind": "faithfulness", "question": question,
                      "contexts": [chunk_text(doc_ids(q)[0])], "response": answer if q % 3 else f"{answer} It was added in 1999."})
        items.append({"item_id": f"p{q + 1}", "kind": "pairwise", "question": question, "response_a": answer,
                      "response_b": f"Something about {words}.", "model_a": "big", "model_b": "small"})
        verdicts.append({"item_id": f"f{q + 1}", "verdict": "SUPPORTED" if q % 3 else "UNSUPPORTED"})
        if q < 4:  # people judge a sample of the pairs, the judge all of them (PPI's two parts)
            verdicts.append({"item_id": f"p{q + 1}", "verdict": "A" if q != 2 else "TIE"})
    _jsonl(root / "items.jsonl", items)
    _jsonl(root / "people.jsonl", verdicts)
    # Nuggets per question (the answer's fact vital, its topic okay), and Carol's support labels on
    # every answer to the first three questions.
    _jsonl(root / "nuggets.jsonl", [n for qid, words, _q, answer in TOPICS
                                    for n in ({"query_id": qid, "text": answer, "importance": "vital"},
                                              {"query_id": qid, "text": f"It is about {words}", "importance": "okay"})])
    support = []
    for records in (my_rag, _answers("old", "o", {0}, 0), _answers("new", "n", {0, 1, 2, 3}, 3)):
        for q, record in enumerate(records[:3]):
            right = record["response"] == TOPICS[q][3]
            support += [{"answer_id": record["answer_id"], "nugget_id": f"{TOPICS[q][0]}/n1",
                         "verdict": "support" if right else "not_support"},
                        {"answer_id": record["answer_id"], "nugget_id": f"{TOPICS[q][0]}/n2",
                         "verdict": "partial_support" if right else "not_support"}]
    _jsonl(root / "setup" / "support_carol.jsonl", support)
    (root / "team.txt").write_text("Our team's prompt. Answer from these passages only.\n\n{contexts}\n\n"
                                   "Question: {question}\nAnswer in one sentence:\n", encoding="utf-8")


def judge_answer(message: str) -> str:
    """The stub judge's reply to a prompt: the token each task's prompt asks for."""
    text = message.lower()
    if "you write the nuggets" in text:
        return "The answer's main fact.\nA second fact."
    if "how much each nugget matters" in text:
        n = len(re.findall(r"<nugget_\d+ id=[0-9a-f]{16}>", message))
        return "\n".join(["vital", *["okay"] * (n - 1)])
    if "supports one nugget" in text:
        return "SUPPORT"
    if "one claim per line" in text or "split a response" in text:
        return "The answer states one fact.\nIt states a second fact."
    if "grade how well a passage" in text:
        # The query's and the passage's topic agree: its word stands in both (3 times or more).
        counts = [len(re.findall(rf"\b{words.split()[0]}\b", text)) for _q, words, *_r in TOPICS]
        return "2" if max(counts) >= 3 else "0"
    if "compare two responses" in text:
        return "A"
    if "one claim against" in text or "supported by the given contexts" in text:
        return "SUPPORTED"
    if "reference answer gives" in text:
        return "CORRECT"
    if "addresses the question" in text:
        return "ADDRESSES"
    return "A short answer from the gold chunks."

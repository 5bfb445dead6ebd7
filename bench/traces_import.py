"""`import-traces` against a plain ``json.loads`` read of the same OTLP JSON file, in one run.

    python bench/traces_import.py [--traces 20000] [--rounds 3]

The traces are made by the real OpenTelemetry SDK (the test extra) with OpenInference's
attribute names: per trace a root CHAIN span (question, response, session, user, metadata), a
RETRIEVER span with five documents of ~300 characters (ids of a 20,000-document corpus, every
fifth one not in it), an EMBEDDING span and an LLM span, exported by the SDK's OTLP JSON file
exporter 512 spans a line (the batch span processor's default batch). Timed in this process, one
after the other in each of ``--rounds`` rounds:

- ``json_loads``: every line through ``json.loads``, nothing else (the floor of any reader);
- ``read``: :func:`pooling.trace_readers.read_traces`, every answer built;
- ``import``: :func:`labeler.generation.traces.import_traces` into a new project holding the
  corpus (reading, linking to the corpus and the queries, one transaction).

Printed as JSON: the best time of each, and the median over the rounds of each one's ratio to
``json_loads`` in the same round. The machine is shared: compare figures of one
run, not across runs.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
N_DOCS = 20_000
WORDS = ("the capital river city system answer model retrieval paris rome berlin data number year population "
         "language history science water energy light music art law health market").split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def write_traces(path: Path, n: int, rng: random.Random) -> int:
    """``n`` traces through the SDK into ``path``; returns the number of spans."""
    from openinference.semconv.trace import SpanAttributes as A
    from opentelemetry.exporter.otlp.json.file import FileSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    kind = A.OPENINFERENCE_SPAN_KIND
    for t in range(n):
        with tracer.start_as_current_span("rag", attributes={
                kind: "CHAIN", A.INPUT_VALUE: f"Question {t}: {_sentence(rng, 8)}", A.SESSION_ID: f"s{t % 997}",
                A.USER_ID: f"u{t % 101}", A.METADATA: json.dumps({"release": "2.1", "tenant": t % 7})}) as root:
            with tracer.start_as_current_span("embed", attributes={kind: "EMBEDDING"}):
                pass
            docs = {}
            for i in range(5):
                doc = f"d{rng.randrange(N_DOCS)}" if i != 4 else f"web-{t}"
                docs[f"{A.RETRIEVAL_DOCUMENTS}.{i}.document.id"] = doc
                docs[f"{A.RETRIEVAL_DOCUMENTS}.{i}.document.content"] = _sentence(rng, 50)
                docs[f"{A.RETRIEVAL_DOCUMENTS}.{i}.document.score"] = 1.0 - i / 10
            with tracer.start_as_current_span("retrieve", attributes={kind: "RETRIEVER", **docs}):
                pass
            with tracer.start_as_current_span("llm", attributes={kind: "LLM", A.LLM_MODEL_NAME: "gpt-4o-mini"}):
                pass
            root.set_attribute(A.OUTPUT_VALUE, " ".join(_sentence(rng, 12) for _ in range(3)))
    provider.shutdown()
    spans = memory.get_finished_spans()
    buffer = io.StringIO()
    exporter = FileSpanExporter(stream=buffer)
    for start in range(0, len(spans), 512):
        exporter.export(spans[start:start + 512])
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return len(spans)


def _best(rounds: int, run) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def _plain(path: Path) -> int:
    with path.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if json.loads(line))


def _project(folder: Path, corpus: Path):
    from click.testing import CliRunner

    from labeler.cli import cli

    db = folder / f"p{len(list(folder.glob('p*.db')))}.db"
    for args in (["init", str(db)], ["import-corpus", str(db), str(corpus)]):
        result = CliRunner().invoke(cli, args)
        if result.exit_code:
            raise SystemExit(result.output)
    return db


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from labeler.generation.traces import import_traces
    from labeler.store import connect
    from labeler.store.access import OWNER
    from pooling.trace_readers import read_traces

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "traces.jsonl"
        spans = write_traces(path, args.traces, rng)
        corpus = folder / "corpus.jsonl"
        corpus.write_text("".join(json.dumps({"doc_id": f"d{d}", "text": _sentence(rng, 40)}) + "\n"
                                  for d in range(N_DOCS)), encoding="utf-8")
        rounds = []
        for _ in range(args.rounds):  # the three timed one after the other, each round: load moves them alike
            t_json, lines = _best(1, lambda: _plain(path))
            t_read, answers = _best(1, lambda: sum(1 for _ in read_traces(path)))
            db = connect(_project(folder, corpus))
            t_import, result = _best(1, lambda: import_traces(db, path, "rag", caller=OWNER))
            db.close()
            rounds.append((t_json, t_read, t_import))
        megabytes = round(path.stat().st_size / 2**20, 1)
    t_json, t_read, t_import = (min(r[i] for r in rounds) for i in range(3))
    ratios = {"read": statistics.median(r[1] / r[0] for r in rounds),
              "import": statistics.median(r[2] / r[0] for r in rounds)}
    print(json.dumps({
        "traces": args.traces, "spans": spans, "lines": lines, "megabytes": megabytes, "answers": answers, "added": result.added, "in_corpus": result.in_corpus,
        "documents": result.documents,
        "seconds": {"json_loads": round(t_json, 3), "read": round(t_read, 3), "import": round(t_import, 3)},
        "ratio_to_json_loads": {k: round(v, 2) for k, v in ratios.items()},  # median over the rounds
    }, indent=2))


if __name__ == "__main__":
    main()

"""Traces of a small RAG system made by the real OpenTelemetry SDK with OpenInference's
attribute names, written through the SDK's own OTLP JSON encodings:

- ``"lines"``: the SDK's OTLP JSON file exporter, one export request a line (as the
  collector's file exporter writes), the spans exported a few at a time, so a trace's spans
  lie on several lines; ids in hex, as the protocol's JSON encoding has them;
- ``"document"``: the OTLP protobuf encoder and protobuf's JSON mapping (``MessageToJson``),
  one pretty-printed document, ids in base64.

A trace is described by a :class:`Trace`; :func:`write_traces` returns the trace ids in order.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
CHAIN, RETRIEVER, LLM = (OpenInferenceSpanKindValues.CHAIN.value, OpenInferenceSpanKindValues.RETRIEVER.value,
                         OpenInferenceSpanKindValues.LLM.value)


@dataclass
class Trace:
    """One request to the RAG system: its question, answer, and what each retriever returned."""

    question: str
    response: str
    retrievals: Sequence[Sequence[tuple[str, str, float]]] = ()  # per RETRIEVER span: (doc id, content, score)
    model: str = "gpt-4o-mini"
    session: str | None = None
    user: str | None = None
    metadata: dict[str, object] | None = None
    answer_in_child: bool = False  # the question and answer on a CHAIN span under a root without them
    no_answer: bool = False  # no span carries both input.value and output.value (a health check)
    extra: dict[str, object] = field(default_factory=dict)  # more attributes of the answer span


def _documents(docs: Sequence[tuple[str, str, float]]) -> dict[str, object]:
    attributes: dict[str, object] = {}
    for n, (doc_id, content, score) in enumerate(docs):
        prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{n}"
        attributes[f"{prefix}.{DocumentAttributes.DOCUMENT_ID}"] = doc_id
        attributes[f"{prefix}.{DocumentAttributes.DOCUMENT_CONTENT}"] = content
        attributes[f"{prefix}.{DocumentAttributes.DOCUMENT_SCORE}"] = score
    return attributes


def _record(tracer, trace: Trace) -> str:
    io_attributes: dict[str, object] = {KIND: CHAIN, SpanAttributes.INPUT_VALUE: trace.question, **trace.extra}
    if trace.session is not None:
        io_attributes[SpanAttributes.SESSION_ID] = trace.session
    if trace.user is not None:
        io_attributes[SpanAttributes.USER_ID] = trace.user
    if trace.metadata is not None:
        io_attributes[SpanAttributes.METADATA] = json.dumps(trace.metadata)
    root_attributes = {KIND: CHAIN} if trace.answer_in_child or trace.no_answer else io_attributes
    with tracer.start_as_current_span("rag-request", attributes=root_attributes) as root:
        answer_span = root
        if trace.answer_in_child:
            answer_span = tracer.start_span("query", attributes=io_attributes)
        for docs in trace.retrievals:
            with tracer.start_as_current_span("retrieve", attributes={KIND: RETRIEVER, **_documents(docs)}):
                pass
        with tracer.start_as_current_span("generate", attributes={KIND: LLM, SpanAttributes.LLM_MODEL_NAME: trace.model}):
            pass
        if not trace.no_answer:
            answer_span.set_attribute(SpanAttributes.OUTPUT_VALUE, trace.response)
        if trace.answer_in_child:
            answer_span.end()
        return format(root.get_span_context().trace_id, "032x")


def record_spans(traces: Sequence[Trace]) -> tuple[list[ReadableSpan], list[str]]:
    """The finished spans of ``traces`` (in the order the SDK ended them) and the trace ids."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-service"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("rag.app")
    ids = [_record(tracer, trace) for trace in traces]
    provider.shutdown()
    return list(exporter.get_finished_spans()), ids


def write_traces(path: Path, traces: Sequence[Trace], *, encoding: Literal["lines", "document"] = "lines",
                 per_request: int = 2) -> list[str]:
    """Write ``traces`` to ``path`` as OTLP JSON; return their trace ids (hex) in order."""
    spans, ids = record_spans(traces)
    write_spans(path, spans, encoding=encoding, per_request=per_request)
    return ids


def write_spans(path: Path, spans: Sequence[ReadableSpan], *, encoding: Literal["lines", "document"] = "lines",
                per_request: int = 2) -> Path:
    """Write finished spans to ``path`` as OTLP JSON in one of the SDK's two encodings."""
    if encoding == "lines":
        from opentelemetry.exporter.otlp.json.file import FileSpanExporter

        buffer = io.StringIO()
        exporter = FileSpanExporter(stream=buffer)
        for start in range(0, len(spans), per_request):
            exporter.export(spans[start:start + per_request])
        path.write_text(buffer.getvalue(), encoding="utf-8")
    else:
        from google.protobuf.json_format import MessageToJson
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        path.write_text(MessageToJson(encode_spans(spans)), encoding="utf-8")
    return path


def phoenix_frame(spans: Sequence[ReadableSpan]):
    """The spans as Phoenix's spans dataframe: one row a span, indexed by ``context.span_id``,
    ``attributes.*`` columns (its semantic conventions flattened, as Phoenix's server does:
    the retrieved documents a list of objects with ``document.*`` keys, ``metadata`` decoded)."""
    import re
    from datetime import UTC, datetime, timedelta

    import pandas as pd

    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    rows = []
    for span in spans:
        attributes = dict(span.attributes or {})
        documents: dict[int, dict[str, object]] = {}
        row: dict[str, object] = {}
        for key, value in attributes.items():
            match = re.fullmatch(r"retrieval\.documents\.(\d+)\.(document\.\w+)", key)
            if match:
                documents.setdefault(int(match[1]), {})[match[2]] = value
            elif key != "metadata":
                row[f"attributes.{key}"] = value
        if "metadata" in attributes:
            row["attributes.metadata"] = json.loads(str(attributes["metadata"]))
        if documents:
            row["attributes.retrieval.documents"] = [documents[n] for n in sorted(documents)]
        parent = span.parent.span_id if span.parent else None
        rows.append({"name": span.name, "span_kind": attributes.get(KIND, "UNKNOWN"),
                     "parent_id": None if parent is None else format(parent, "016x"),
                     "start_time": epoch + timedelta(microseconds=span.start_time // 1000),
                     "end_time": epoch + timedelta(microseconds=span.end_time // 1000),
                     "status_code": "OK", "status_message": "", "events": [],
                     "context.span_id": format(span.context.span_id, "016x"),
                     "context.trace_id": format(span.context.trace_id, "032x"), **row})
    # As Phoenix's get_spans_dataframe() returns it: indexed by the span id, kept as a column too.
    return pd.DataFrame(rows).set_index("context.span_id", drop=False)

"""The reader of a RAG system's traces (:func:`read_traces`): one answer per trace.

Two formats, told apart by their content whatever the file's name:

- **OTLP JSON**, the OpenTelemetry protocol's JSON encoding (``resourceSpans`` → ``scopeSpans``
  → ``spans``): one export request a line, as the collector's file exporter and the SDK's
  JSON file exporter write it, or one document (pretty-printed or not). Trace and span ids
  are hex, as the protocol's JSON encoding has them, or base64, as protobuf's generic JSON
  mapping writes bytes;
- **Phoenix's span export**: its spans dataframe saved as Parquet, one row a span, with the
  ``context.trace_id``, ``context.span_id``, ``parent_id``, ``span_kind``, ``start_time`` and
  ``attributes.*`` columns (``attributes.retrieval.documents`` a list of documents).

Spans carry the OpenInference conventions. In each trace, the **answer span** is the root span
when it has both ``input.value`` (the question) and ``output.value`` (the response), else the
outermost CHAIN span with both (the earliest, of several as deep); a trace with neither is
skipped, and counted. Its RETRIEVER spans give the ranked documents,
``retrieval.documents.N.document.{id,content,score}``: contexts are their texts, retrieved ids
their ids (first occurrence kept). A trace without a RETRIEVER span is read without contexts;
one with several is read with their documents in the order the spans started, and both are
counted with the first trace ids. The last LLM span's ``llm.model_name`` is the model.
``session.id``, ``user.id``, ``metadata``, ``tag.tags``, the trace id, the start time and every
retrieved document's id and score are kept as the answer's metadata.

An answer holds the keys :func:`pooling.answer_readers.read_answers` yields, so one import path
stores both; its ``answer_id`` is the trace id. Bad input raises
:class:`~pooling.PoolingError` naming the file, the line (of the span at fault; for a whole
trace, the line of its answer span; none in a file that is one document, where the field's
path names the span) and the field, with the trace id where it helps.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pooling import PoolingError, shown
from pooling.chars import check_text
from pooling.lines import first_bytes, read_lines
from pooling.readers import JSON_DEPTH_CAP, _json_kind, _parquet

__all__ = ["TraceReading", "read_traces", "trace_format"]

#: Trace ids a :class:`TraceReading` lists per kind of trace it counts.
FIRST = 5
#: Keys of a JSON ``input.value`` / ``output.value`` object read as the question / response,
#: in this order (LangChain's chains write ``{"question": ...}`` or ``{"query": ...}``,
#: LlamaIndex's ``{"query_str": ...}``); an object with none of them is kept as its JSON text.
QUESTION_KEYS = ("question", "query", "query_str", "input", "user_input")
RESPONSE_KEYS = ("answer", "response", "result", "output", "text", "content")

_KEPT = frozenset({"input.value", "input.mime_type", "output.value", "output.mime_type", "openinference.span.kind",
                   "llm.model_name", "session.id", "user.id", "metadata", "tag.tags"})
_HEX = re.compile(r"[0-9a-fA-F]+")
_JSON_MIME = "application/json"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class TraceReading:
    """How a traces file was read: counts, and the first trace ids of each kind counted."""

    spans: int = 0
    traces: int = 0
    answers: int = 0
    skipped: int = 0  # traces with no answer span (root or CHAIN span with input.value and output.value)
    no_retriever: int = 0  # answers read without contexts: the trace has no RETRIEVER span
    several_retrievers: int = 0  # answers whose contexts merge several RETRIEVER spans
    first_skipped: list[str] = field(default_factory=list)
    first_no_retriever: list[str] = field(default_factory=list)
    first_several_retrievers: list[str] = field(default_factory=list)

    def count(self, kind: str, trace_id: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        first = getattr(self, f"first_{kind}")
        if len(first) < FIRST:
            first.append(trace_id)


@dataclass(slots=True)
class _Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    start: int  # nanoseconds since the epoch
    line: int | None  # None in a file that is one document: its field names the span
    where: str  # the span's place in the file, for error messages
    attrs: dict[str, Any]
    documents: dict[int, dict[str, Any]]

    @property
    def kind(self) -> str | None:
        return self.attrs.get("openinference.span.kind")


def trace_format(path: str | Path) -> str:
    """``"parquet"`` (Phoenix's span export) when the file starts with PAR1, else ``"otlp"``."""
    return "parquet" if first_bytes(path, 4) == b"PAR1" else "otlp"


def read_traces(path: str | Path,
                reading: TraceReading | None = None) -> Iterator[tuple[int | None, dict[str, Any]]]:
    """Yield ``(line, answer)``, one per trace of an OTLP JSON or Phoenix Parquet file that has
    an answer span, in the order the traces first appear. The whole file is read (a trace's
    spans may be anywhere in it) before the first answer is yielded.

    ``reading``, if given, is filled with what was read (:class:`TraceReading`).

    Raises:
        PoolingError: malformed JSON or Parquet, a file that holds no span, an attribute of
            the wrong type; file, line, field (and trace id) named.
    """
    path = Path(path)
    reading = TraceReading() if reading is None else reading
    spans = _phoenix_spans(path) if trace_format(path) == "parquet" else _otlp_spans(path)
    traces: dict[str, list[_Span]] = {}
    seen: set[tuple[str, str]] = set()
    for span in spans:
        reading.spans += 1
        if (span.trace_id, span.span_id) not in seen:  # a span exported twice counts once
            seen.add((span.trace_id, span.span_id))
            traces.setdefault(span.trace_id, []).append(span)
    if not reading.spans:
        raise PoolingError("holds no span; give OTLP JSON (resourceSpans → scopeSpans → spans) or Phoenix's spans "
                           "dataframe saved as Parquet", path=path)
    reading.traces = len(traces)
    for trace_id, trace in traces.items():
        answer = _answer(path, trace_id, trace, reading)
        if answer is not None:
            reading.answers += 1
            yield answer


# --- OTLP JSON ---

def _otlp_documents(path: Path) -> Iterator[tuple[int | None, Any]]:
    """``(line, request)`` of each export request: one a line, or the file as one document
    (when its first non-blank line is not a whole JSON value)."""
    lines = read_lines(path)
    for number, text in lines:
        if text.strip():
            break
    else:
        return
    try:
        first = json.loads(text)
    except json.JSONDecodeError:
        lines.close()
        yield None, _whole(path)
        return
    except RecursionError:
        raise PoolingError("nested too deep", path=path, line=number) from None
    yield number, first
    for number, text in lines:
        if text.strip():
            yield number, _json_line(text, path, number)


def _whole(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise PoolingError(f"not UTF-8 (byte {exc.start + 1}); OTLP JSON is UTF-8", path=path) from None
    except json.JSONDecodeError as exc:
        raise PoolingError(f"malformed JSON ({exc.msg} at column {exc.colno}); give OTLP JSON, one export request a "
                           "line or one document", path=path, line=exc.lineno) from None
    except RecursionError:
        raise PoolingError("nested too deep", path=path) from None


def _json_line(text: str, path: Path, number: int) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise PoolingError(f"malformed JSON ({exc.msg} at column {exc.colno}); the file holds one export request a "
                           "line", path=path, line=number) from None
    except RecursionError:
        raise PoolingError("nested too deep", path=path, line=number) from None


def _items(value: Any, name: str, path: Path, line: int | None) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PoolingError(f"must be an array, not {_json_kind(value)}", path=path, line=line, field=name)
    return value


def _otlp_spans(path: Path) -> Iterator[_Span]:
    for line, request in _otlp_documents(path):
        if not isinstance(request, dict) or "resourceSpans" not in request:
            raise PoolingError("not an OTLP trace export: expected an object with 'resourceSpans' (OTLP JSON names "
                               "are lowerCamelCase)", path=path, line=line)
        for r, resource in enumerate(_items(request["resourceSpans"], "resourceSpans", path, line)):
            where = f"resourceSpans[{r}]"
            if not isinstance(resource, dict):
                raise PoolingError(f"must be an object, not {_json_kind(resource)}", path=path, line=line, field=where)
            scopes = resource.get("scopeSpans", resource.get("instrumentationLibrarySpans"))
            for s, scope in enumerate(_items(scopes, f"{where}.scopeSpans", path, line)):
                spans = scope.get("spans") if isinstance(scope, dict) else None
                for i, span in enumerate(_items(spans, f"{where}.scopeSpans[{s}].spans", path, line)):
                    yield _otlp_span(span, path, line, f"{where}.scopeSpans[{s}].spans[{i}]")


def _otlp_span(span: Any, path: Path, line: int | None, where: str) -> _Span:
    if not isinstance(span, dict):
        raise PoolingError(f"must be an object, not {_json_kind(span)}", path=path, line=line, field=where)
    trace_id = _otlp_id(span.get("traceId"), 16, path, line, f"{where}.traceId")
    span_id = _otlp_id(span.get("spanId"), 8, path, line, f"{where}.spanId")
    parent = span.get("parentSpanId")
    parent_id = _otlp_id(parent, 8, path, line, f"{where}.parentSpanId") if parent else None
    start = span.get("startTimeUnixNano", 0)
    try:
        start = int(start)
    except (TypeError, ValueError):
        raise PoolingError(f"must be nanoseconds since the epoch, not {shown(start)}", path=path, line=line,
                           field=f"{where}.startTimeUnixNano") from None
    result = _Span(trace_id, span_id, parent_id, start, line, where, {}, {})
    for k, attribute in enumerate(_items(span.get("attributes"), f"{where}.attributes", path, line)):
        key = attribute.get("key") if isinstance(attribute, dict) else None
        if not isinstance(key, str):
            raise PoolingError("must be an object {\"key\": ..., \"value\": {...}}", path=path, line=line,
                               field=f"{where}.attributes[{k}]")
        target = _target(result, key)
        if target is not None:
            try:
                target[0][target[1]] = _any_value(attribute.get("value"))
            except _BadValue as exc:
                raise PoolingError(str(exc), path=path, line=line, field=f"{where}.attributes[{key!r}]{exc.at}") from None
    return result


_DOCUMENT_PREFIX = "retrieval.documents."
_DOCUMENT_FIELDS = frozenset({"id", "content", "score"})


def _target(span: _Span, key: str) -> tuple[dict[Any, Any], Any] | None:
    """Where the value of attribute ``key`` goes in ``span`` (None: not read)."""
    if key in _KEPT:
        return span.attrs, key
    if key.startswith(_DOCUMENT_PREFIX):
        n, _, rest = key[len(_DOCUMENT_PREFIX):].partition(".document.")
        if n.isdigit() and rest in _DOCUMENT_FIELDS:
            return span.documents.setdefault(int(n), {}), rest
    return None


def _otlp_id(value: Any, size: int, path: Path, line: int | None, name: str) -> str:
    """A trace (16 bytes) or span (8 bytes) id as lower-case hex, from hex or base64."""
    if isinstance(value, str):
        if len(value) == 2 * size and _HEX.fullmatch(value):
            return value.lower()
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == size:
            return raw.hex()
    raise PoolingError(f"must be {size} bytes as {2 * size} hex digits (or base64), not {shown(value)}",
                       path=path, line=line, field=name)


class _BadValue(ValueError):
    """An attribute's value that is not an OTLP value; ``at`` is where in it (``[2]``, ``.key``)."""

    def __init__(self, message: str, at: str = "") -> None:
        super().__init__(message)
        self.at = at


def _any_value(value: Any, depth: int = 0) -> Any:
    """The Python value of an OTLP ``AnyValue`` (``{"stringValue": ...}``, ``{"intValue": "3"}``...).

    Only the attributes read are decoded, so only they are held to the nesting cap of every
    reader (the rest of a line is as deep as ``json.loads`` takes it).

    Raises:
        _BadValue: not an OTLP value, a number that is not one, nested too deep.
    """
    if not isinstance(value, dict) or not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "stringValue" and isinstance(inner, str):
        return inner
    if kind == "boolValue" and isinstance(inner, bool):
        return inner
    if kind in ("intValue", "doubleValue") and isinstance(inner, int | float | str) and not isinstance(inner, bool):
        try:
            return int(inner) if kind == "intValue" else float(inner)
        except ValueError:
            raise _BadValue(f"{kind} {shown(inner)} is not a number") from None
    if depth >= JSON_DEPTH_CAP:
        raise _BadValue(f"nested deeper than {JSON_DEPTH_CAP} levels of arrays and objects")
    if kind == "arrayValue" and isinstance(inner, dict):
        return [_nested(v, depth, f"[{i}]") for i, v in enumerate(inner.get("values") or [])]
    if kind == "kvlistValue" and isinstance(inner, dict):
        return {kv.get("key"): _nested(kv.get("value"), depth, f".{kv.get('key')}")
                for kv in inner.get("values") or [] if isinstance(kv, dict)}
    if kind == "bytesValue" and isinstance(inner, str):
        return inner
    raise _BadValue(f"not an OTLP value: {shown(kind)} {shown(inner)} (give stringValue, intValue, doubleValue, "
                    "boolValue, arrayValue or kvlistValue)")


def _nested(value: Any, depth: int, at: str) -> Any:
    try:
        return _any_value(value, depth + 1)
    except _BadValue as exc:
        raise _BadValue(str(exc), at + exc.at) from None


def _keep(span: _Span, key: str, value: Any) -> None:
    target = _target(span, key)
    if target is not None:
        target[0][target[1]] = value


# --- Phoenix's spans dataframe as Parquet ---

_PHOENIX_COLUMNS = ("context.trace_id", "context.span_id")


def _phoenix_spans(path: Path) -> Iterator[_Span]:
    for row, record in _parquet(path, lean=True):
        missing = [c for c in _PHOENIX_COLUMNS if c not in record]
        if missing:
            raise PoolingError(f"no column {missing[0]!r}: not Phoenix's spans dataframe (give the dataframe of "
                               "get_spans_dataframe() saved with to_parquet(), its index kept)", path=path, line=row)
        yield _phoenix_span(record, path, row)


def _phoenix_span(record: Mapping[str, Any], path: Path, row: int) -> _Span:
    trace_id = _phoenix_id(record["context.trace_id"], path, row, "context.trace_id")
    span_id = _phoenix_id(record["context.span_id"], path, row, "context.span_id")
    parent = record.get("parent_id")
    parent_id = _phoenix_id(parent, path, row, "parent_id") if parent else None
    start = record.get("start_time")
    if isinstance(start, datetime) and start.tzinfo is None:
        start = start.replace(tzinfo=UTC)  # Phoenix's times are UTC
    nanos = (start - _EPOCH) // timedelta(microseconds=1) * 1000 if isinstance(start, datetime) else 0
    span = _Span(trace_id, span_id, parent_id, nanos, row, "", {}, {})
    for column, value in record.items():
        if not column.startswith("attributes.") or value is None:
            continue
        key = column.removeprefix("attributes.")
        if key == "retrieval.documents":
            for n, document in enumerate(_items(value, column, path, row)):
                if not isinstance(document, dict):
                    raise PoolingError(f"must be an object, not {_json_kind(document)}", path=path, line=row,
                                       field=f"{column}[{n}]")
                span.documents[n] = {k: document.get(f"document.{k}") for k in ("id", "content", "score")
                                     if document.get(f"document.{k}") is not None}
        else:
            _keep(span, key, value)
    if span.kind is None and isinstance(record.get("span_kind"), str):
        span.attrs["openinference.span.kind"] = record["span_kind"]
    return span


def _phoenix_id(value: Any, path: Path, row: int, name: str) -> str:
    if not isinstance(value, str) or not value or any(ch.isspace() or ch == "#" for ch in value):
        raise PoolingError(f"must be an id (visible characters, no '#'), not {shown(value)}", path=path, line=row,
                           field=name)
    return value


# --- One trace, one answer ---

def _answer(path: Path, trace_id: str, trace: Sequence[_Span],
            reading: TraceReading) -> tuple[int | None, dict[str, Any]] | None:
    top = _answer_span(trace)
    if top is None:
        reading.count("skipped", trace_id)
        return None
    where = f"{top.where}.attributes" if top.where else "attributes"
    question = _io_text(top, "input", QUESTION_KEYS, path, trace_id, where)
    response = _io_text(top, "output", RESPONSE_KEYS, path, trace_id, where)
    retrievers = sorted((s for s in trace if s.kind == "RETRIEVER"), key=lambda s: s.start)
    if not retrievers:
        reading.count("no_retriever", trace_id)
    elif len(retrievers) > 1:
        reading.count("several_retrievers", trace_id)
    contexts, ids, retrieved = _documents(retrievers, path, trace_id)
    models = [s.attrs["llm.model_name"] for s in sorted(trace, key=lambda s: s.start)
              if s.kind == "LLM" and isinstance(s.attrs.get("llm.model_name"), str)]
    meta: dict[str, Any] = {"trace_id": trace_id, "span_id": top.span_id}
    if top.start:
        meta["start_time"] = (_EPOCH + timedelta(microseconds=top.start // 1000)).isoformat()
    for key, name in (("session.id", "session_id"), ("user.id", "user_id"), ("tag.tags", "tags")):
        value = next((s.attrs[key] for s in [top, *trace] if s.attrs.get(key) is not None), None)
        if value is not None:
            meta[name] = value
    metadata = top.attrs.get("metadata")
    if metadata is not None:
        meta["metadata"] = _metadata(metadata)
    if models:
        meta["model"] = models[-1]
    if retrieved:
        meta["retrieved"] = retrieved
    answer = {"answer_id": trace_id, "query_id": None, "question": question, "response": response,
              "contexts": contexts, "retrieved_ids": ids, "reference": None, "claims": None, "system": None, "batch": None, "meta": meta,
              "fields": {"answer_id": "traceId", "query_id": "query_id", "question": "input.value",
                         "response": "output.value", "contexts": "retrieval.documents",
                         "retrieved_ids": "retrieval.documents", "reference": "reference", "claims": "claims",
                         "system": "system", "batch": "batch"}}
    return top.line, answer


def _answer_span(trace: Sequence[_Span]) -> _Span | None:
    """The root span with input.value and output.value, else the outermost such CHAIN span."""
    by_id = {s.span_id: s for s in trace}
    answering = [s for s in trace if isinstance(s.attrs.get("input.value"), str | dict)
                 and s.attrs.get("output.value") is not None]
    roots = [s for s in answering if s.parent_id is None or s.parent_id not in by_id]
    if roots:
        return min(roots, key=lambda s: s.start)  # of those as early, the first in the file
    chains = [s for s in answering if s.kind == "CHAIN"]
    return min(chains, key=lambda s: (_depth(s, by_id), s.start)) if chains else None


def _depth(span: _Span, by_id: Mapping[str, _Span]) -> int:
    depth, seen = 0, {span.span_id}
    while span.parent_id in by_id and span.parent_id not in seen:
        span = by_id[span.parent_id]
        seen.add(span.span_id)
        depth += 1
    return depth


def _io_text(span: _Span, side: str, keys: tuple[str, ...], path: Path, trace_id: str, where: str) -> str:
    """The question (``input``) or response (``output``) of the answer span, as text."""
    name = f"{where}.{side}.value"
    value = span.attrs.get(f"{side}.value")
    if isinstance(value, str) and span.attrs.get(f"{side}.mime_type") == _JSON_MIME:
        try:
            decoded = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            decoded = value
        if isinstance(decoded, str):
            value = decoded
        elif isinstance(decoded, dict):
            value = next((decoded[k] for k in keys if isinstance(decoded.get(k), str)), value)
    if isinstance(value, dict):  # Phoenix may keep a JSON value decoded
        value = next((value[k] for k in keys if isinstance(value.get(k), str)), json.dumps(value, ensure_ascii=False))
    if not isinstance(value, str):
        raise PoolingError(f"trace {trace_id}: must be text, not {_json_kind(value)}", path=path, line=span.line,
                           field=name)
    return check_text(value, path, span.line, name)


def _documents(retrievers: Sequence[_Span], path: Path,
               trace_id: str) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """Contexts, retrieved ids (each once) and ``{"id", "score"}`` of every document, in rank order."""
    contexts: list[str] = []
    ids: list[str] = []
    retrieved: list[dict[str, Any]] = []
    for span in retrievers:
        prefix = f"{span.where}.attributes" if span.where else "attributes"
        for n in sorted(span.documents):
            document = span.documents[n]
            name = f"{prefix}.retrieval.documents.{n}.document"
            doc_id, content, score = document.get("id"), document.get("content"), document.get("score")
            if isinstance(doc_id, int) and not isinstance(doc_id, bool):
                doc_id = str(doc_id)
            if doc_id is not None and not isinstance(doc_id, str):
                raise PoolingError(f"trace {trace_id}: must be a string, not {_json_kind(doc_id)}", path=path,
                                   line=span.line, field=f"{name}.id")
            if content is not None:
                if not isinstance(content, str):
                    raise PoolingError(f"trace {trace_id}: must be text, not {_json_kind(content)}", path=path,
                                       line=span.line, field=f"{name}.content")
                contexts.append(check_text(content, path, span.line, f"{name}.content"))
            if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
                raise PoolingError(f"trace {trace_id}: must be a number, not {_json_kind(score)}", path=path,
                                   line=span.line, field=f"{name}.score")
            retrieved.append({"id": doc_id, "score": score})
            if doc_id and doc_id not in ids:
                ids.append(doc_id)
    return contexts, ids, retrieved


def _metadata(value: Any) -> Any:
    """OpenInference's ``metadata`` is a JSON object as text; kept as the object when it is one."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return value
    return value

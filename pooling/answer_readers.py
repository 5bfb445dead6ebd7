"""The streaming, validating reader of a generating system's answers (:func:`read_answers`).

JSONL, CSV (lists as JSON arrays or Python literals, as pandas and RAGAS write them) or
Parquet, known by their content whatever the suffix; RAGAS's column names, old and new, are
accepted. It reads through :mod:`pooling.readers`' primitives, so it accepts the same encodings
and syntax and refuses bad input the same way: :class:`~pooling.PoolingError` naming the file,
the line (the row number, for Parquet) and the field.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pooling import PoolingError, shown
from pooling.chars import check_id, check_text, is_blank
from pooling.lines import first_bytes, read_lines
from pooling.readers import (_SUFFIXES, _TOO_DEEP, _check_unique, _delimited, _empty, _identifier, _json_kind,
                             _json_value, _jsonl, _parquet, _text)

__all__ = ["ANSWER_FIELDS", "answers_format", "read_answers"]


#: Fields of an answer record, each with the names a file may give it under: goldpool's own
#: name first, then RAGAS's (``user_input``, ``retrieved_contexts``; before RAGAS 0.2
#: ``question``, ``contexts``, ``answer``, ``ground_truth``), so a RAGAS evaluation dataset reads
#: unchanged; ``system`` and ``batch`` are what ``export-answers`` writes beside them. Every other
#: key of a record is kept as metadata.
ANSWER_FIELDS: dict[str, tuple[str, ...]] = {
    "answer_id": ("answer_id",),
    "query_id": ("query_id",),
    "question": ("question", "user_input"),
    "response": ("response", "answer"),
    "contexts": ("contexts", "retrieved_contexts"),
    "retrieved_ids": ("retrieved_ids",),
    "reference": ("reference", "ground_truth"),
    "claims": ("claims",),
    "system": ("system",),
    "batch": ("batch",),
}
_ANSWER_KEYS = frozenset({name for names in ANSWER_FIELDS.values() for name in names} | {"meta"})
_LIST_FIELDS = ("contexts", "retrieved_ids", "claims")
#: Columns that look like an answer's field but are not read as one: kept as metadata, and
#: named in a warning that says what would be read.
_NEAR_MISSES: dict[str, str] = {
    "ground_truths": "give the reference answer as one text, 'reference' (or 'ground_truth'), for it to be the "
                     "answer's reference",
    "retrieved_context_ids": "name it 'retrieved_ids' if it holds doc_ids of the project's corpus, best first",
    "retrieved_doc_ids": "name it 'retrieved_ids' if it holds doc_ids of the project's corpus, best first",
    "context": "give the contexts as a list of texts, 'contexts' (or 'retrieved_contexts')",
}
_FORMATS = "answers are one JSON object a line (JSONL), a CSV file with a header row, or Parquet"


def answers_format(path: str | Path) -> Literal["jsonl", "csv", "tsv", "parquet"]:
    """The format of an answers file, from its content whatever its name.

    Parquet if it starts with Parquet's magic bytes ``PAR1``; else JSONL if its first non-blank
    character is ``{`` (or it has none); else a table with a header row, TSV if the file is named ``.tsv`` or
    ``.tab`` and CSV otherwise. A file named ``.parquet`` must be Parquet.

    Raises:
        PoolingError: a ``.parquet`` file that is not Parquet; a JSON array.
    """
    path = Path(path)
    if first_bytes(path, 4) == b"PAR1":
        return "parquet"
    if _SUFFIXES.get(path.suffix.lower()) == "parquet":
        raise PoolingError("named .parquet but not a Parquet file (it does not start with PAR1); give the file its "
                           "right name", path=path)
    for number, line in read_lines(path):
        text = line.strip()
        if text:
            if text.startswith("{"):
                return "jsonl"
            if text.startswith("["):
                try:
                    _json_value(text)
                except RecursionError:
                    raise PoolingError(_TOO_DEEP, path=path, line=number) from None
                except json.JSONDecodeError:
                    pass
                raise PoolingError(f"a JSON array; {_FORMATS}", path=path, line=number)
            break
    else:
        return "jsonl"  # nothing but blank lines: refused as empty, in any format
    return "tsv" if _SUFFIXES.get(path.suffix.lower()) == "tsv" else "csv"


def read_answers(path: str | Path, *, warnings: list[str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, answer)`` of a file of a system's answers, validated: JSONL, CSV (or TSV)
    with a header row, or Parquet, told apart by :func:`answers_format`.

    An answer holds every key of :data:`ANSWER_FIELDS` (None when the record does not give
    it) and ``meta``, a dict of the record's other keys (merged into its own ``meta``
    object, if any), and ``fields``: the name the record gave each field under (for error
    messages). A record gives a ``question`` (or ``user_input``), a ``query_id``, or both;
    ``response`` (or ``answer``) is required and may be empty (an abstention). ``contexts``,
    ``retrieved_ids`` and ``claims`` are lists of strings; ids are checked as every id is
    (:mod:`pooling.chars`), and an ``answer_id`` may not hold ``#``, which separates it
    from the number of its claims (``ANSWER_ID#N``). An explicit ``answer_id`` given twice
    is refused. A field given under two of its names must have one value.

    In a CSV file every cell is text: an empty cell is a field not given (an empty
    ``response`` cell is an empty response), and a list is a JSON array or a Python list
    literal of strings, as RAGAS's ``to_csv`` and pandas write one (``['a', 'b']``), read
    without running anything. An unnamed first column (the index pandas writes) is dropped.

    ``warnings``, if given, receives one line per column that looks like an answer's field
    but is kept only as metadata (``Question``, ``ground_truths``...).

    Raises:
        PoolingError: malformed JSON, CSV or Parquet, a missing or invalid field, a field given
            under two names with different values, the same answer_id twice, or no record
            at all; file, line and field named.
    """
    path = Path(path)
    fmt = answers_format(path)
    seen: dict[str, int] = {}
    warned: set[str] = set()
    count = 0
    if fmt == "parquet":
        records = _parquet(path, lean=True)
    elif fmt == "jsonl":
        records = _jsonl(path)
    else:
        delimiter = "," if fmt == "csv" else "\t"
        _check_answer_header(path, delimiter)
        records = _delimited(path, delimiter)
    for line, record in records:
        if fmt in ("csv", "tsv"):
            record = _from_cells(record, path, line)
        answer = _answer(record, path, line)
        if warnings is not None:
            _warn(answer["meta"], line, warned, warnings)
        if answer["answer_id"] is not None:
            _check_unique(seen, answer["answer_id"], "answer_id", path, line)
        count += 1
        yield line, answer
    if not count:
        raise PoolingError(_empty("answers", fmt), path=path)


def _check_answer_header(path: Path, delimiter: str) -> None:
    """Refuse a table whose header row names no field of an answer: not an answers file."""
    for number, line in read_lines(path):
        if line.strip():
            header = {name.strip() for name in next(csv.reader([line], delimiter=delimiter), [])}
            if not _ANSWER_KEYS & header:
                raise PoolingError(f"the header names no field of an answer (question, user_input, query_id, response, "
                                   f"answer...); {_FORMATS}", path=path, line=number)
            return


def _from_cells(record: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    """A CSV row as a record: empty cells of the fields are not given (an empty response is
    ""), list cells read as lists, the pandas index column dropped."""
    record = {k: v for i, (k, v) in enumerate(record.items()) if i or k != ""}
    responded = any(name in record for name in ANSWER_FIELDS["response"])
    for field, names in ANSWER_FIELDS.items():
        for name in names:
            if record.get(name) == "":
                record[name] = None
            elif name in record and field in _LIST_FIELDS:
                record[name] = _list_cell(record[name], name, path, line)
    if responded and all(record.get(name) is None for name in ANSWER_FIELDS["response"]):
        record[ANSWER_FIELDS["response"][0]] = ""
    return record


_LIST_HINT = "give a list of texts: a JSON array [\"a\", \"b\"] or Python's ['a', 'b'], as pandas and RAGAS write it"


def _list_cell(cell: str, name: str, path: Path, line: int) -> list[Any]:
    """The list a CSV cell holds: a JSON array, or a Python list literal of strings (what
    ``str(list)`` writes), read from its syntax tree: nothing in the cell is ever run."""
    text = cell.strip()
    if not text.startswith("["):
        raise PoolingError(_LIST_HINT, path=path, line=line, field=name)
    try:
        value = _json_value(text)
    except RecursionError:
        raise PoolingError(_TOO_DEEP, path=path, line=line, field=name) from None
    except json.JSONDecodeError:
        value = _python_list(text, name, path, line)
    else:
        if not isinstance(value, list):
            raise PoolingError(_LIST_HINT, path=path, line=line, field=name)
    for i, item in enumerate(value):
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise PoolingError("holds a lone surrogate (\\ud800-\\udfff without its pair), which is not valid "
                                   "Unicode; fix or remove the escape", path=path, line=line, field=f"{name}[{i}]") from None
    return value


def _python_list(text: str, name: str, path: Path, line: int) -> list[Any]:
    import ast
    import io
    import tokenize

    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise PoolingError(_LIST_HINT, path=path, line=line, field=name) from None
    if not isinstance(tree.body, ast.List):
        raise PoolingError(_LIST_HINT, path=path, line=line, field=name)
    values: list[Any] = []
    for i, node in enumerate(tree.body.elts):
        if isinstance(node, ast.Constant):
            values.append(node.value)
            continue
        kind = ("an array" if isinstance(node, ast.List | ast.Tuple | ast.Set) else "an object" if isinstance(node, ast.Dict)
                else "Python code (which goldpool never runs)")
        raise PoolingError(f"must be a string, not {kind}", path=path, line=line, field=f"{name}[{i}]")
    try:
        strings = sum(token.type == tokenize.STRING for token in tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):  # pragma: no cover - ast.parse accepted the text
        strings = -1
    if strings != sum(isinstance(v, str) for v in values):
        raise PoolingError("two strings with no comma between them (NumPy prints an array so, and cuts a long one with "
                           "'...'); write the list with commas, as Python's list does", path=path, line=line, field=name)
    return values


def _warn(meta: dict[str, Any], line: int, warned: set[str], warnings: list[str]) -> None:
    for key in meta:
        if key in warned or not isinstance(key, str):
            continue
        canonical = key.strip().lower().replace("-", "_").replace(" ", "_")
        if canonical in _ANSWER_KEYS:
            hint = f"did you mean {canonical!r}? names are case-sensitive"
        elif canonical in _NEAR_MISSES:
            hint = _NEAR_MISSES[canonical]
        else:
            continue
        warned.add(key)
        warnings.append(f"column {shown(key)} (first at line {line}) is kept as metadata: {hint}")


def _aliased(record: dict[str, Any], field: str, path: Path, line: int) -> tuple[str, Any]:
    """The name a record gives ``field`` under and its value (None when absent); two names
    with different values are refused."""
    given = [(name, record[name]) for name in ANSWER_FIELDS[field] if record.get(name) is not None]
    if len(given) > 1 and given[0][1] != given[1][1]:
        raise PoolingError(f"differs from '{given[0][0]}' in the same record; give one of them",
                           path=path, line=line, field=given[1][0])
    return given[0] if given else (ANSWER_FIELDS[field][0], None)


def _text_list(value: Any, name: str, path: Path, line: int, *, ids: bool = False, blank: bool = True) -> list[str]:
    if not isinstance(value, list):
        raise PoolingError(f"must be a list of {'ids' if ids else 'texts'}, not {_json_kind(value)}",
                           path=path, line=line, field=name)
    seen: dict[str, int] = {}
    value = list(value)
    for i, text in enumerate(value):
        where = f"{name}[{i}]"
        if ids and isinstance(text, int) and not isinstance(text, bool):
            value[i] = text = str(text)  # a numeric doc_id, as the corpus readers take it
        if not isinstance(text, str):
            raise PoolingError(f"must be a string, not {_json_kind(text)}", path=path, line=line, field=where)
        if ids:
            if text == "":
                raise PoolingError("empty; give a doc_id of the corpus", path=path, line=line, field=where)
            check_id(text, path, line, where)
            first = seen.setdefault(text, i)
            if first != i:
                raise PoolingError(f"{shown(text)} is also {name}[{first}]; a ranking names each document once",
                                   path=path, line=line, field=where)
        else:
            check_text(text, path, line, where)
            if not blank and is_blank(text):
                raise PoolingError("empty; every claim needs non-blank text", path=path, line=line, field=where)
    return value


def _answer(record: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    answer: dict[str, Any] = {}
    fields: dict[str, str] = {}
    for field in ANSWER_FIELDS:
        fields[field], answer[field] = _aliased(record, field, path, line)
    for field in ("answer_id", "query_id", "system", "batch"):
        if answer[field] is not None:
            answer[field] = _identifier({field: answer[field]}, field, path, line)
    if answer["answer_id"] is not None and "#" in answer["answer_id"]:
        raise PoolingError(f"{shown(answer['answer_id'])} holds '#', which separates an answer_id from its claim's "
                           "number (ANSWER_ID#N); choose another id", path=path, line=line, field="answer_id")
    if answer["question"] is not None:
        answer["question"] = _named_text(answer["question"], fields["question"], path, line, required=True)
    elif answer["query_id"] is None:
        raise PoolingError("missing; every answer needs a question (or user_input), or the query_id of a project query",
                           path=path, line=line, field="question")
    if answer["response"] is None:
        raise PoolingError("missing; give the response text (\"\" for an abstention)", path=path, line=line, field="response")
    answer["response"] = _named_text(answer["response"], fields["response"], path, line, required=False)
    if answer["reference"] is not None:
        answer["reference"] = _named_text(answer["reference"], fields["reference"], path, line, required=False)
    for field, ids, blank in (("contexts", False, True), ("retrieved_ids", True, True), ("claims", False, False)):
        if answer[field] is not None:
            answer[field] = _text_list(answer[field], fields[field], path, line, ids=ids, blank=blank)
    given = record.get("meta")
    if isinstance(given, str) and given.lstrip().startswith("{"):  # a CSV cell holding a JSON object
        try:
            given = _json_value(given)
        except (json.JSONDecodeError, RecursionError):
            pass
    meta = dict(given) if isinstance(given, dict) else {} if given is None else {"meta": given}  # never dropped
    meta.update((k, v) for k, v in record.items() if k not in _ANSWER_KEYS)
    answer["meta"] = meta
    answer["fields"] = fields
    return answer


def _named_text(value: Any, name: str, path: Path, line: int, *, required: bool) -> str:
    return _text({name: value}, name, path, line, required=required)

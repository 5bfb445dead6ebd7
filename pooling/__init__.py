"""Pooling: from a corpus, queries and runs to a blind, ordered pool per query.

Also the one home of every input file format: ``lines`` (UTF-8 lines), ``readers`` (corpora,
queries), ``verdict_readers`` (verdict items, verdicts), ``answer_readers`` (a system's
answers), ``trec`` (SGML documents, topics, runs) and ``qrels`` (label files, which
``goldpool agree`` hands to ``calibration`` as vectors); ``files`` writes the files a user
names without following links or leaving half a file. Pure computation: no database, no UI,
no printing, no import of ``labeler``. Heavy imports (torch, sentence-transformers) happen
lazily inside the dense retriever.
"""

from __future__ import annotations

import reprlib
from pathlib import Path


class PoolingError(Exception):
    """Bad input or an impossible request, with a message that says how to fix it.

    Attributes:
        path: the input file, when the problem is in one.
        line: 1-based line (or row, for Parquet) of the problem in that file.
        field: the field at fault (``doc_id``, ``text``, ``score``...).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        super().__init__(located(message, path=path, line=line, field=field))


def located(message: str, *, path: str | Path | None, line: int | None, field: str | None) -> str:
    """``message`` prefixed with where the problem is: ``file, line 3, field 'text': ...``.

    >>> located("must not be empty", path="q.jsonl", line=3, field="text")
    "q.jsonl, line 3, field 'text': must not be empty"
    """
    where = ""
    if path is not None:
        where = str(path) if line is None else f"{path}, line {line}"
    if field is not None:
        where = f"{where}, field '{field}'" if where else f"field '{field}'"
    return f"{where}: {message}" if where else message


#: Characters of a value an error message quotes at most: an id or a text read from a file may
#: be megabytes long, and the message must stay one readable line.
QUOTE_LIMIT = 60

_QUOTE = reprlib.Repr()
_QUOTE.maxstring = _QUOTE.maxother = QUOTE_LIMIT
_QUOTE.maxlist = _QUOTE.maxdict = _QUOTE.maxtuple = 4
_QUOTE.maxlevel = 3


def shown(value: object) -> str:
    """``value`` as an error message quotes it: its ``repr``, cut in the middle when long.

    The start and the end stay, so an invisible character at either end is still seen; a cut
    string says how long it was.

    >>> shown("d17")
    "'d17'"
    >>> shown("x" * 1000)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxxxxxxxxxxxx' (1000 characters)"
    """
    text = _QUOTE.repr(value)
    if isinstance(value, str) and (len(value) > QUOTE_LIMIT or text != repr(value)):
        text += f" ({len(value)} characters)"
    return text


__all__ = ["QUOTE_LIMIT", "PoolingError", "located", "shown"]

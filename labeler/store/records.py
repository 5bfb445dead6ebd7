"""The records the store is handed: the shapes of documents, queries, run lines, ranked
documents and pool entries (:mod:`pooling.types` holds them; the store imports nothing outside
itself, so it names them here), and the pool as recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class _Text(Protocol):
    """What a document and a query both hold: the text, its fields, where it was read, its hash."""

    @property
    def text(self) -> str: ...
    @property
    def meta(self) -> Mapping[str, Any]: ...
    @property
    def line(self) -> int: ...
    @property
    def content_hash(self) -> str: ...


class Document(_Text, Protocol):
    """A chunk as the store takes it (what :class:`pooling.types.Document` holds)."""

    @property
    def doc_id(self) -> str: ...
    @property
    def title(self) -> str: ...


class Query(_Text, Protocol):
    """A query as the store takes it (what :class:`pooling.types.Query` holds)."""

    @property
    def query_id(self) -> str: ...


class _Pair(Protocol):
    """What every record of a query and a document names."""

    @property
    def query_id(self) -> str: ...
    @property
    def doc_id(self) -> str: ...


class RunRow(_Pair, Protocol):
    """One line of a run file (what :class:`pooling.types.RunRow` holds)."""

    @property
    def line(self) -> int: ...


class ScoredDoc(_Pair, Protocol):
    """One ranked document of a run (what :class:`pooling.types.ScoredDoc` holds)."""

    @property
    def rank(self) -> int: ...
    @property
    def score(self) -> float: ...


class PoolEntry(_Pair, Protocol):
    """One pool entry to write (what :class:`pooling.types.PoolEntry` holds)."""

    @property
    def sources(self) -> Mapping[str, int]: ...
    @property
    def priority(self) -> float: ...
    @property
    def position(self) -> int: ...


#: The pool as recorded: ``{query_id: {doc_id: (sources, position)}}``.
Recorded = dict[str, dict[str, tuple[dict[str, int], int]]]

"""Small immutable records shared by the readers, the retrievers and the pool."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True, slots=True)
class Document:
    """One chunk of the corpus. ``line`` is where it started in its file (1-based)."""

    doc_id: str
    text: str
    title: str = ""
    meta: Mapping[str, Any] = field(default_factory=lambda: _frozen(None))
    line: int = 0

    @property
    def content_hash(self) -> str:
        """sha256 of title and text: what decides whether a chunk changed."""
        return content_hash(self.title, self.text)


@dataclass(frozen=True, slots=True)
class Query:
    """One query (topic). ``line`` is where it started in its file (1-based)."""

    query_id: str
    text: str
    meta: Mapping[str, Any] = field(default_factory=lambda: _frozen(None))
    line: int = 0

    @property
    def content_hash(self) -> str:
        """sha256 of the query text."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class RunRow:
    """One line of a TREC run file, before ranking."""

    query_id: str
    doc_id: str
    score: float
    line: int


@dataclass(frozen=True, slots=True)
class ScoredDoc:
    """One retrieved document of one query: its 1-based rank and the source's score."""

    query_id: str
    doc_id: str
    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class PoolEntry:
    """One (query, document) of the pool.

    ``sources`` maps each source that retrieved the document to its 1-based rank there;
    ``priority`` is the reciprocal-rank fusion of those ranks; ``position`` is the 1-based
    labelling order within the query.
    """

    query_id: str
    doc_id: str
    sources: Mapping[str, int]
    priority: float
    position: int


def content_hash(title: str, text: str) -> str:
    """sha256 (hex) of a chunk's title and text, unambiguous about where one ends."""
    payload = json.dumps([title, text], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def search_text(title: str, text: str) -> str:
    """What retrievers match and embed: the title, a newline, then the text."""
    return f"{title}\n{text}" if title else text


def frozen_meta(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy of a metadata mapping, for the frozen records."""
    return _frozen(mapping)

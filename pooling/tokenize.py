"""The BM25 tokeniser.

A chunk or query becomes its lower-cased (Unicode case-folded) runs of word characters:
``re.findall(r"\\w+", text.casefold())``. Letters, digits and underscores of any script make up
a token; everything else separates tokens. No stemming, no stop words, duplicates kept (BM25
counts term frequency in the document and, like rank-bm25, each occurrence in the query).

>>> tokenize("Lists: list.append(x) adds ONE item — x")
['lists', 'list', 'append', 'x', 'adds', 'one', 'item', 'x']
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into BM25 terms (see the module docstring)."""
    return _WORD.findall(text.casefold())


class Interner:
    """Tokenises many texts while keeping one string object per distinct term.

    A million chunks of a hundred tokens are a hundred million references; sharing the
    strings keeps that to pointers instead of a fresh object per occurrence.
    """

    def __init__(self) -> None:
        self._terms: dict[str, str] = {}

    def __call__(self, text: str) -> list[str]:
        """Tokens of ``text``, each the shared instance of its term."""
        setdefault = self._terms.setdefault
        return [setdefault(t, t) for t in _WORD.findall(text.casefold())]

    def __len__(self) -> int:
        return len(self._terms)

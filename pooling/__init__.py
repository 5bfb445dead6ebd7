"""Pooling: from a corpus, queries and runs to a blind, ordered pool per query.

Pure computation: no database, no UI, no printing. Heavy imports (torch,
sentence-transformers) happen lazily inside the dense retriever.
"""

from __future__ import annotations


class PoolingError(Exception):
    """Bad input or an impossible request, with a message that says how to fix it."""


__all__ = ["PoolingError"]

"""Each pool source's ranking of a query to the candidate depth (adaptive pooling draws from it).
"""

from __future__ import annotations

SQL = """
        CREATE TABLE candidates (
            query_id TEXT NOT NULL REFERENCES queries(query_id),
            source TEXT NOT NULL,
            doc_id TEXT NOT NULL REFERENCES documents(doc_id),
            rank INTEGER NOT NULL,
            PRIMARY KEY (query_id, source, doc_id)
        ) WITHOUT ROWID;
        CREATE INDEX candidates_rank ON candidates(query_id, source, rank);
"""

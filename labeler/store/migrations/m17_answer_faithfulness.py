"""Whole-answer faithfulness: every answer with a response is also an item of the faithfulness
task, ``ANSWER_ID@faithfulness`` (SUPPORTED when every statement of the response is supported
by its contexts), keeping no copy of the answer's texts, as its other items. Answers stored
before this step get theirs (an id an imported item already holds is left to that item).
Replaying the step changes nothing.
"""

from __future__ import annotations

SQL = """
        INSERT OR IGNORE INTO verdict_items (item_id, kind, question, content_hash, added_at, answer_id)
            SELECT a.answer_id || '@faithfulness', 'faithfulness', '',
                   goldpool_sha256(a.content_hash || char(31) || 'faithfulness' || char(31)), a.added_at, a.answer_id
            FROM answers a WHERE a.response <> '';
"""

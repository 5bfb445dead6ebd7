"""A judge's reply is stored cut to a bounded length; raw_length keeps the length it had.
"""

from __future__ import annotations

SQL = """
        ALTER TABLE judge_verdicts ADD COLUMN raw_length INTEGER;
        ALTER TABLE judge_cache ADD COLUMN raw_length INTEGER;
"""

"""A note typed before pressing `s` (why the item was skipped) is kept with the skip.
"""

from __future__ import annotations

SQL = """
        ALTER TABLE skips ADD COLUMN note TEXT NOT NULL DEFAULT '';
"""

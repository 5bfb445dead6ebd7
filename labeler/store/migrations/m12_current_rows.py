"""The current row of each append-only table: its highest id per (item, person), with the
table's columns. The grouping keys are read from the grouped subquery, so a reader's condition
on them (one query, one item, one annotator) is applied inside it: such a reader reads only
the rows it names, and a reader of everything groups the table once. GROUP BY counts NULLs
as equal, as the key of a judge verdict needs (item_id or query_id, doc_id; shown_order).
Judge verdicts get the index of their whole key, so grouping one judge's rows needs no sort.
"""

from __future__ import annotations

from labeler.store.schema import (
    CURRENT_ADJUDICATIONS,
    CURRENT_HUMAN_VERDICTS,
    CURRENT_JUDGE_VERDICTS,
    CURRENT_JUDGMENTS,
)

SQL = f"""
        CREATE INDEX judge_verdicts_unit ON judge_verdicts(judge, task, item_id, query_id, doc_id, shown_order, id);
        {CURRENT_JUDGMENTS}
        {CURRENT_ADJUDICATIONS}
        {CURRENT_HUMAN_VERDICTS}
        {CURRENT_JUDGE_VERDICTS}
"""

"""Answer relevance takes a third verdict, DECLINES: the response declines to answer (people's
key "declines to answer" and a judge's reply), what the abstention rate counts beside the
text rule. The trigger on verdicts reads task_verdicts, so one row is all it takes.
"""

from __future__ import annotations

SQL = """
        INSERT OR IGNORE INTO task_verdicts (task, verdict) VALUES ('answer-relevance', 'DECLINES');
"""

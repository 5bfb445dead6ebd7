"""The relevance scale of a goldpool project: grades 0-3, their names and what each means.

The scale and :func:`check_grade` are defined in :mod:`labeler.store.vocabulary` (the store
validates grades with them) and re-exported here with what each grade means; the
labelling and adjudication pages show :data:`GRADES` and :data:`GRADE_HELP`, and the
calibration report receives ``tuple(GRADES)`` as its label domain (``calibration`` is a
library of statistics and knows no scale of its own).
"""

from __future__ import annotations

from labeler.store.vocabulary import GRADES, check_grade

__all__ = ["GRADES", "GRADE_HELP", "check_grade"]

#: What each grade means, shown under the buttons on the labelling page.
GRADE_HELP: dict[int, str] = {
    0: "nothing to do with the query",
    1: "on the query's topic, but does not answer it",
    2: "answers part of the query",
    3: "answers the query fully",
}

"""The relevance scale of a goldpool project: grades 0-3, their names and what each means.

The one definition of the scale: the store validates grades with :func:`check_grade`, the
labelling and adjudication pages show :data:`GRADES` and :data:`GRADE_HELP`, and the
calibration report receives ``tuple(GRADES)`` as its label domain (``calibration`` is a
library of statistics and knows no scale of its own).
"""

from __future__ import annotations

from labeler.store.schema import StoreError

#: The graded relevance scale: grade -> its name on buttons, in the rubric and on admin pages.
GRADES: dict[int, str] = {
    0: "Irrelevant",
    1: "On topic",
    2: "Partly answers",
    3: "Fully answers",
}

#: What each grade means, shown under the buttons on the labelling page.
GRADE_HELP: dict[int, str] = {
    0: "nothing to do with the query",
    1: "on the query's topic, but does not answer it",
    2: "answers part of the query",
    3: "answers the query fully",
}


def check_grade(relevance: object) -> int:
    """``relevance`` if it is a grade of the scale (an int, not a bool), else ``StoreError``.

    >>> check_grade(2)
    2
    """
    if isinstance(relevance, bool) or not isinstance(relevance, int) or relevance not in GRADES:
        raise StoreError(f"relevance {relevance!r}: give an integer grade {min(GRADES)}-{max(GRADES)}")
    return relevance

"""The words the store checks values against: the relevance grades.

The one definition of the scale: the store validates grades with :func:`check_grade`;
:mod:`labeler.grades` re-exports them with what each grade means on the labelling page.
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


def check_grade(relevance: object) -> int:
    """``relevance`` if it is a grade of the scale (an int, not a bool), else ``StoreError``.

    >>> check_grade(2)
    2
    """
    if isinstance(relevance, bool) or not isinstance(relevance, int) or relevance not in GRADES:
        raise StoreError(f"relevance {relevance!r}: give an integer grade {min(GRADES)}-{max(GRADES)}")
    return relevance

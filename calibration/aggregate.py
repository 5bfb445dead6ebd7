"""Several graded labels of one item turned into one grade: majority, median, Dawid-Skene.

An adjudicated grade always wins over every rule (the caller passes it in ``adjudicated``).

- **majority**: the most frequent grade. A tie between grades is a decision, not noise: tied
  items are listed, and ``allow_ties`` resolves them to the lower tied grade.
- **median**: the lower median of the grades (an ordinal statistic: no half grades).
- **dawid-skene**: each annotator's confusion matrix and the grade priors estimated by EM
  (Dawid & Skene 1979), through ``crowdkit.aggregation.DawidSkene``. The grade is the most
  probable one a posteriori; every item keeps its posterior. An annotator's weight is the
  chance-corrected accuracy their estimated confusion matrix implies,
  ``w = (Σ_k π_k e_kk − Σ_k π_k m_k) / (1 − Σ_k π_k m_k)`` with priors π, confusion
  ``e_kl = P(label l | true k)`` and the annotator's implied label shares ``m_l = Σ_k π_k e_kl``:
  Cohen's kappa between the estimated truth and that annotator, 1 for a perfect annotator and 0
  for one whose labels are independent of the truth.
"""

from __future__ import annotations

import statistics
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from calibration import CalibrationError

Rule = Literal["majority", "median", "dawid-skene"]
RULES: tuple[str, ...] = ("majority", "median", "dawid-skene")
Item = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Aggregation:
    """One grade per item, and what the rule had to decide.

    Attributes:
        rule: the rule used for items without an adjudication.
        grades: item -> aggregated grade.
        ties: items whose majority was tied (sorted); empty for the other rules.
        single: items with a single label (sorted).
        adjudicated: items whose grade is an adjudication (sorted).
        posteriors: dawid-skene only: item -> grade -> posterior probability.
        weights: dawid-skene only: annotator -> weight (see the module docstring).
        allow_ties: whether tied items were resolved to the lower grade.
    """

    rule: str
    grades: dict[Item, int]
    ties: tuple[Item, ...] = ()
    single: tuple[Item, ...] = ()
    adjudicated: tuple[Item, ...] = ()
    posteriors: dict[Item, dict[int, float]] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    allow_ties: bool = False


def majority_grade(grades: list[int]) -> tuple[int, bool]:
    """The most frequent grade and whether it was tied (then the lowest tied grade).

    >>> majority_grade([2, 2, 3])
    (2, False)
    >>> majority_grade([1, 3])
    (1, True)
    """
    counts = Counter(grades).most_common()
    top = counts[0][1]
    tied = sorted(g for g, c in counts if c == top)
    return tied[0], len(tied) > 1


def aggregate(
    labels: Mapping[Item, Mapping[str, int]],
    rule: str = "majority",
    *,
    adjudicated: Mapping[Item, int] | None = None,
    allow_ties: bool = False,
) -> Aggregation:
    """Aggregate each item's labels (annotator -> grade) under ``rule``.

    Raises:
        CalibrationError: an unknown rule, no labels, or majority ties without ``allow_ties``
            (the message counts them and names the first).
    """
    if rule not in RULES:
        raise CalibrationError(f"rule {rule!r}: choose one of {', '.join(RULES)}")
    adjudicated = dict(adjudicated or {})
    items = {k: dict(v) for k, v in labels.items() if v}
    if not items and not adjudicated:
        raise CalibrationError("no labels to aggregate")
    single = tuple(sorted(k for k, v in items.items() if len(v) == 1 and k not in adjudicated))
    open_items = {k: v for k, v in items.items() if k not in adjudicated}
    grades: dict[Item, int] = {}
    ties: list[Item] = []
    posteriors: dict[Item, dict[int, float]] = {}
    weights: dict[str, float] = {}
    if rule == "majority":
        for item, by_annotator in open_items.items():
            grades[item], tied = majority_grade(list(by_annotator.values()))
            if tied:
                ties.append(item)
        if ties and not allow_ties:
            first = sorted(ties)[0]
            raise CalibrationError(
                f"{len(ties)} item(s) have a tied majority, e.g. query {first[0]!r} doc {first[1]!r}: "
                "adjudicate them, or freeze with --allow-ties (ties take the lower grade)"
            )
    elif rule == "median":
        grades = {k: int(statistics.median_low(v.values())) for k, v in open_items.items()}
    elif open_items:
        grades, posteriors, weights = dawid_skene(open_items)
    grades.update(adjudicated)
    return Aggregation(
        rule, dict(sorted(grades.items())), tuple(sorted(ties)), single,
        tuple(sorted(adjudicated)), posteriors, weights, allow_ties,
    )


def dawid_skene(
    labels: Mapping[Item, Mapping[str, int]], *, n_iter: int = 100, tol: float = 1e-7
) -> tuple[dict[Item, int], dict[Item, dict[int, float]], dict[str, float]]:
    """Grades, posteriors and annotator weights by Dawid-Skene EM (crowd-kit's implementation).

    Returns:
        (item -> grade, item -> grade -> posterior, annotator -> weight).
    """
    import numpy as np
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    keys = sorted(labels)
    index = {k: i for i, k in enumerate(keys)}
    rows = [(index[k], a, int(g)) for k in keys for a, g in labels[k].items()]
    data = pd.DataFrame(rows, columns=["task", "worker", "label"])
    model = DawidSkene(n_iter=n_iter, tol=tol)
    with warnings.catch_warnings():
        # crowd-kit uses pandas keywords that pandas 3 deprecates; the results are unaffected.
        warnings.simplefilter("ignore")
        model.fit(data)
    probas = model.probas_.sort_index()
    probas = probas[sorted(probas.columns)]
    columns = [int(c) for c in probas.columns]
    values = probas.to_numpy()
    best = np.argmax(values, axis=1)
    grades = {keys[int(t)]: columns[b] for t, b in zip(probas.index, best, strict=True)}
    posteriors = {
        keys[int(t)]: {g: float(p) for g, p in zip(columns, row, strict=True)}
        for t, row in zip(probas.index, values, strict=True)
    }
    priors = model.priors_.reindex(probas.columns).fillna(0.0).to_numpy()
    weights = {}
    for worker in sorted(data["worker"].unique()):
        errors = model.errors_.loc[worker].reindex(index=probas.columns, columns=probas.columns).fillna(0.0)
        weights[str(worker)] = confusion_weight(priors, errors.to_numpy())
    return grades, posteriors, weights


def confusion_weight(priors, errors) -> float:
    """Chance-corrected accuracy implied by a confusion matrix ``errors[l, k] = P(label l | true k)``.

    A perfect annotator weighs 1; one whose label does not depend on the truth weighs 0:

    >>> import numpy as np
    >>> confusion_weight(np.array([0.5, 0.5]), np.eye(2))
    1.0
    >>> confusion_weight(np.array([0.5, 0.5]), np.array([[0.7, 0.7], [0.3, 0.3]]))
    0.0
    """
    import numpy as np

    priors = np.asarray(priors, dtype=float)
    errors = np.asarray(errors, dtype=float)
    observed = float(np.sum(priors * np.diag(errors)))
    shares = errors @ priors  # m_l = Σ_k P(l | k) π_k
    chance = float(np.sum(priors * shares))
    if chance >= 1.0:
        return 0.0
    return round((observed - chance) / (1.0 - chance), 12)

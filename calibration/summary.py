"""Agreement as data: two raters on the same items, and a labelling project's labels.

``agreement_summary`` compares two raters on the same items (a judge against a qrels file, or
two people); ``compare_labels`` adds a second reference (the human ceiling) and gives the dict
``goldpool agree --json`` prints; ``project_report`` summarises a labelling project:
inter-annotator agreement on the items labelled more than once, pooled and per pair of
annotators, each annotator against the others, label distributions on the caller's grade
scale, and what the current number of labelled queries can resolve. Intervals resample queries
(cluster bootstrap), because labels of one query are correlated. Every result is a frozen
dataclass with ``as_dict()``; ``calibration.report`` and ``calibration.report_html`` render
them as text, Markdown and HTML.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Protocol

import numpy as np

from calibration import CalibrationError
from calibration.agreement import ClassScore, Confusion, class_scores, cohen_kappa, confusion_matrix, gwet_ac, majority_baseline, raw_agreement
from calibration.alpha import Level, krippendorff_alpha
from calibration.bootstrap import FEW_GROUPS, MIN_GROUPS, N_BOOT, Estimate
from calibration.power import Plan, plan

#: Discordant share assumed when no pair of runs is at hand (two decent systems on one set).
ASSUMED_DISCORDANT = 0.2


@dataclass(frozen=True, slots=True)
class AgreementSummary:
    """Rater ``b`` against rater ``a`` on the same items: every statistic with its interval."""

    statistics: tuple[Estimate, ...]
    confusion: Confusion
    classes: tuple[ClassScore, ...]
    n: int
    n_groups: int | None
    n_boot: int
    ci: float
    seed: int | None

    def get(self, name: str) -> Estimate:
        """The statistic called ``name`` (e.g. ``kappa_quadratic``)."""
        for estimate in self.statistics:
            if estimate.statistic == name:
                return estimate
        raise KeyError(name)


class JudgmentLike(Protocol):
    """Anything with these four attributes (``labeler.store.labels.Judgment`` has them)."""

    query_id: str
    doc_id: str
    annotator: str
    relevance: int


@dataclass(frozen=True, slots=True)
class Label:
    """One annotator's current grade of one (query, document) pair."""

    query_id: str
    doc_id: str
    annotator: str
    relevance: int


@dataclass(frozen=True, slots=True)
class AnnotatorAgreement:
    """One annotator against every other annotator on the items they share."""

    annotator: str
    n_labels: int
    n_shared: int  # (item, other annotator) pairs compared
    kappa_quadratic: Estimate | None


@dataclass(frozen=True, slots=True)
class PairAgreement:
    """Two annotators on the items both labelled: raw agreement and quadratic kappa."""

    annotator_a: str
    annotator_b: str
    n: int
    agreement: Estimate
    kappa_quadratic: Estimate


@dataclass(frozen=True, slots=True)
class PowerSummary:
    """What a golden set of ``n`` queries resolves, and the MDD curve around it."""

    n: int
    accuracy: Plan  # one system, p = 0.5 (the widest interval)
    paired: Plan  # two systems on the same queries, discordant share ASSUMED_DISCORDANT
    curve: tuple[tuple[int, float], ...]  # (n, paired MDD)


@dataclass(frozen=True, slots=True)
class ProjectReport:
    """Everything ``goldpool calibrate`` shows about a project's labels."""

    n_judgments: int
    n_items: int
    n_queries: int
    annotators: tuple[str, ...]
    n_overlap_items: int
    overlap: AgreementSummary | None  # every annotator pair on shared items, pooled
    alpha_ordinal: Estimate | None  # all annotators on the shared items
    per_annotator: tuple[AnnotatorAgreement, ...]
    per_pair: tuple[PairAgreement, ...]
    distributions: dict[str, dict[int, int]]
    power: PowerSummary | None
    grades: tuple[int, ...]
    n_boot: int
    seed: int | None
    tasks: tuple[TaskVerdicts, ...] = ()  # people's verdicts on the tasks other than relevance

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (see :func:`to_dict`)."""
        return to_dict(self)


@dataclass(frozen=True, slots=True)
class TaskVerdicts:
    """People's current verdicts on one task other than relevance (faithfulness, claims...):
    how many, on how many items, and how often two annotators of one item agree.

    ``agreement`` and ``kappa`` (unweighted) pool every pair of annotators on each item two or
    more labelled; their n, like ``n_pairs``, counts those pairs (an item three people labelled
    gives three). Intervals resample the items' questions."""

    task: str
    n_verdicts: int
    n_items: int
    annotators: tuple[str, ...]
    n_overlap_items: int
    n_pairs: int
    agreement: Estimate | None
    kappa: Estimate | None

    def as_dict(self) -> dict[str, Any]:
        return {"task": self.task, "n_verdicts": self.n_verdicts, "n_items": self.n_items,
                "annotators": list(self.annotators), "n_overlap_items": self.n_overlap_items, "n_pairs": self.n_pairs,
                "agreement": None if self.agreement is None else self.agreement.as_dict(),
                "kappa": None if self.kappa is None else self.kappa.as_dict()}


def task_verdicts(rows: Iterable[tuple[str, str, str, str, str]], *, n_boot: int = N_BOOT,
                  seed: int | None = 0) -> tuple[TaskVerdicts, ...]:
    """:class:`TaskVerdicts` per task of ``rows``: ``(task, item_id, group, annotator, verdict)``,
    one per current verdict, ``group`` the unit the intervals resample (an item's question)."""
    by_task: dict[str, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    group_of: dict[tuple[str, str], str] = {}
    for task, item_id, group, annotator, verdict in rows:
        by_task[task][item_id][annotator] = verdict
        group_of[(task, item_id)] = group
    out = []
    for task in sorted(by_task):
        items = by_task[task]
        a, b, g = [], [], []
        for item_id, given in sorted(items.items()):
            for x, y in combinations(sorted(given), 2):
                a.append(given[x])
                b.append(given[y])
                g.append(group_of[(task, item_id)])
        agreement = kappa = None
        if a:
            kw = {"labels": sorted({*a, *b}), "groups": g, "n_boot": n_boot, "seed": seed}
            agreement, kappa = raw_agreement(a, b, **kw), cohen_kappa(a, b, **kw)
        out.append(TaskVerdicts(task, sum(len(v) for v in items.values()), len(items),
                                tuple(sorted({n for v in items.values() for n in v})),
                                sum(len(v) >= 2 for v in items.values()), len(a), agreement, kappa))
    return tuple(out)


def agreement_summary(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    groups: Sequence[Hashable] | None = None,
    labels: Sequence[Hashable] | None = None,
    weights: Sequence[str | None] = (None, "linear", "quadratic"),
    levels: Sequence[Level] = ("ordinal",),
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> AgreementSummary:
    """Raw agreement, kappas, Gwet's AC, alpha, majority baseline and per-class scores of b vs a."""
    common = {"labels": labels, "groups": groups, "ci": ci, "n_boot": n_boot, "seed": seed}
    stats: list[Estimate] = [raw_agreement(a, b, **common), majority_baseline(a, **common)]
    stats += [cohen_kappa(a, b, w, **common) for w in weights]  # type: ignore[arg-type]
    stats.append(gwet_ac(a, b, **common))
    if "quadratic" in weights:
        stats.append(gwet_ac(a, b, "quadratic", **common))
    if levels:
        try:
            data = np.vstack([np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)])
        except ValueError as exc:
            raise CalibrationError("Krippendorff's alpha needs numeric labels; pass levels=() for text labels") from exc
        domain = None if labels is None else np.asarray(labels, dtype=np.float64)
        for level in levels:
            stats.append(krippendorff_alpha(data, level, value_domain=domain, groups=groups, ci=ci, n_boot=n_boot, seed=seed))
    confusion = confusion_matrix(a, b, labels=labels)
    classes = tuple(class_scores(a, b, **common))
    n_groups = None if groups is None else len(set(groups))
    return AgreementSummary(tuple(stats), confusion, classes, len(a), n_groups, n_boot, ci, seed)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Labels ``b`` (e.g. a judge) against a reference ``a`` (humans), and optionally a second
    reference against ``a`` on the same items: the human ceiling ``b`` is read against."""

    summary: AgreementSummary
    ceiling: AgreementSummary | None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: n_groups, n_boot, seed, each statistic as value/low/high/n,
        ``ceiling`` (its statistics) when there is one, ``per_class`` and ``confusion``."""
        s = self.summary
        out: dict[str, Any] = {"n_groups": s.n_groups, "n_boot": s.n_boot, "seed": s.seed}
        out.update(_statistics_dict(s))
        if self.ceiling is not None:
            out["ceiling"] = _statistics_dict(self.ceiling)
        out["per_class"] = [
            {"label": c.label, "support": c.support, "precision": c.precision.as_dict(), "recall": c.recall.as_dict()}
            for c in s.classes
        ]
        out["confusion"] = {"labels": list(s.confusion.labels), "table": s.confusion.table.tolist()}
        return out


def _statistics_dict(summary: AgreementSummary) -> dict[str, Any]:
    return {e.statistic: e.as_dict() for e in summary.statistics}


@dataclass(frozen=True, slots=True)
class RaterComparison:
    """One pair of raters ``goldpool agree`` compared: who, how their items joined, the result.

    ``counts`` holds ``n`` (items joined), ``only_a`` and ``only_b``; ``resampled`` is the
    bootstrap's unit (``queries`` or ``items``); ``warnings`` are about the labels' scale.
    """

    a: str
    b: str
    counts: dict[str, int]
    resampled: str
    comparison: Comparison
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """``a``, ``b``, ``n``, ``only_a``, ``only_b``, ``resampled``, ``interval_warning`` and
        the comparison's keys (:meth:`Comparison.as_dict`)."""
        s = self.comparison.summary
        return {"a": self.a, "b": self.b, **self.counts, "resampled": self.resampled,
                "interval_warning": few_queries_warning(s.n_boot, s.n_groups), **self.comparison.as_dict()}


@dataclass(frozen=True, slots=True)
class RaterComparisons:
    """Every pair of raters ``goldpool agree`` compared, in order (at least one)."""

    pairs: tuple[RaterComparison, ...]

    def as_dict(self) -> dict[str, Any]:
        """``{"pairs": [pair, ...]}`` with the first pair's keys also at the top level.

        The shape is the same for one pair and for many: a reader of one pair reads the top
        level, a reader of several reads ``pairs``.
        """
        pairs = [p.as_dict() for p in self.pairs]
        return {**pairs[0], "pairs": pairs}


def compare_labels(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    ceiling: Sequence[Hashable] | None = None,
    *,
    groups: Sequence[Hashable] | None = None,
    scale: Sequence[Hashable] = (),
    **options: Any,
) -> Comparison:
    """B (e.g. a judge) against A (humans), and a second human C against A on the same items.

    The three vectors are aligned: position i of each is the same item. The label set is every
    label of ``scale`` (the declared grades, used or not) and every label any of them uses; ``groups`` (the query of each item) makes the intervals resample
    queries; ``options`` go to :func:`agreement_summary`.

    >>> c = compare_labels([0, 1, 2, 2], [0, 1, 2, 1], n_boot=0)
    >>> c.summary.get("agreement").value, c.ceiling is None
    (0.75, True)
    """
    others = [b] + ([ceiling] if ceiling is not None else [])
    labels = sorted({*scale, *(x for v in (a, *others) for x in v)})
    summaries = [agreement_summary(a, other, groups=groups, labels=labels, **options) for other in others]
    return Comparison(summaries[0], summaries[1] if ceiling is not None else None)


def _pairs_on_shared_items(judgments: Sequence[JudgmentLike]) -> tuple[list[int], list[int], list[str], list[tuple[str, str]]]:
    by_item: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for j in judgments:
        by_item[(j.query_id, j.doc_id)][j.annotator] = j.relevance
    a, b, groups, names = [], [], [], []
    for (query_id, _), grades in sorted(by_item.items()):
        for x, y in combinations(sorted(grades), 2):
            a.append(grades[x])
            b.append(grades[y])
            groups.append(query_id)
            names.append((x, y))
    return a, b, groups, names


def _per_annotator(
    judgments: Sequence[JudgmentLike], grades: Sequence[int], n_boot: int, seed: int | None
) -> tuple[AnnotatorAgreement, ...]:
    a, b, groups, names = _pairs_on_shared_items(judgments)
    counts = Counter(j.annotator for j in judgments)
    rows = []
    for annotator in sorted(counts):
        own, other, g = [], [], []
        for x, y, q, (p, r) in zip(a, b, groups, names, strict=True):
            if annotator in (p, r):
                own.append(x if p == annotator else y)
                other.append(y if p == annotator else x)
                g.append(q)
        kappa = cohen_kappa(own, other, "quadratic", labels=grades, groups=g, n_boot=n_boot, seed=seed) if own else None
        rows.append(AnnotatorAgreement(annotator, counts[annotator], len(own), kappa))
    return tuple(rows)


def _per_pair(
    a: Sequence[int], b: Sequence[int], groups: Sequence[str], names: Sequence[tuple[str, str]],
    grades: Sequence[int], n_boot: int, seed: int | None,
) -> tuple[PairAgreement, ...]:
    by_pair: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, pair in enumerate(names):
        by_pair[pair].append(i)
    rows = []
    for (x, y), rows_of_pair in sorted(by_pair.items()):
        pa, pb, g = ([v[i] for i in rows_of_pair] for v in (a, b, groups))
        common = {"labels": grades, "groups": g, "n_boot": n_boot, "seed": seed}
        rows.append(PairAgreement(x, y, len(pa), raw_agreement(pa, pb, **common), cohen_kappa(pa, pb, "quadratic", **common)))
    return tuple(rows)


def power_summary(n_queries: int, *, discordant: float = ASSUMED_DISCORDANT) -> PowerSummary:
    """Half-widths and paired MDD at ``n_queries``, and the MDD curve from 10 to 4× that."""
    top = max(1000, 4 * n_queries)
    grid = sorted({int(x) for x in np.geomspace(10, top, 30)} | {n_queries})
    curve = tuple((n, plan(n, "paired", discordant=discordant).mdd) for n in grid if n > 0)
    return PowerSummary(n_queries, plan(n_queries, "accuracy", p=0.5), plan(n_queries, "paired", discordant=discordant), curve)


def project_report(
    judgments: Iterable[JudgmentLike], *, grades: Sequence[int], n_boot: int = N_BOOT, seed: int | None = 0,
    verdicts: Iterable[tuple[str, str, str, str, str]] = (),
) -> ProjectReport:
    """Inter-annotator agreement, per-annotator and per-pair agreement, distributions and power.

    Agreement is computed on the items labelled by at least two annotators: quadratic kappa
    over every annotator pair on those items (pooled, and per pair), and ordinal alpha over all
    annotators at once. ``grades`` is the label scale (every grade, used or not, e.g.
    ``(0, 1, 2, 3)``). Intervals resample queries (cluster bootstrap). ``verdicts`` are
    people's current verdicts on the other tasks (see :func:`task_verdicts`), counted apart.
    """
    grades = tuple(grades)
    rows = list(judgments)
    items = {(j.query_id, j.doc_id) for j in rows}
    annotators = tuple(sorted({j.annotator for j in rows}))
    a, b, groups, names = _pairs_on_shared_items(rows)
    by_item: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for j in rows:
        by_item[(j.query_id, j.doc_id)][j.annotator] = j.relevance
    shared = sorted(k for k, v in by_item.items() if len(v) >= 2)
    overlap = alpha = None
    if a:
        overlap = agreement_summary(a, b, groups=groups, labels=grades, weights=("quadratic",), levels=(), n_boot=n_boot, seed=seed)
        data = np.array([[by_item[k].get(r, np.nan) for k in shared] for r in annotators], dtype=np.float64)
        if len(np.unique(data[~np.isnan(data)])) >= 2:
            alpha = krippendorff_alpha(data, "ordinal", value_domain=grades, groups=[q for q, _ in shared], n_boot=n_boot, seed=seed)
    distributions = {name: {g: 0 for g in grades} for name in annotators}
    for j in rows:
        distributions[j.annotator][j.relevance] += 1
    n_queries = len({q for q, _ in items})
    return ProjectReport(
        len(rows), len(items), n_queries, annotators, len(shared), overlap, alpha,
        _per_annotator(rows, grades, n_boot, seed), _per_pair(a, b, groups, names, grades, n_boot, seed), distributions,
        power_summary(n_queries) if n_queries else None, grades, n_boot, seed,
        task_verdicts(verdicts, n_boot=n_boot, seed=seed),
    )


def few_queries_warning(n_boot: int, n_groups: int | None) -> str | None:
    """A warning when a cluster bootstrap resampled fewer than ``FEW_GROUPS`` queries, else None.

    >>> few_queries_warning(2000, 3)
    'Warning: only 3 queries; intervals from fewer than 10 queries are too narrow to trust (read them as rough).'
    """
    if n_boot == 0 or n_groups is None or not MIN_GROUPS <= n_groups < FEW_GROUPS:
        return None
    return (
        f"Warning: only {n_groups} {'query' if n_groups == 1 else 'queries'}; intervals from fewer than "
        f"{FEW_GROUPS} queries "
        "are too narrow to trust (read them as rough)."
    )




#: The keys of ``agreement`` in :func:`to_dict`, present (``null`` when undefined) whatever
#: the number of annotators.
PROJECT_AGREEMENT_KEYS = ("agreement", "majority_baseline", "kappa_quadratic", "gwet_ac1", "gwet_ac2_quadratic", "alpha_ordinal")


def to_dict(report: ProjectReport) -> dict[str, Any]:
    """The project report as plain JSON-ready data: each statistic as value, low, high, n.

    The keys are the same whatever the number of annotators and judgments: a statistic that
    cannot be computed (one annotator, no item labelled twice) is ``null``, and so are the
    numbers of ``power`` without a labelled query.
    """
    out: dict[str, Any] = {
        "n_judgments": report.n_judgments,
        "n_items": report.n_items,
        "n_queries": report.n_queries,
        "annotators": list(report.annotators),
        "n_overlap_items": report.n_overlap_items,
        "interval": {"ci": 0.95, "n_boot": report.n_boot, "seed": report.seed, "resampled": "queries"},
        "agreement": dict.fromkeys(PROJECT_AGREEMENT_KEYS),
        "per_annotator": [
            {"annotator": r.annotator, "n_labels": r.n_labels, "n_shared": r.n_shared,
             "kappa_quadratic": r.kappa_quadratic.as_dict() if r.kappa_quadratic else None}
            for r in report.per_annotator
        ],
        "per_pair": [
            {"annotators": [r.annotator_a, r.annotator_b], "n": r.n, "agreement": r.agreement.as_dict(),
             "kappa_quadratic": r.kappa_quadratic.as_dict()}
            for r in report.per_pair
        ],
        "distributions": {name: {str(g): c for g, c in counts.items()} for name, counts in report.distributions.items()},
        "power": {"n": report.n_queries, "half_width": None, "mdd": None, "discordant_assumed": ASSUMED_DISCORDANT,
                  "power": None, "alpha": None},
        "tasks": {t.task: t.as_dict() for t in report.tasks},
    }
    if report.overlap is not None:
        out["agreement"].update({e.statistic: e.as_dict() for e in report.overlap.statistics
                                 if not e.statistic.startswith(("precision", "recall"))})
    if report.alpha_ordinal is not None:
        out["agreement"]["alpha_ordinal"] = report.alpha_ordinal.as_dict()
    if report.power is not None:
        p = report.power
        out["power"] = {"n": p.n, "half_width": p.accuracy.half_width, "mdd": p.paired.mdd,
                        "discordant_assumed": ASSUMED_DISCORDANT, "power": p.paired.power, "alpha": p.paired.alpha}
    return out

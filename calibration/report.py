"""The calibration report as data, and as Markdown or a plain dict (for JSON).

``agreement_summary`` compares two raters on the same items (a judge against a qrels file, or
two people); ``compare_labels`` adds a second reference (the human ceiling) and gives the dict
``goldpool agree --json`` prints; ``project_report`` summarises a labelling project:
inter-annotator agreement on the items labelled more than once, pooled and per pair of
annotators, each annotator against the others, label distributions on the caller's grade
scale, and what the current number of labelled queries can resolve. ``plan_text`` and
``power_sentence`` say in words what a ``calibration.power`` plan resolves. Intervals resample queries
(cluster bootstrap), because labels of one query are correlated. ``calibration.report_html``
renders the same data as one self-contained HTML file.
"""

from __future__ import annotations

import unicodedata
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
from calibration.formatting import fixed, markdown_escape
from calibration.power import Plan, PlanSummary, plan, required_n

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


def format_estimate(e: Estimate, digits: int = 3, undefined: str = "n/a", *, why: bool = True) -> str:
    """``0.512 [0.480, 0.540]``; no brackets without an interval. An undefined value reads
    ``undefined (why)`` when the estimate says why (``undefined`` alone with ``why=False``),
    else ``undefined``.

    >>> format_estimate(Estimate("kappa", 0.5123, 0.48, 0.54, 40))
    '0.512 [0.480, 0.540]'
    >>> nan = float("nan")
    >>> format_estimate(Estimate("kappa", nan, nan, nan, 1, why="computed on 1 item"))
    'undefined (computed on 1 item)'
    """
    if np.isnan(e.value):
        if e.why:
            return f"undefined ({e.why})" if why else "undefined"
        return undefined
    if np.isnan(e.low):
        return fixed(e.value, digits)
    return f"{fixed(e.value, digits)} [{fixed(e.low, digits)}, {fixed(e.high, digits)}]"


def interval_note(n_boot: int, n_groups: int | None, ci: float, seed: int | None) -> str:
    """One sentence saying how the intervals were made."""
    if n_boot == 0:
        return "No intervals (n_boot=0)."
    if n_groups is not None and n_groups < MIN_GROUPS:
        return (
            f"No intervals: the labels come from {_count(n_groups, 'query', 'queries')}, and resampling "
            "queries needs at least two (labels within a query are not independent)."
        )
    unit = f"cluster bootstrap over {_count(n_groups, 'query', 'queries')}" if n_groups is not None else "bootstrap over items"
    note = f"Intervals: {ci:.0%} percentile, {unit}, {n_boot} resamples, seed {seed}."
    warning = few_queries_warning(n_boot, n_groups)
    return f"{note} {warning}" if warning else note


def few_queries_warning(n_boot: int, n_groups: int | None) -> str | None:
    """A warning when a cluster bootstrap resampled fewer than ``FEW_GROUPS`` queries, else None.

    >>> few_queries_warning(2000, 3)
    'Warning: only 3 queries; intervals from fewer than 10 queries are too narrow to trust (read them as rough).'
    """
    if n_boot == 0 or n_groups is None or not MIN_GROUPS <= n_groups < FEW_GROUPS:
        return None
    return (
        f"Warning: only {_count(n_groups, 'query', 'queries')}; intervals from fewer than {FEW_GROUPS} queries "
        "are too narrow to trust (read them as rough)."
    )


def undefined_notes(estimates: Iterable[Estimate]) -> list[str]:
    """One line per reason some statistics are undefined: ``kappa, kappa_linear: undefined: why``.

    >>> nan = float("nan")
    >>> undefined_notes([Estimate("kappa", nan, nan, nan, 1, why="one item"), Estimate("agreement", 1.0, nan, nan, 1)])
    ['kappa: undefined: one item']
    """
    by_reason: dict[str, list[str]] = {}
    for e in estimates:
        if np.isnan(e.value) and e.why:
            by_reason.setdefault(e.why, []).append(e.statistic)
    return [f"{', '.join(names)}: undefined: {why}" for why, names in by_reason.items()]


def _count(n: int, one: str, many: str | None = None) -> str:
    """``n`` with the noun in the right number: 1 query, 2 queries."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _points(x: float) -> str:
    """A proportion in points: 0.0886 -> ``8.9``."""
    return fixed(100 * x, 1)


def _change(x: float) -> str:
    """A target difference as written by a person: 0.03 -> ``3``, 0.025 -> ``2.5``."""
    return f"{round(100 * x, 1):g}"


#: The difference (a proportion) quoted when a set is too small to resolve any: 10 points.
QUOTED_DELTA = 0.10


def power_sentence(p: PowerSummary) -> str:
    """What ``p.n`` labelled queries can resolve, in one sentence; in words when the minimum
    detectable difference is beyond the 100-point scale."""
    if p.paired.mdd > 1.0:
        needed = required_n(QUOTED_DELTA, "paired", discordant=ASSUMED_DISCORDANT, alpha=p.paired.alpha, power=p.paired.power)
        return (
            f"With {_count(p.n, 'labelled query', 'labelled queries')}, this set cannot resolve any difference yet: "
            f"two systems would have to differ by more than the whole 100-point scale to be detected. It needs "
            f"~{needed} queries to detect a {_change(QUOTED_DELTA)}-point difference between two systems "
            f"(paired, discordant share {ASSUMED_DISCORDANT} assumed, {p.paired.power:.0%} power, α={p.paired.alpha:g})."
        )
    return (
        f"With {_count(p.n, 'labelled query', 'labelled queries')}, one system's accuracy near 50% is known to "
        f"±{_points(p.accuracy.half_width)} points, and two systems compared on the same queries "
        f"(discordant share {ASSUMED_DISCORDANT}, assumed) must differ by at least "
        f"{_points(p.paired.mdd)} points to be detected ({p.paired.power:.0%} power, α={p.paired.alpha:g})."
    )


_WIDTH_LINES = {
    "accuracy": "half-width, one accuracy (p={s.p:g})",
    "unpaired": "half-width, unpaired difference (p={s.p:g})",
    "paired": "half-width, paired difference (d={s.discordant:g})",
    "per_query": "half-width, per-query differences (sd={s.sd:g})",
}


def plan_text(s: PlanSummary) -> list[str]:
    """A power plan as ``goldpool plan`` prints it: one sentence, then one line per number."""
    lines = [_plan_sentence(s)]
    lines += [f"{_WIDTH_LINES[d].format(s=s)}: ±{_points(w)} points" for d, w in s.half_width]
    if s.mdd is not None:
        mdd = "beyond the 100-point scale" if s.mdd > 1.0 else f"{_points(s.mdd)} points"
        lines.append(f"minimum detectable difference ({s.design.replace('_', '-')}): {mdd}")
    if s.delta is not None:
        lines.append(f"questions needed for {_change(s.delta)} points: {s.n_required}")
    if s.inflation != 1.0:
        lines.append(f"judge inflation 1/(Se+Sp-1): ×{s.inflation:.2f}")
    return lines


def _plan_note(s: PlanSummary) -> str:
    given = {"unpaired": f"p={s.p}", "paired": f"d={s.discordant}", "per_query": f"sd={s.sd}"}[s.design]
    name = {"unpaired": "unpaired", "paired": "paired", "per_query": "paired per-query"}[s.design]
    judge = "" if s.sensitivity is None else f", judge Se={s.sensitivity:g} Sp={s.specificity:g}"
    return f"{name}, {given}, {s.power:.0%} power, α={s.alpha:g}{judge}"


def _plan_sentence(s: PlanSummary) -> str:
    who = "this judge and " if s.sensitivity is not None else ""
    note = _plan_note(s)
    if s.n is None or s.mdd is None:
        return f"Detecting a {_change(s.delta or 0.0)}-point change needs {s.n_required} questions ({note})."
    if s.mdd > 1.0:
        delta = s.delta if s.delta is not None else QUOTED_DELTA
        needed = s.n_required if s.delta is not None else required_n(
            delta, s.design, p=s.p, discordant=s.discordant, sd=s.sd, alpha=s.alpha, power=s.power,  # type: ignore[arg-type]
            sensitivity=s.sensitivity, specificity=s.specificity,
        )
        return (
            f"With {who}{_count(s.n, 'question')} this set cannot resolve any difference yet: the minimum detectable "
            f"difference is beyond the 100-point scale ({note}); it needs ~{needed} questions to detect a "
            f"{_change(delta)}-point difference."
        )
    widths = dict(s.half_width)
    if s.delta is not None:
        verdict = "can" if s.mdd <= s.delta else "cannot"
        return (
            f"With {who}{s.n} questions you {verdict} resolve a {_change(s.delta)}-point change: the minimum "
            f"detectable difference is {_points(s.mdd)} points ({note}); {s.n_required} questions would detect it."
        )
    if s.design == "unpaired":
        return (
            f"With {who}{s.n} questions an accuracy near {s.p:.0%} is known to ±{_points(widths['accuracy'])} points, "
            f"and two systems on different questions to ±{_points(widths['unpaired'])} points; the minimum detectable "
            f"difference is {_points(s.mdd)} points ({note})."
        )
    ratio = ""
    if "unpaired" in widths:
        ratio = f", {widths['unpaired'] / widths[s.design]:.2f} times narrower than unpaired (±{_points(widths['unpaired'])})"
    return (
        f"With {who}{s.n} questions a paired comparison is known to ±{_points(widths[s.design])} points{ratio}; "
        f"the minimum detectable difference is {_points(s.mdd)} points ({note})."
    )


def plain(text: str) -> str:
    """``text`` for a terminal: control characters (an escape sequence's ESC among them) shown
    as U+FFFD, nothing else changed (a terminal draws no Markdown, so nothing is escaped).

    >>> plain("ann_1 *x* \\x1b[31m") == "ann_1 *x* \\ufffd[31m"
    True
    """
    return "".join("\ufffd" if unicodedata.category(c) == "Cc" else c for c in text)


def heading_lines(level: int, text: str, *, markdown: bool) -> list[str]:
    """A heading: ``# text`` in Markdown; in plain text, ``text`` underlined (= then -)."""
    if markdown:
        return ["#" * level + " " + text]
    return [text, ("=" if level == 1 else "-") * len(text)]


def table_lines(header: Sequence[str], rows: Iterable[Sequence[object]], *, markdown: bool) -> list[str]:
    """A table: Markdown pipes, or plain text in columns padded to their widest cell.

    Cells are given ready (escaped for Markdown, :func:`plain` for text) by the caller.

    >>> print("\\n".join(table_lines(["who", "n"], [("ann_1", 5), ("b", 12)], markdown=False)))
    who    n
    -----  --
    ann_1  5
    b      12
    """
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    if markdown:
        out = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * len(header)]
        return out + ["| " + " | ".join(row) + " |" for row in cells[1:]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    line = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()  # noqa: E731
    return [line(cells[0]), "  ".join("-" * w for w in widths), *map(line, cells[1:])]


def to_markdown(report: ProjectReport) -> str:
    """The project report as Markdown (for the app); annotator names, which people type, are
    escaped."""
    return "\n".join(_report_lines(report, markdown=True)) + "\n"


def to_text(report: ProjectReport) -> str:
    """The project report as plain text for a terminal: the same content as
    :func:`to_markdown`, with underlined headings, aligned columns and nothing escaped."""
    return "\n".join(_report_lines(report, markdown=False)) + "\n"


def _report_lines(report: ProjectReport, *, markdown: bool) -> list[str]:
    name = markdown_escape if markdown else plain
    lines = [
        *heading_lines(1, "Calibration report", markdown=markdown),
        "",
        f"{_count(report.n_judgments, 'relevance judgment')} on {_count(report.n_items, 'pool entry', 'pool entries')} of "
        f"{_count(report.n_queries, 'query', 'queries')} by {_count(len(report.annotators), 'annotator')}; "
        f"{_count(report.n_overlap_items, 'item')} labelled by two or more annotators.",
    ]
    if report.tasks:
        lines.append(tasks_sentence(report.tasks))
    lines += ["", *heading_lines(2, "Inter-annotator agreement (items labelled more than once)", markdown=markdown), ""]
    if report.overlap is None:
        lines.append("No item has been labelled by two annotators yet: assign some overlap to measure agreement.")
    else:
        lines.append(interval_note(report.n_boot, report.overlap.n_groups, report.overlap.ci, report.seed))
        lines.append("Kappa and agreement pool every pair of annotators on each shared item; alpha uses all annotators at once.")
        lines.append(PAIRS_NOTE)
        lines.append("")
        shown = [report.overlap.get("kappa_quadratic")] + ([report.alpha_ordinal] if report.alpha_ordinal else [])
        shown += [report.overlap.get("agreement"), report.overlap.get("majority_baseline")]
        lines += table_lines(["statistic", "value [95% interval]", "n"],
                             [(e.statistic, format_estimate(e), e.n) for e in shown], markdown=markdown)
    lines += ["", *heading_lines(2, "Each annotator against the others", markdown=markdown), ""]
    lines += table_lines(
        ["annotator", "labels", "pairs compared", "quadratic kappa [95% interval]"],
        [
            (name(r.annotator), r.n_labels, r.n_shared, format_estimate(r.kappa_quadratic) if r.kappa_quadratic else "n/a")
            for r in report.per_annotator
        ],
        markdown=markdown,
    )
    lines += ["", *heading_lines(2, "Label distributions", markdown=markdown), ""]
    lines += table_lines(
        ["annotator", *map(str, report.grades), "total"],
        [(name(who), *counts.values(), sum(counts.values())) for who, counts in report.distributions.items()],
        markdown=markdown,
    )
    lines += ["", *heading_lines(2, "What this golden set can resolve", markdown=markdown), ""]
    lines.append(power_sentence(report.power) if report.power else "No labelled queries yet.")
    if report.tasks:
        lines += ["", *heading_lines(2, "Verdicts on the other tasks", markdown=markdown), "", TASKS_NOTE, ""]
        lines += table_lines(TASK_HEADER, task_rows(report.tasks), markdown=markdown)
    return lines


#: What the n of a pooled agreement counts, and so what its confusion matrix sums to.
PAIRS_NOTE = ("n counts annotator pairs on shared items (an item three annotators labelled gives three pairs); "
              "the confusion matrix of the HTML report counts the same pairs, so its cells sum to n.")
#: Under the table of the other tasks' verdicts.
TASKS_NOTE = ("People's current verdicts per task (faithfulness items include answers' whole-answer items, "
              "ANSWER_ID@faithfulness). Agreement and unweighted kappa pool every pair of annotators on each item two "
              "or more labelled; n counts those pairs. A judge against people on these tasks: calibrate --judge NAME; "
              "the generation metrics they give: answer-metrics.")
TASK_HEADER = ("task", "verdicts", "items", "annotators", "items labelled twice or more", "pairs",
               "agreement [95% interval]", "kappa [95% interval]")


def task_rows(tasks: Sequence[TaskVerdicts]) -> list[tuple[object, ...]]:
    """One row per task of :data:`TASK_HEADER`."""
    return [(t.task, t.n_verdicts, t.n_items, len(t.annotators), t.n_overlap_items, t.n_pairs,
             "n/a" if t.agreement is None else format_estimate(t.agreement),
             "n/a" if t.kappa is None else format_estimate(t.kappa)) for t in tasks]


def tasks_sentence(tasks: Sequence[TaskVerdicts]) -> str:
    """``Beside them: 2038 claims verdicts on 2038 items (see Verdicts on the other tasks).``"""
    return ("Beside them: " + ", ".join(f"{_count(t.n_verdicts, f'{t.task} verdict')} on {_count(t.n_items, 'item')}"
                                         for t in tasks)
            + " (see \"Verdicts on the other tasks\" below).")


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

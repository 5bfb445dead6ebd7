"""A judge against people on one task: agreement, the human ceiling, biases, cost and power.

Inputs are plain mappings, so anything that holds verdicts can call this: ``humans`` maps an
item key to ``{annotator: label}``, ``judge`` maps an item key to the judge's label (``None``
when its reply could not be parsed or the call failed). Labels are relevance grades 0-3, or
``SUPPORTED``/``UNSUPPORTED`` (faithfulness, claims), ``CORRECT``/``INCORRECT``,
``ADDRESSES``/``MISSES``/``DECLINES``, ``SUPPORT``/``PARTIAL_SUPPORT``/``NOT_SUPPORT`` (a nugget's
support by an answer), or ``A``/``B``/``TIE`` (naming the response).

Every (item, annotator) pair is one comparison of the judge with a person; the human ceiling
compares every two people on the items the judge also labelled, so both stand on the same
items. Intervals resample ``groups`` (the query of each item): a cluster bootstrap. A pairwise
verdict that flips with the presentation order counts as a tie (Zheng et al. 2023, sec. 3.3).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from calibration import CalibrationError
from calibration.agreement import (
    ClassScore,
    Confusion,
    class_scores,
    cohen_kappa,
    confusion_matrix,
    majority_baseline,
    raw_agreement,
)
from calibration.bias import (
    PositionBias,
    RateComparison,
    position_bias,
    self_preference,
    verbosity_bias,
)
from calibration.bootstrap import N_BOOT, Estimate, wilson_interval
from calibration.power import plan
from calibration.report import fixed

#: The scale of each task, in table order: the default of ``calibrate_task(scale=...)``. This
#: library knows no project (it imports nothing of ``labeler``), and its bias and power
#: statistics read these very labels (grade >= the relevance level, SUPPORTED, A), so it keeps
#: its own copy; a project passes its own scale.
SCALES: dict[str, tuple[Hashable, ...]] = {
    "relevance": (0, 1, 2, 3),
    "faithfulness": ("SUPPORTED", "UNSUPPORTED"),
    "pairwise": ("A", "B", "TIE"),
    "claims": ("SUPPORTED", "UNSUPPORTED"),
    "correctness": ("CORRECT", "INCORRECT"),
    "answer-relevance": ("ADDRESSES", "MISSES", "DECLINES"),
    "nuggets": ("SUPPORT", "PARTIAL_SUPPORT", "NOT_SUPPORT"),
}
#: The disagreement weights of the kappa of each ordinal task (in scale order): quadratic for
#: relevance grades; linear for nugget support, whose scores (1, 0.5, 0) are evenly spaced, so a
#: disagreement weighs what it changes in a nugget score. Every other task's kappa is unweighted.
KAPPA_WEIGHTS: dict[str, str] = {"relevance": "quadratic", "nuggets": "linear"}
#: The label of each two-label task that counts as positive in the power statement's binary split.
POSITIVE = {"faithfulness": "SUPPORTED", "claims": "SUPPORTED", "correctness": "CORRECT", "answer-relevance": "ADDRESSES",
            "nuggets": "SUPPORT"}
#: The grade from which a relevance label counts as relevant in the binary split (sensitivity,
#: specificity) when none is given: trec_eval's ``-l`` default.
RELEVANCE_LEVEL = 1
#: Discordant share of two systems assumed for the minimum detectable difference.
ASSUMED_DISCORDANT = 0.2
_SLOT = {"A": 1, "B": 2, "TIE": None}


def combine_orders(ab: str | None, ba: str | None, *, asked_both: bool = True) -> str | None:
    """One pairwise verdict from the two orders: the same winner both ways wins, a flip is a tie.

    ``None`` in an order that was asked means the item has no usable verdict. With
    ``asked_both=False`` (one order only, e.g. imported) the one verdict stands.

    >>> combine_orders("A", "A"), combine_orders("A", "B"), combine_orders("A", "TIE"), combine_orders("A", None)
    ('A', 'TIE', 'TIE', None)
    """
    if not asked_both:
        return ab if ab is not None else ba
    if ab is None or ba is None:
        return None
    return ab if ab == ba else "TIE"


def model_family(name: str | None) -> str:
    """The family of a model name: its leading letters, lower case (``gpt-4o`` -> ``gpt``).

    >>> model_family("Llama-3.1-8B"), model_family("gpt-4o-mini"), model_family(None)
    ('llama', 'gpt', '')
    """
    match = re.match(r"[A-Za-z]+", name or "")
    return match[0].lower() if match else ""


@dataclass(frozen=True, slots=True)
class PairwiseDetails:
    """What a pairwise judge does beyond agreement (None where no pair qualifies)."""

    position: PositionBias | None
    verbosity: RateComparison | None
    self_preference: RateComparison | None
    judge_family: str


@dataclass(frozen=True, slots=True)
class Power:
    """The minimum detectable paired difference with the judge's labels and with people's."""

    n: int
    unit: str
    sensitivity: float | None
    specificity: float | None
    positive: str
    mdd_judge: float | None  # None: the judge is no better than chance on the binary split
    mdd_people: float

    def sentence(self) -> str:
        """The consequence in words."""
        # A detectable difference beyond the 100-point scale is no difference at all: said in words.
        resolved = f"{fixed(100 * self.mdd_people, 1)} points" if self.mdd_people <= 1.0 else "no difference on the 100-point scale"
        people = f"{resolved} with people's labels"
        if self.sensitivity is None:
            return f"Too few judged items to estimate the judge's sensitivity and specificity; {self.n} {self.unit} resolve {people}."
        split = f"sensitivity {self.sensitivity:.2f}, specificity {self.specificity:.2f} against people for {self.positive}"
        if self.mdd_judge is None:
            return f"With this judge ({split}) no difference can be resolved: it is no better than chance."
        if self.mdd_judge > 1.0:
            return (
                f"With this judge ({split}) and n = {self.n} {self.unit}, no difference between two systems on the "
                f"100-point scale can be detected; people's labels resolve {resolved} "
                f"(80% power, α=0.05, discordant share {ASSUMED_DISCORDANT} assumed)."
            )
        return (
            f"With this judge ({split}) and {self.n} {self.unit}, the smallest paired difference between two systems "
            f"you can resolve is {fixed(100 * self.mdd_judge, 1)} points, against {people} (80% power, α=0.05, "
            f"discordant share {ASSUMED_DISCORDANT} assumed)."
        )


@dataclass(frozen=True, slots=True)
class TaskCalibration:
    """One judge on one task against the project's people."""

    task: str
    n_items: int  # items with a usable judge verdict and at least one human verdict
    n_pairs: int  # (item, annotator) comparisons
    agreement: Estimate | None
    kappa: Estimate | None  # quadratic for relevance, unweighted otherwise
    kappa_unweighted: Estimate | None
    majority_baseline: Estimate | None
    ceiling_agreement: Estimate | None
    ceiling_kappa: Estimate | None
    n_ceiling_items: int
    confusion: Confusion | None
    classes: tuple[ClassScore, ...]
    unparseable: Estimate
    tokens_per_verdict: float | None
    seconds_per_verdict: float | None
    pairwise: PairwiseDetails | None
    power: Power
    disagreements: tuple[dict, ...] = field(default=())
    n_failed: int = 0  # calls that ended in an error (no reply), among the unusable verdicts


def _pairs(humans: Mapping, judge: Mapping, groups: Mapping) -> tuple[list, list, list, list]:
    h, j, g, keys = [], [], [], []
    for key in sorted(judge, key=str):
        label = judge[key]
        if label is None:
            continue
        for annotator in sorted(humans.get(key, {})):
            h.append(humans[key][annotator])
            j.append(label)
            g.append(groups[key])
            keys.append((key, annotator))
    return h, j, g, keys


def _ceiling(humans: Mapping, judge: Mapping, groups: Mapping, task: str, common: dict) -> tuple[Estimate | None, Estimate | None, int]:
    a, b, g, items = [], [], [], set()
    for key, label in judge.items():
        people = humans.get(key, {})
        if label is None or len(people) < 2:
            continue
        items.add(key)
        for x, y in combinations(sorted(people), 2):
            a.append(people[x])
            b.append(people[y])
            g.append(groups[key])
    if not a:
        return None, None, 0
    weights = KAPPA_WEIGHTS.get(task)
    return raw_agreement(a, b, groups=g, **common), cohen_kappa(a, b, weights, groups=g, **common), len(items)


def _binary(task: str, label: Hashable, relevance_level: int = RELEVANCE_LEVEL) -> bool | None:
    if task == "relevance":
        return int(label) >= relevance_level  # type: ignore[arg-type]
    if task in POSITIVE:
        return label == POSITIVE[task]
    return None if label == "TIE" else label == "A"


def _power(task: str, h: list, j: list, n_project: int, unit: str, relevance_level: int = RELEVANCE_LEVEL) -> Power:
    positive = {"relevance": f"grade ≥ {relevance_level} (relevance level {relevance_level})",
                "pairwise": "A wins (people's ties left out)", **POSITIVE}[task]
    pos = [(_binary(task, x, relevance_level), j_) for x, j_ in zip(h, j, strict=True)
           if _binary(task, x, relevance_level) is not None]
    tp = sum(1 for x, y in pos if x and _binary(task, y, relevance_level) is True)
    tn = sum(1 for x, y in pos if not x and _binary(task, y, relevance_level) is False)
    n_pos = sum(1 for x, _ in pos if x)
    n_neg = len(pos) - n_pos
    people = plan(max(n_project, 1), "paired", discordant=ASSUMED_DISCORDANT).mdd
    if not n_pos or not n_neg:
        return Power(n_project, unit, None, None, positive, None, people)
    se, sp = tp / n_pos, tn / n_neg
    if se + sp - 1 <= 0 or n_project < 1:
        return Power(n_project, unit, se, sp, positive, None, people)
    clipped = (min(se, 1.0), min(sp, 1.0))
    judged = plan(n_project, "paired", discordant=ASSUMED_DISCORDANT, sensitivity=clipped[0], specificity=clipped[1]).mdd
    return Power(n_project, unit, se, sp, positive, judged, people)


def _agreement_stats(task: str, h: list, j: list, g: list, scale: Sequence[Hashable],
                     common: Mapping[str, object]) -> dict[str, object]:
    """The judge's agreement with people on the paired labels (all None without any)."""
    stats: dict[str, object] = {"agreement": None, "kappa": None, "kappa_unweighted": None, "majority_baseline": None,
                                "confusion": None, "classes": ()}
    if h:
        kw = {"labels": scale, "groups": g, **common}
        stats["agreement"] = raw_agreement(h, j, **kw)
        stats["kappa_unweighted"] = cohen_kappa(h, j, **kw)
        stats["kappa"] = cohen_kappa(h, j, KAPPA_WEIGHTS[task], **kw) if task in KAPPA_WEIGHTS else stats["kappa_unweighted"]
        stats["majority_baseline"] = majority_baseline(h, **kw)
        stats["confusion"] = confusion_matrix(h, j, labels=scale)
        stats["classes"] = tuple(class_scores(h, j, **kw))
    return stats


def calibrate_task(
    task: str,
    humans: Mapping[Hashable, Mapping[str, Hashable]],
    judge: Mapping[Hashable, Hashable | None],
    groups: Mapping[Hashable, Hashable],
    *,
    n_project: int,
    unit: str = "queries",
    orders: Mapping[Hashable, tuple[Hashable | None, Hashable | None]] | None = None,
    lengths: Mapping[Hashable, tuple[int, int]] | None = None,
    models: Mapping[Hashable, tuple[str | None, str | None]] | None = None,
    judge_model: str = "",
    scale: Sequence[Hashable] | None = None,
    n_units: int | None = None,
    n_unparseable: int | None = None,
    n_failed: int = 0,
    tokens: Sequence[int] = (),
    seconds: Sequence[float] = (),
    ci: float = 0.95,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
    relevance_level: int = RELEVANCE_LEVEL,
) -> TaskCalibration:
    """The judge against people on one task (see the module docstring for the inputs).

    ``orders`` gives each pairwise item's verdicts (AB, BA); ``lengths`` and ``models`` the
    two responses' lengths and model names (verbosity and self-preference probes);
    ``n_units``/``n_unparseable`` count every judge reply (one per order; a failed call,
    ``n_failed`` of them, counts as unusable too), ``tokens`` and
    ``seconds`` are per reply. ``n_project`` is the project size the power statement uses.
    ``scale`` is the task's labels in table order (default :data:`SCALES`). For relevance, the
    power statement's binary split counts a grade at or above ``relevance_level`` as relevant.

    Raises:
        CalibrationError: an unknown task or a label outside the task's scale.
    """
    if task not in SCALES:
        raise CalibrationError(f"task {task!r}: use one of {', '.join(SCALES)}")
    scale = SCALES[task] if scale is None else tuple(scale)
    common = {"ci": ci, "n_boot": n_boot, "seed": seed}
    h, j, g, keys = _pairs(humans, judge, groups)
    n_units = len(judge) if n_units is None else n_units
    n_bad = sum(v is None for v in judge.values()) if n_unparseable is None else n_unparseable
    unparseable = Estimate("unparseable_rate", n_bad / n_units if n_units else math.nan,
                           *wilson_interval(n_bad, n_units, ci), n_units, ci, "wilson")
    ceiling_agreement, ceiling_kappa, n_ceiling = _ceiling(humans, judge, groups, task, common)
    stats = _agreement_stats(task, h, j, g, scale, common)
    details = _pairwise(h, j, keys, orders, lengths, models, judge_model, common) if task == "pairwise" else None
    disagreements = tuple(
        {"item": key, "annotator": annotator, "human": x, "judge": y}
        for (key, annotator), x, y in zip(keys, h, j, strict=True) if x != y
    )
    return TaskCalibration(
        task, len({k for k, _ in keys}), len(h), stats["agreement"], stats["kappa"], stats["kappa_unweighted"],  # type: ignore[arg-type]
        stats["majority_baseline"], ceiling_agreement, ceiling_kappa, n_ceiling, stats["confusion"], stats["classes"],  # type: ignore[arg-type]
        unparseable, sum(tokens) / len(tokens) if tokens else None, sum(seconds) / len(seconds) if seconds else None,
        details, _power(task, h, j, n_project, unit, relevance_level), disagreements, n_failed,
    )


def _pairwise(h: list, j: list, keys: list, orders, lengths, models, judge_model: str, common: dict) -> PairwiseDetails:
    both = [(a, b) for a, b in (orders or {}).values() if a is not None and b is not None]
    position = None
    if any(_SLOT[a] is not None and _SLOT[b] is not None for a, b in both):
        position = position_bias([_SLOT[a] for a, _ in both], [_SLOT[b] for _, b in both], ci=common["ci"])
    judge_slots = [_SLOT[y] for y in j]
    human_slots = [_SLOT[x] for x in h]
    verbosity = own = None
    if lengths is not None and keys:
        try:
            verbosity = verbosity_bias(judge_slots, human_slots, [lengths[k][0] for k, _ in keys],
                                       [lengths[k][1] for k, _ in keys], **common)
        except CalibrationError:
            verbosity = None  # no pair with two verdicts and unequal lengths
    family = model_family(judge_model)
    if models is not None and keys and family:
        try:
            own = self_preference(judge_slots, human_slots, [model_family(models[k][0]) for k, _ in keys],
                                  [model_family(models[k][1]) for k, _ in keys], family, **common)
        except CalibrationError:
            own = None  # no pair with exactly one response from the judge's family
    return PairwiseDetails(position, verbosity, own, family)

"""The judge card: a judge's calibration against people, saved, and the line every number that
rests on the judge prints beside it.

``calibrate --judge NAME --save`` stores, per task, the model and prompt hashes behind the
judge's verdicts, the date, agreement and kappa with their intervals, the human ceiling
(people's kappa with each other on the same items) and n (:func:`save_cards`). A later
command that reports a number made with the judge's verdicts prints :func:`card_line`: the
card's figures, or that the judge is uncalibrated, either because it has no card for the task
or because its current verdicts were made under another prompt (or model) than the card's.
The card then describes another metric: a prompt edit is a new judge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from calibration.judges import KAPPA_WEIGHTS
from labeler.judges.report import retest_dict
from labeler.store.cards import add_cards, latest_cards, verdict_versions
from labeler.store.judge_calls import verdict_settings, verdict_tokens
from labeler.store.vocabulary import TASKS, Caller


@dataclass(frozen=True, slots=True)
class Figure:
    """A saved statistic: value and interval (None where undefined)."""

    value: float | None
    low: float | None
    high: float | None

    def text(self, digits: int = 2) -> str:
        if self.value is None:
            return "n/a"
        if self.low is None or self.high is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


@dataclass(frozen=True, slots=True)
class TaskCard:
    """A judge's card for one task, and whether it still describes the judge's verdicts.

    ``stale`` says why not (the prompt or the model changed since the card), else None.
    """

    task: str
    models: tuple[str, ...]
    prompt_hashes: tuple[str, ...]
    calibrated_at: str
    n: int
    n_pairs: int
    agreement: Figure
    kappa: Figure
    ceiling_n: int
    ceiling_agreement: Figure
    ceiling_kappa: Figure
    details: dict[str, Any]
    stale: str | None = None

    @property
    def date(self) -> str:
        return self.calibrated_at[:10]

    @property
    def calibrated(self) -> bool:
        return self.stale is None

    def figures(self, about: str = "") -> str:
        """``correctness agreement 0.86 [0.80, 0.91], κ 0.71 [0.60, 0.80] vs people's 0.78, n=120``
        (``about``: what to say of the card in brackets after the task's name)."""
        weights = self.details.get("kappa_weights")
        kappa = f"{weights} κ" if weights in ("quadratic", "linear") else "κ"
        people = "n/a" if self.ceiling_kappa.value is None else f"{self.ceiling_kappa.value:.2f}"
        name = f"{self.task} ({about})" if about else self.task
        return f"{name} agreement {self.agreement.text()}, {kappa} {self.kappa.text()} vs people's {people}, n={self.n}"

    def as_dict(self) -> dict[str, Any]:
        fig = lambda f: {"value": f.value, "low": f.low, "high": f.high}  # noqa: E731
        return {"task": self.task, "models": list(self.models), "prompt_hashes": list(self.prompt_hashes),
                "calibrated_at": self.calibrated_at, "n": self.n, "n_pairs": self.n_pairs,
                "agreement": fig(self.agreement), "kappa": fig(self.kappa),
                "human_ceiling": {"n": self.ceiling_n, "agreement": fig(self.ceiling_agreement), "kappa": fig(self.ceiling_kappa)},
                "calibrated": self.calibrated, "stale": self.stale, **self.details}


@dataclass(frozen=True, slots=True)
class JudgeCard:
    """A judge's card: its saved calibration per task (each task as saved last)."""

    judge: str
    tasks: dict[str, TaskCard]

    def as_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "tasks": {t: c.as_dict() for t, c in self.tasks.items()}}


def _figure(row: dict[str, Any], name: str) -> Figure:
    return Figure(row[name], row[f"{name}_low"], row[f"{name}_high"])


def _names(values: tuple[str, ...] | set[str]) -> str:
    return ", ".join(sorted(v or "(none)" for v in values)) or "(none)"


def _stale(row: dict[str, Any], now: tuple[set[str], set[str]] | None) -> str | None:
    if not now:
        return None  # no verdict of the task left to compare with: the card stands as saved
    prompts, models = now
    if prompts != set(row["prompt_hashes"]):
        return (f"prompt changed since its card ({row['task']} card of {row['calibrated_at'][:10]} under prompt "
                f"{_names(set(row['prompt_hashes']))}; verdicts now under {_names(prompts)})")
    if models != set(row["models"]):
        return (f"model changed since its card ({row['task']} card of {row['calibrated_at'][:10]} with model "
                f"{_names(set(row['models']))}; verdicts now by {_names(models)})")
    return None


def current_card(db: sqlite_utils.Database, judge: str) -> JudgeCard | None:
    """The judge's card (the latest saved calibration of each task), each task marked stale when
    the judge's current verdicts were made under another prompt or model; None without a card."""
    rows = latest_cards(db, judge)
    if not rows:
        return None
    versions = verdict_versions(db, judge)
    order = {t: i for i, t in enumerate(TASKS)}
    tasks = {}
    for task in sorted(rows, key=lambda t: order.get(t, len(order))):
        row = rows[task]
        tasks[task] = TaskCard(task, tuple(row["models"]), tuple(row["prompt_hashes"]), row["calibrated_at"], row["n"],
                               row["n_pairs"], _figure(row, "agreement"), _figure(row, "kappa"), row["ceiling_n"],
                               _figure(row, "ceiling_agreement"), _figure(row, "ceiling_kappa"), row["details"],
                               _stale(row, versions.get(task)))
    return JudgeCard(judge, tasks)


def card_line(db: sqlite_utils.Database, judge: str, task: str | None = None) -> str:
    """One line on how far the judge's numbers can be trusted, for ``task`` or every task of its card.

    ``judge J (model M, prompt abc123, calibrated 2026-12-01): correctness agreement 0.86
    [0.80, 0.91], κ 0.71 [0.60, 0.80] vs people's 0.78, n=120``; ``judge J: uncalibrated (no
    card)``; ``judge J: uncalibrated: prompt changed since its card (...)``.
    """
    return _card_line(db, judge, task) + repeats_note(db, judge, task)


def repeats_note(db: sqlite_utils.Database, judge: str, task: str | None = None) -> str:
    """``; verdicts: majority of 3 repeats`` when the judge's current verdicts (of ``task``)
    combine several calls each (``run-judge --repeats``), else nothing: what every number
    resting on the judge then rests on."""
    settings = verdict_settings(db, judge)
    counts = sorted({k for t, entry in settings.items() if task is None or t == task for k in entry["repeats"]})
    if not counts or counts == [1]:
        return ""
    said = " or ".join(str(k) for k in counts)
    return f"; verdicts: the majority of {said} repeats each (ties: TIE for pairwise, else no verdict)"


def _card_line(db: sqlite_utils.Database, judge: str, task: str | None) -> str:
    card = current_card(db, judge)
    if card is None:
        return f"judge {judge}: uncalibrated (no card)"
    if task is not None:
        if task not in card.tasks:
            return f"judge {judge}: uncalibrated (no card for {task})"
        chosen = [card.tasks[task]]
    else:
        chosen = list(card.tasks.values())
    stale = [c for c in chosen if not c.calibrated]
    if stale and len(chosen) == 1:
        return f"judge {judge}: uncalibrated: {stale[0].stale}"
    fresh = [c for c in chosen if c.calibrated]
    models = {m for c in fresh for m in c.models}
    dates = {c.date for c in fresh}
    head = []
    if len(models) <= 1 or len(fresh) == 1:
        head.append(f"model {_names(models)}")
    if len(fresh) == 1:
        head.append(f"prompt {_names(fresh[0].prompt_hashes)}")
    if len(dates) == 1:
        head.append(f"calibrated {next(iter(dates))}")
    parts = []
    for c in fresh:
        own = []
        if len(fresh) > 1:
            if len(models) > 1:
                own.append(f"model {_names(c.models)}")
            own.append(f"prompt {_names(c.prompt_hashes)}")
            if len(dates) > 1:
                own.append(f"calibrated {c.date}")
        parts.append(c.figures(", ".join(own)))
    parts += [f"{c.task} uncalibrated: {c.stale}" for c in stale]
    return f"judge {judge} ({', '.join(head)}): " + "; ".join(parts) if head else f"judge {judge}: " + "; ".join(parts)


def _value(e: Any) -> tuple[float | None, float | None, float | None]:
    if e is None:
        return None, None, None
    clean = lambda x: None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)  # noqa: E731
    return clean(e.value), clean(e.low), clean(e.high)


def save_cards(db: sqlite_utils.Database, report: Any, *, caller: Caller, prices: Any = None) -> dict[str, JudgeCard]:
    """Save every judge and task of a calibration report (``labeler.judges.report.JudgeReport``)
    as the judges' cards (admin only); returns each judge's card as now stored.

    A card carries, beside the figures, the settings and repeats of the verdicts it rests on,
    their test-retest agreement, and the tokens the endpoint reported for them (``tokens``:
    verdicts, in, out) with their cost at ``prices`` (a :class:`labeler.judges.cost.Prices`) when given.
    """
    rows = []
    for judge, tasks in report.results.items():
        settings, spent = verdict_settings(db, judge), verdict_tokens(db, judge)
        for task, t in tasks.items():
            a, k = _value(t.agreement), _value(t.kappa)
            ca, ck = _value(t.ceiling_agreement), _value(t.ceiling_kappa)
            details = {"kappa_weights": KAPPA_WEIGHTS.get(task, "none"), "n_boot": report.n_boot,
                       "seed": report.seed}
            if task == "relevance":
                details["relevance_level"] = report.relevance_level
            if task == "claims":
                details["n_flagged_left_out"] = report.flagged.get(judge, {}).get(task, 0)
            details |= _run_details(report, judge, task, settings.get(task), spent.get(task), prices)
            rows.append({"judge": judge, "task": task, "models": report.models.get(judge, {}).get(task, []),
                         "prompt_hashes": report.prompts[judge][task], "n": t.n_items, "n_pairs": t.n_pairs,
                         "agreement": a[0], "agreement_low": a[1], "agreement_high": a[2],
                         "kappa": k[0], "kappa_low": k[1], "kappa_high": k[2], "ceiling_n": t.n_ceiling_items,
                         "ceiling_agreement": ca[0], "ceiling_agreement_low": ca[1], "ceiling_agreement_high": ca[2],
                         "ceiling_kappa": ck[0], "ceiling_kappa_low": ck[1], "ceiling_kappa_high": ck[2],
                         "details": details})
    add_cards(db, rows, caller=caller)
    return {judge: current_card(db, judge) for judge in report.results}  # type: ignore[misc]


def _run_details(report: Any, judge: str, task: str, settings: dict[str, Any] | None,
                 spent: tuple[int, int, int] | None, prices: Any) -> dict[str, Any]:
    """What a card keeps of how the verdicts were made and what they cost."""
    out: dict[str, Any] = {"settings": (settings or {}).get("settings", []), "repeats": (settings or {}).get("repeats", [1]),
                           "retest": retest_dict(report, judge, task)}
    if spent is not None:
        n, tokens_in, tokens_out = spent
        out["tokens"] = {"verdicts": n, "in": tokens_in, "out": tokens_out}
        if prices is not None and prices.given:
            out["cost"] = {"value": prices.cost(tokens_in, tokens_out), "price_in": prices.price_in,
                           "price_out": prices.price_out}
    return out

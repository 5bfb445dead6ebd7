"""The pictures of :mod:`calibration.plots` on data of the kind the reports hold: four systems'
rates, their paired differences against a baseline with the MDD, and two systems over eight
weekly batches; one system's name is markup, which the page must show as text."""

from __future__ import annotations

from calibration.plots import BatchPoint, Point, batch_plot, forest_plot
from calibration.report_html import STYLE

HOSTILE = '<img src=x onerror="window.hacked=1">&amp; rag'
RATES = {  # system -> metric -> (value, low, high)
    "rag-v3": {"faithfulness": (0.86, 0.80, 0.91), "correctness": (0.71, 0.64, 0.78), "answer relevance": (0.93, 0.89, 0.96)},
    "rag-v2": {"faithfulness": (0.81, 0.74, 0.87), "correctness": (0.69, 0.61, 0.76), "answer relevance": (0.90, 0.85, 0.94)},
    HOSTILE: {"faithfulness": (0.62, 0.53, 0.70), "correctness": (0.55, 0.46, 0.63), "answer relevance": (0.80, 0.73, 0.86)},
    "baseline": {"faithfulness": (0.74, 0.66, 0.81), "correctness": (0.60, 0.52, 0.68), "answer relevance": (0.88, 0.83, 0.92)},
}
DIFFERENCES = {  # pair -> (difference, low, high, mdd)
    "rag-v3 − baseline": (0.12, 0.05, 0.19, 0.09),
    "rag-v2 − baseline": (0.07, -0.01, 0.15, 0.10),
    f"{HOSTILE} − baseline": (-0.12, -0.21, -0.03, 0.11),
}
WEEKS = [f"2026-W{w}" for w in range(42, 50)]
TREND = {"rag-v3": [0.80, 0.82, 0.81, 0.84, 0.86, 0.85, 0.87, 0.86],
         "rag-v2": [0.78, 0.77, None, 0.79, 0.76, 0.74, 0.75, 0.73]}


def rate_points() -> list[Point]:
    return [Point(system, metric, *v, n=200) for system, rates in RATES.items() for metric, v in rates.items()]


def difference_points() -> list[Point]:
    return [Point(pair, "faithfulness difference", d, lo, hi, mdd=mdd, n=200)
            for pair, (d, lo, hi, mdd) in DIFFERENCES.items()]


def batch_points() -> list[BatchPoint]:
    return [BatchPoint(f"{system} faithfulness", week, v, v - 0.05, v + 0.05, n=120)
            for system, values in TREND.items() for week, v in zip(WEEKS, values, strict=True) if v is not None]


def page() -> str:
    """One HTML page holding the three pictures, as a report would."""
    svgs = [forest_plot(rate_points(), title="Rates per system (95% intervals)", axis="share of answers"),
            forest_plot(difference_points(), title="Paired differences against the baseline",
                        axis="difference in faithfulness"),
            batch_plot(batch_points(), title="Faithfulness per weekly batch (95% intervals)", batches=WEEKS,
                       axis="weekly batch")]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>plots</title>"
            f"<style>{STYLE}</style></head><body>" + "".join(svgs) + "</body></html>")

"""Paired run comparison: exact randomisation p, Holm against statsmodels, MDD, the sentence."""

from __future__ import annotations

import itertools
import math

import pytest

from calibration import CalibrationError
from calibration.compare import bootstrap_interval, compare_runs, holm, randomisation_p
from calibration.report_compare import to_html
from calibration.power import minimum_detectable_difference


def _exact_p(deltas: list[float]) -> float:
    """Every one of the 2^n sign patterns: the share whose |mean| reaches the observed one."""
    observed = abs(sum(deltas)) / len(deltas)
    hits = sum(
        abs(sum(s * d for s, d in zip(signs, deltas))) / len(deltas) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=len(deltas))
    )
    return hits / 2 ** len(deltas)


@pytest.mark.parametrize("deltas", [[0.1, 0.2, -0.05, 0.3, 0.15, 0.0, 0.25, -0.1], [0.02, -0.01, 0.03, -0.04, 0.01, 0.0]])
def test_randomisation_p_matches_full_enumeration(deltas: list[float]) -> None:
    exact = _exact_p(deltas)
    estimate = randomisation_p(deltas, n_permutations=10_000, seed=1)
    # Monte Carlo SE at 10,000 flips is at most 0.005.
    assert estimate == pytest.approx(exact, abs=0.015)


def test_holm_against_statsmodels() -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = [0.01, 0.04, 0.03, 0.2, 0.001]
    expected = multitest.multipletests(p, method="holm")[1]
    assert holm(p) == pytest.approx(list(expected), abs=1e-12)


def test_bootstrap_interval_brackets_the_mean() -> None:
    deltas = [0.1, 0.2, 0.0, 0.3, 0.1, 0.2, 0.15, 0.05]
    low, high = bootstrap_interval(deltas, n_boot=5000, seed=3)
    mean = sum(deltas) / len(deltas)
    assert low < mean < high
    assert math.isnan(bootstrap_interval([0.1])[0])


def test_compare_runs_reads_as_a_sentence() -> None:
    base = {f"q{i}": 0.5 for i in range(30)}
    better = {f"q{i}": 0.5 + (0.05 if i % 3 else 0.01) for i in range(30)}
    [c] = compare_runs({"A": base, "B": better}, "nDCG@10", n_permutations=2000, n_boot=2000)
    deltas = [better[q] - base[q] for q in base]
    mean = sum(deltas) / 30
    sd = math.sqrt(sum((d - mean) ** 2 for d in deltas) / 29)
    assert c.delta == pytest.approx(mean) and c.sd == pytest.approx(sd)
    assert c.mdd == pytest.approx(minimum_detectable_difference(30, "per_query", sd=sd))
    assert c.p_value == pytest.approx(1 / 2001)  # every sign flip gives a smaller |mean|
    assert c.sentence == (
        f"B beats A by {mean:.3f} nDCG@10 [{c.low:.3f}, {c.high:.3f}], p<0.001; this golden set resolves {c.mdd:.3f}."
    )
    assert "<svg" in to_html([c]) and "<script" not in to_html([c])


def test_several_runs_are_holm_corrected_and_small_effects_flagged() -> None:
    base = {f"q{i}": 0.5 for i in range(12)}
    same = {q: v + (0.01 if i % 2 else -0.01) for i, (q, v) in enumerate(base.items())}
    up = {q: v + 0.1 + (0.01 if i % 2 else 0) for i, (q, v) in enumerate(base.items())}
    out = compare_runs({"A": base, "B": same, "C": up}, "RR", n_permutations=2000, n_boot=1000)
    assert [c.p_adjusted for c in out] == pytest.approx(holm([c.p_value for c in out]))
    assert "(Holm)" in out[0].sentence and "cannot tell the two apart" in out[0].sentence


def test_compare_needs_two_runs_with_shared_queries() -> None:
    with pytest.raises(CalibrationError):
        compare_runs({"A": {"q": 1.0}}, "RR")
    with pytest.raises(CalibrationError, match="share 0"):
        compare_runs({"A": {"q1": 1.0, "q2": 0.0}, "B": {"q3": 1.0}}, "RR")


def test_html_has_the_table_of_numbers_and_plots_on_labelled_axes() -> None:
    import re

    base = {f"q{i}": 0.5 for i in range(20)}
    run = {q: 0.5 + (i - 5) / 50 for i, q in enumerate(base)}  # differences -0.10 ... +0.28, step 0.02
    [c] = compare_runs({"A<1>": base, "B": run}, "RR", n_permutations=500, n_boot=500)
    page = to_html([c], title="RR on gold")
    cells = re.findall(r"<td>(.*?)</td>", page)
    assert cells == ["B", "A&lt;1&gt;", "20", "0.5000", f"{c.mean_run:.4f}", f"{c.delta:+.4f}",
                     f"[{c.low:+.4f}, {c.high:+.4f}]", f"{c.p_value:.4f}", f"{c.p_adjusted:.4f}", f"{c.sd:.4f}", f"{c.mdd:.4f}"]
    svg = page[page.index("<svg"):]
    # Axis titles, and ticks on both axes.
    assert "queries, sorted by difference (n = 20)" in svg and "RR, run − baseline" in svg
    y_ticks = {label: float(y) - 4 for y, label in re.findall(r"<text x='62' y='([\d.]+)' text-anchor='end' font-size='11'>([^<]+)<", svg)}
    assert set(y_ticks) == {"-0.3", "-0.2", "-0.1", "0", "+0.1", "+0.2", "+0.3"}
    x_ticks = re.findall(r"text-anchor='middle' font-size='11'>(\d+)</text>", svg)
    assert x_ticks == ["1", "5", "10", "15", "20"]
    # The bars are drawn on that scale: +0.2's top and -0.1's bottom sit on their ticks.
    bars = {title: (float(y), float(h)) for y, h, title in
            re.findall(r"<rect x='[\d.]+' y='([\d.]+)' width='[\d.]+' height='([\d.]+)' fill='#[0-9a-f]+'><title>([^<]+)</title>", svg)}
    top, _ = bars["q15: +0.2000"]
    assert top == pytest.approx(y_ticks["+0.2"], abs=0.02)
    low, height = bars["q0: -0.1000"]
    assert low == pytest.approx(y_ticks["0"], abs=0.02) and low + height == pytest.approx(y_ticks["-0.1"], abs=0.02)


def test_queries_one_run_lacks_are_dropped_and_counted_per_run() -> None:
    base = {"q1": 0.2, "q2": 0.4, "q3": 0.6, "q4": 0.1}  # q4: only A
    b = {"q1": 0.3, "q2": 0.5, "q3": 0.7, "q5": 0.9, "q6": 0.9}  # q5, q6: only B
    c = {"q1": 0.2, "q2": 0.4, "q3": 0.6, "q4": 0.1}  # the same queries as A
    first, second = compare_runs({"A": base, "B": b, "C": c}, "RR", n_permutations=200, n_boot=200)
    assert first.n == 3 and first.dropped == {"A": 2, "B": 1}
    assert second.n == 4 and second.dropped == {"A": 0, "C": 0}
    assert first.as_dict()["dropped"] == {"A": 2, "B": 1}
    assert first.delta == pytest.approx(0.1)  # over q1-q3 only

"""The project report: numbers against direct computations, and a safe offline HTML file."""

from __future__ import annotations

import json
import math
import re

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from calibration import Label, agreement_summary, power_summary, project_report, to_dict, to_html, to_markdown
from calibration.power import minimum_detectable_difference

#: The label scale the reports are made on (a project's 0-3 relevance grades).
GRADES = (0, 1, 2, 3)

LABELS = [
    Label("q1", "d1", "ann", 3), Label("q1", "d1", "bob", 2),
    Label("q1", "d2", "ann", 0), Label("q1", "d2", "bob", 0), Label("q1", "d2", "cy", 1),
    Label("q2", "d1", "ann", 1), Label("q2", "d1", "bob", 1),
    Label("q2", "d3", "ann", 2),
    Label("q3", "d4", "bob", 3), Label("q3", "d4", "cy", 3),
    Label("q3", "d5", "ann", 0), Label("q3", "d5", "cy", 2),
]


def test_overlap_agreement_pools_every_annotator_pair_on_shared_items():
    report = project_report(LABELS, grades=GRADES, n_boot=500)
    # Shared items and their pairs (names in order): q1/d1 ann-bob (3, 2); q1/d2 ann-bob (0, 0),
    # ann-cy (0, 1), bob-cy (0, 1); q2/d1 ann-bob (1, 1); q3/d4 bob-cy (3, 3); q3/d5 ann-cy (0, 2).
    a = [3, 0, 0, 0, 1, 3, 0]
    b = [2, 0, 1, 1, 1, 3, 2]
    kappa = report.overlap.get("kappa_quadratic")
    assert kappa.value == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic"))
    assert kappa.n == 7 and kappa.n_groups == 3 and kappa.method == "cluster bootstrap"
    assert report.n_overlap_items == 5 and report.n_items == 6 and report.n_queries == 3


def test_overlap_alpha_uses_all_annotators_at_once():
    report = project_report(LABELS, grades=GRADES, n_boot=0)
    nan = math.nan
    # Rows ann, bob, cy; columns the shared items q1/d1, q1/d2, q2/d1, q3/d4, q3/d5.
    data = [[3, 0, 1, nan, 0], [2, 0, 1, 3, nan], [nan, 1, nan, 3, 2]]
    expected = krippendorff.alpha(data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert report.alpha_ordinal.value == pytest.approx(expected)
    assert report.alpha_ordinal.n == 5


def test_each_annotator_against_the_others_and_distributions():
    report = project_report(LABELS, grades=GRADES, n_boot=0)
    rows = {r.annotator: r for r in report.per_annotator}
    # cy shares q1/d2 with ann and bob, q3/d4 with bob, q3/d5 with ann: own (1, 1, 3, 2) vs (0, 0, 3, 0).
    assert rows["cy"].n_shared == 4
    assert rows["cy"].kappa_quadratic.value == pytest.approx(
        cohen_kappa_score([1, 1, 3, 2], [0, 0, 3, 0], labels=[0, 1, 2, 3], weights="quadratic")
    )
    assert report.distributions["ann"] == {0: 2, 1: 1, 2: 1, 3: 1}
    assert sum(report.distributions["bob"].values()) == 4


def test_power_summary_reads_the_number_of_labelled_queries():
    summary = power_summary(150)
    assert summary.paired.mdd == pytest.approx(minimum_detectable_difference(150, "paired", discordant=0.2))
    ns = [n for n, _ in summary.curve]
    assert 150 in ns and ns == sorted(ns)
    mdds = [m for _, m in summary.curve]
    assert all(x > y for x, y in zip(mdds, mdds[1:]))


def test_no_overlap_yet_is_said_plainly():
    report = project_report([Label("q1", "d1", "ann", 1), Label("q1", "d2", "bob", 2)], grades=GRADES, n_boot=0)
    assert report.overlap is None and report.alpha_ordinal is None
    assert "No item has been labelled by two annotators yet" in to_markdown(report)


def test_markdown_names_the_resampling_and_the_golden_set_size():
    text = to_markdown(project_report(LABELS, grades=GRADES, n_boot=200, seed=1))
    assert "cluster bootstrap over 3 queries, 200 resamples, seed 1" in text
    assert "With 3 labelled queries" in text
    assert "| kappa_quadratic |" in text and "| alpha_ordinal |" in text


def test_dict_is_json_with_value_low_high_n():
    data = json.loads(json.dumps(to_dict(project_report(LABELS, grades=GRADES, n_boot=200))))
    kappa = data["agreement"]["kappa_quadratic"]
    assert set(kappa) == {"value", "low", "high", "n"}
    # The pooled pairs of test_overlap_agreement_pools_every_annotator_pair_on_shared_items.
    a, b = [3, 0, 0, 0, 1, 3, 0], [2, 0, 1, 1, 1, 3, 2]
    assert kappa["value"] == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights="quadratic"))
    assert kappa["n"] == len(a) and kappa["low"] <= kappa["value"] <= kappa["high"]
    assert data["agreement"]["agreement"]["value"] == pytest.approx(sum(x == y for x, y in zip(a, b)) / len(a))
    assert data["interval"] == {"ci": 0.95, "n_boot": 200, "seed": 0, "resampled": "queries"}
    queries = {label.query_id for label in LABELS}
    assert data["power"]["n"] == len(queries)
    assert data["power"]["mdd"] == pytest.approx(minimum_detectable_difference(len(queries), "paired", discordant=0.2))
    bob = [label.relevance for label in LABELS if label.annotator == "bob"]
    assert data["distributions"]["bob"] == {str(g): bob.count(g) for g in GRADES}


def test_per_pair_agreement_is_each_pair_on_the_items_both_labelled():
    report = project_report(LABELS, grades=GRADES, n_boot=0)
    pairs = {(r.annotator_a, r.annotator_b): r for r in report.per_pair}
    assert list(pairs) == [("ann", "bob"), ("ann", "cy"), ("bob", "cy")]
    # ann-bob share q1/d1 (3, 2), q1/d2 (0, 0), q2/d1 (1, 1); ann-cy q1/d2 (0, 1), q3/d5 (0, 2).
    ann_bob = pairs[("ann", "bob")]
    assert ann_bob.n == 3 and ann_bob.agreement.value == pytest.approx(2 / 3)
    assert ann_bob.kappa_quadratic.value == pytest.approx(
        cohen_kappa_score([3, 0, 1], [2, 0, 1], labels=[0, 1, 2, 3], weights="quadratic")
    )
    assert pairs[("ann", "cy")].agreement.value == 0.0
    # bob-cy share q1/d2 (0, 1) and q3/d4 (3, 3).
    assert pairs[("bob", "cy")].kappa_quadratic.value == pytest.approx(
        cohen_kappa_score([0, 3], [1, 3], labels=[0, 1, 2, 3], weights="quadratic")
    )
    assert sum(r.n for r in report.per_pair) == report.overlap.n


def test_html_is_self_contained_and_escapes_text():
    hostile = [Label(l.query_id, l.doc_id, "<script>alert(1)</script>" if l.annotator == "cy" else l.annotator, l.relevance) for l in LABELS]
    page = to_html(project_report(hostile, grades=GRADES, n_boot=100))
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<svg") == 3  # intervals, confusion heatmap, MDD against n
    # Nothing is fetched: the only URL is the SVG namespace name.
    assert re.findall(r"https?://[^\"' ]+", page) == ["http://www.w3.org/2000/svg"] * 3
    assert "<link" not in page and "src=" not in page


def test_agreement_summary_lists_every_statistic_once():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 100)
    b = np.clip(a + rng.integers(-1, 2, 100), 0, 3)
    summary = agreement_summary(a, b, groups=np.arange(100) // 10, n_boot=200, levels=("ordinal", "interval"))
    names = [e.statistic for e in summary.statistics]
    assert names == [
        "agreement", "majority_baseline", "kappa", "kappa_linear", "kappa_quadratic",
        "gwet_ac1", "gwet_ac2_quadratic", "alpha_ordinal", "alpha_interval",
    ]
    assert all(e.n_groups == 10 for e in summary.statistics)
    assert summary.get("kappa").value == pytest.approx(cohen_kappa_score(a, b))


def test_markdown_escapes_annotator_names():
    hostile = "![x](http://198.51.100.1/t.png)|b"
    labels = [Label(x.query_id, x.doc_id, hostile if x.annotator == "ann" else x.annotator, x.relevance) for x in LABELS]
    text = to_markdown(project_report(labels, grades=GRADES, n_boot=0))
    assert hostile not in text
    escaped = "\\!\\[x\\]\\(http\\://198\\.51\\.100\\.1/t\\.png\\)\\|b"
    row = next(line for line in text.splitlines() if line.startswith(f"| {escaped} | 5 |"))
    assert row.count(" | ") == 3  # four cells: the name's "|" did not add a column

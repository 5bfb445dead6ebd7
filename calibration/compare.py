"""Paired comparison of runs on the same queries: is B better than A, and can this set tell?

For per-query scores a_q and b_q of two runs on the same n queries, δ_q = b_q − a_q.

- **Mean difference** δ̄ with a percentile bootstrap interval over queries (Efron & Tibshirani
  1993): each replicate draws n queries with replacement.
- **Paired randomisation test** (Fisher 1935; Smucker, Allan & Carterette 2007): under "no
  difference" each δ_q is as likely to have either sign: with at most 16 non-zero differences
  every sign pattern is enumerated (the exact p), beyond that 10,000 replicates flip every sign
  at random and ``p = (1 + #{|mean of flipped| >= |δ̄|}) / (1 + R)`` (Phipson & Smyth 2010: never
  0). The test is :func:`calibration.stats.sign_flip_p`, two-sided.
- **Holm's step-down correction** (Holm 1979) when several runs are compared with one baseline.
- **Minimum detectable difference** of the set: ``(z_{1−α/2} + z_{1−β}) · sd(δ)/sqrt(n)``
  (:func:`calibration.power.minimum_detectable_difference`, per-query design). A difference
  that is not significant and below the MDD says nothing either way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from calibration import CalibrationError
from calibration.stats import N_PERMUTATIONS, sign_flip_p

#: Resamples of the bootstrap (the randomisation test's patterns: calibration.stats.N_PERMUTATIONS).
N_BOOTSTRAP = 10_000
_CHUNK = 2_000_000  # replicate x query cells drawn at once (bounds memory to ~16 MB)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Run ``run`` against ``baseline`` on one metric, over the queries both score.

    Attributes:
        baseline, run: run names. metric: metric name.
        n: queries both runs score (the paired set).
        mean_baseline, mean_run: means over those queries.
        delta: mean of δ_q = run − baseline. low, high: bootstrap interval of delta.
        p_value: randomisation-test p. p_adjusted: Holm-adjusted p (= p_value for one pair).
        sd: sample SD of δ_q. mdd: minimum detectable difference of this set.
        deltas: query_id -> δ_q.
        sentence: the plain-language reading.
        dropped: run name -> queries the other run of the pair scores but this one lacks (left
            out of the pair), for ``baseline`` and ``run``.
    """

    baseline: str
    run: str
    metric: str
    n: int
    mean_baseline: float
    mean_run: float
    delta: float
    low: float
    high: float
    p_value: float
    p_adjusted: float
    sd: float
    mdd: float
    deltas: dict[str, float]
    sentence: str
    dropped: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Every field by name, for JSON."""
        return {name: getattr(self, name) for name in (
            "baseline", "run", "metric", "n", "mean_baseline", "mean_run", "delta", "low", "high", "p_value",
            "p_adjusted", "sd", "mdd", "sentence", "deltas", "dropped")}


@dataclass(frozen=True, slots=True)
class Comparisons:
    """Every run against the baseline on one metric (what :func:`compare_runs` returns, with the metric)."""

    metric: str
    comparisons: tuple[Comparison, ...]
    relevance_level: int | None = None  # the grade from which the metric counted a document relevant

    def as_dict(self) -> dict[str, Any]:
        """``{"metric", "relevance_level", "comparisons": [...]}``: one entry per run after the baseline."""
        return {"metric": self.metric, "relevance_level": self.relevance_level,
                "comparisons": [c.as_dict() for c in self.comparisons]}


#: The two-sided test of "mean δ = 0" (:func:`calibration.stats.sign_flip_p`).
randomisation_p = partial(sign_flip_p, alternative="two-sided")


def bootstrap_interval(
    deltas: Sequence[float], *, ci: float = 0.95, n_boot: int = N_BOOTSTRAP, seed: int | None = 0
) -> tuple[float, float]:
    """Percentile interval of the mean of ``deltas``, resampling queries."""
    import numpy as np

    d = np.asarray(deltas, dtype=float)
    if d.size < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = []
    step = max(1, _CHUNK // d.size)
    for start in range(0, n_boot, step):
        k = min(step, n_boot - start)
        means.append(d[rng.integers(0, d.size, size=(k, d.size))].mean(axis=1))
    reps = np.concatenate(means)
    tail = (1.0 - ci) / 2.0
    return float(np.quantile(reps, tail)), float(np.quantile(reps, 1.0 - tail))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order.

    Sorted p = (0.01, 0.04, 0.03) → 3·0.01 = 0.03, max(0.03, 2·0.03) = 0.06, max(0.06, 1·0.04):

    >>> [round(p, 4) for p in holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def sentence(c: Comparison, *, alpha: float = 0.05, corrected: bool = False) -> str:
    """"B beats A by 0.031 nDCG@10 [0.012, 0.050], p=0.004; this golden set resolves 0.018."."""
    verb = "beats" if c.delta > 0 else "trails" if c.delta < 0 else "ties with"
    p = c.p_adjusted if corrected else c.p_value
    p_text = (f"p={p:.3f}" if p >= 0.001 else "p<0.001") + (" (Holm)" if corrected else "")
    from calibration.report import fixed

    # Retrieval metrics live in [0, 1]: a larger detectable difference is no difference at all.
    resolves = (f"this golden set resolves {fixed(c.mdd)}." if c.mdd <= 1.0 else
                f"no difference on this scale can be detected with n = {c.n}.")
    text = (
        f"{c.run} {verb} {c.baseline} by {fixed(abs(c.delta))} {c.metric} [{fixed(c.low)}, {fixed(c.high)}], {p_text}; "
        + resolves
    )
    if p >= alpha and c.mdd > 1.0:
        text += " This set cannot tell the two apart."
    elif p >= alpha and abs(c.delta) < c.mdd:
        text += " The difference is below that, so this set cannot tell the two apart."
    elif p >= alpha:
        text += " Not significant at this n."
    return text


def compare_runs(
    per_query: Mapping[str, Mapping[str, float]],
    metric: str,
    *,
    ci: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
    n_permutations: int = N_PERMUTATIONS,
    n_boot: int = N_BOOTSTRAP,
    seed: int | None = 0,
) -> list[Comparison]:
    """Every run after the first against the first, on the queries each pair both scores.

    ``per_query`` maps run name -> query_id -> the metric's value, runs in order (the first is
    the baseline). With more than two runs the p-values are Holm-corrected. A query only one
    run of a pair has is left out of that pair and counted in ``dropped``.

    Raises:
        CalibrationError: fewer than two runs, or a pair sharing fewer than two queries.
    """
    from calibration.power import minimum_detectable_difference

    names = list(per_query)
    if len(names) < 2:
        raise CalibrationError("compare needs at least two runs")
    base = per_query[names[0]]
    raw = []
    for name in names[1:]:
        other = per_query[name]
        shared = sorted(set(base) & set(other))
        if len(shared) < 2:
            raise CalibrationError(
                f"runs {names[0]!r} and {name!r} share {len(shared)} scored queries; need 2 or more ({names[0]!r} lacks "
                f"{len(set(other) - set(base))} that {name!r} has, {name!r} lacks {len(set(base) - set(other))})")
        deltas = {q: other[q] - base[q] for q in shared}
        values = list(deltas.values())
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((x - mean) ** 2 for x in values) / (len(values) - 1))
        low, high = bootstrap_interval(values, ci=ci, n_boot=n_boot, seed=seed)
        p = sign_flip_p(values, n_permutations=n_permutations, seed=seed)
        mdd = minimum_detectable_difference(len(values), "per_query", sd=sd, alpha=alpha, power=power)
        mean_a = sum(base[q] for q in shared) / len(shared)
        mean_b = sum(other[q] for q in shared) / len(shared)
        dropped = {names[0]: len(set(other) - set(base)), name: len(set(base) - set(other))}
        raw.append((name, len(shared), mean_a, mean_b, mean, low, high, p, sd, mdd, deltas, dropped))
    corrected = len(raw) > 1
    adjusted = holm([r[7] for r in raw]) if corrected else [r[7] for r in raw]
    out = []
    for r, p_adj in zip(raw, adjusted, strict=True):
        c = Comparison(names[0], r[0], metric, r[1], r[2], r[3], r[4], r[5], r[6], r[7], p_adj, r[8], r[9], r[10], "",
                       r[11])
        out.append(_with_sentence(c, sentence(c, alpha=alpha, corrected=corrected)))
    return out


def _with_sentence(c: Comparison, text: str) -> Comparison:
    from dataclasses import replace

    return replace(c, sentence=text)


def to_html(comparisons: Sequence[Comparison], title: str = "Run comparison") -> str:
    """One self-contained HTML page: the table of numbers (as ``goldpool compare`` prints it),
    then per run its sentence and its sorted per-query differences as bars on labelled axes
    (an inline SVG; every name escaped)."""
    from html import escape

    from calibration.report_html import STYLE, wide

    header = ["run", "baseline", "queries", "mean baseline", "mean run", "difference", "95% interval", "p",
              "p (Holm)", "sd(δ)", "MDD"]
    rows = [[c.run, c.baseline, f"{c.n:,}", f"{c.mean_baseline:.4f}", f"{c.mean_run:.4f}", f"{c.delta:+.4f}",
             f"[{c.low:+.4f}, {c.high:+.4f}]", f"{c.p_value:.4f}", f"{c.p_adjusted:.4f}", f"{c.sd:.4f}", f"{c.mdd:.4f}"]
            for c in comparisons]
    table = ("<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"
             + "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows) + "</table>")
    metric = comparisons[0].metric if comparisons else ""
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}</title>",
             f"<style>{STYLE}</style></head><body>", f"<h1>{escape(title)}</h1>",
             f"<h2>{escape(metric)}: each run against the baseline</h2>", wide(table),
             "<p class='note'>difference: mean of run − baseline over the queries both score, with a 95% bootstrap "
             "interval over queries; p: paired randomisation test (Holm-corrected across runs); MDD: the smallest "
             "difference this set resolves (80% power, α = 0.05).</p>"]
    for c in comparisons:
        parts.append(f"<h2>{escape(c.run)} against {escape(c.baseline)}</h2>")
        parts.append(f"<p>{escape(c.sentence)}</p>")
        parts.append(_deltas_svg(c))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _ticks(top: float) -> list[float]:
    """Tick values of a round step on each side of zero, out to the first one at or beyond
    ``top`` (so every bar ends within the ticks): 2 to 4 a side.

    >>> _ticks(0.37)
    [-0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4]
    >>> _ticks(0.08)
    [-0.08, -0.06, -0.04, -0.02, 0.0, 0.02, 0.04, 0.06, 0.08]
    """
    raw = top / 4
    step = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(m * step for m in (1, 2, 5, 10) if m * step >= raw)
    count = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(-count, count + 1)]


def _deltas_svg(c: Comparison, width: int = 900, height: int = 260) -> str:
    """The per-query differences, sorted, as bars: a y axis of the difference with ticks, an x
    axis of the queries in that order, zero, the mean (dashed) and its interval (shaded)."""
    from html import escape

    items = sorted(c.deltas.items(), key=lambda kv: kv[1])
    top = max([abs(v) for _, v in items] + [abs(c.low), abs(c.high)], default=1.0) or 1.0
    ticks = _ticks(top)
    top = max(top, abs(ticks[0]))
    left, right, upper, lower = 70, 20, 20, 50
    plot_w, plot_h = width - left - right, height - upper - lower
    bar = plot_w / max(1, len(items))

    def y(v: float) -> float:
        return upper + plot_h / 2 - v / top * (plot_h / 2)

    body = []
    if not (math.isnan(c.low) or math.isnan(c.high)):
        body.append(f"<rect x='{left}' y='{y(c.high):.2f}' width='{plot_w}' height='{max(y(c.low) - y(c.high), 0.5):.2f}' "
                    "fill='#999' fill-opacity='0.18'><title>95% interval of the mean difference</title></rect>")
    for t in ticks:
        body.append(f"<line x1='{left - 5}' x2='{left + plot_w}' y1='{y(t):.2f}' y2='{y(t):.2f}' "
                    f"stroke='{'#666' if t == 0 else '#e3e3e3'}'/>")
        shown = f"{t:+g}" if t else "0"
        body.append(f"<text x='{left - 8}' y='{y(t) + 4:.2f}' text-anchor='end' font-size='11'>{shown}</text>")
    for i, (query_id, value) in enumerate(items):
        h = abs(value) / top * (plot_h / 2)
        colour = "#2a7" if value > 0 else "#c44"
        body.append(f"<rect x='{left + i * bar:.2f}' y='{(y(value) if value > 0 else y(0)):.2f}' width='{max(bar - 1, 0.5):.2f}' "
                    f"height='{h:.2f}' fill='{colour}'><title>{escape(query_id)}: {value:+.4f}</title></rect>")
    if not math.isnan(c.delta):
        body.append(f"<line x1='{left}' x2='{left + plot_w}' y1='{y(c.delta):.2f}' y2='{y(c.delta):.2f}' stroke='#222' "
                    f"stroke-dasharray='6 4'><title>mean difference {c.delta:+.4f}</title></line>")
    axis_y = upper + plot_h
    body.append(f"<line x1='{left}' x2='{left + plot_w}' y1='{axis_y}' y2='{axis_y}' stroke='#666'/>")
    body.append(f"<line x1='{left}' x2='{left}' y1='{upper}' y2='{axis_y}' stroke='#666'/>")
    n = len(items)
    for k in sorted({1, *(round(n * f) for f in (0.25, 0.5, 0.75)), n} - {0}) if n else []:
        x = left + (k - 0.5) * bar
        body.append(f"<line x1='{x:.2f}' x2='{x:.2f}' y1='{axis_y}' y2='{axis_y + 5}' stroke='#666'/>")
        body.append(f"<text x='{x:.2f}' y='{axis_y + 17}' text-anchor='middle' font-size='11'>{k}</text>")
    body.append(f"<text x='{left + plot_w / 2}' y='{height - 8}' text-anchor='middle' font-size='12'>"
                f"queries, sorted by difference (n = {n:,}); dashed: mean {c.delta:+.4f}, shaded: its 95% interval</text>")
    ylabel = escape(f"{c.metric}, run − baseline")
    body.append(f"<text transform='translate(14 {upper + plot_h / 2:.1f}) rotate(-90)' text-anchor='middle' "
                f"font-size='12'>{ylabel}</text>")
    label = escape(f"{c.run} minus {c.baseline}, {c.metric}, per query (sorted); mean {c.delta:+.4f}")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' viewBox='0 0 {width} {height}' "
            f"role='img' aria-label='{label}'><title>{label}</title>{''.join(body)}</svg>")

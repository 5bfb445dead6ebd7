"""Prediction-powered inference: equal to ppi-python, valid coverage, narrower than people alone."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

ppi_py = pytest.importorskip("ppi_py")
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate  # noqa: E402
from ppi_py.baselines import classical_mean_ci  # noqa: E402

from calibration.ppi import ppi_mean  # noqa: E402
from labels_fixtures import make_project, write_jsonl  # noqa: E402
from labeler.cli import cli  # noqa: E402
from labeler.store import access  # noqa: E402
from labeler.store.access import OWNER  # noqa: E402
from labeler.judges.verdict_files import import_verdicts  # noqa: E402


def _judged_grades(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Grades 0-3 and a judge that is right 70% of the time and otherwise one grade too high."""
    y = rng.choice(4, size=size, p=[0.4, 0.3, 0.2, 0.1]).astype(float)
    f = np.where(rng.random(size) < 0.7, y, np.minimum(y + 1, 3))
    return y, f


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_values_equal_ppi_python(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, f = _judged_grades(rng, 80)
    _, fu = _judged_grades(rng, 900)
    classic = ppi_mean(y, f, fu, tuned=False)
    tuned = ppi_mean(y, f, fu)
    assert classic.ppi.value == pytest.approx(float(ppi_mean_pointestimate(y, f, fu, lam=1)[0]))
    assert (classic.ppi.low, classic.ppi.high) == pytest.approx([float(v[0]) for v in ppi_mean_ci(y, f, fu, alpha=0.05, lam=1)])
    assert tuned.ppi.value == pytest.approx(float(np.ravel(ppi_mean_pointestimate(y, f, fu))[0]))
    assert (tuned.ppi.low, tuned.ppi.high) == pytest.approx([float(v[0]) for v in ppi_mean_ci(y, f, fu, alpha=0.05)])
    assert (tuned.human_only.low, tuned.human_only.high) == pytest.approx([float(v) for v in classical_mean_ci(y, alpha=0.05)])
    assert 0 < tuned.lam <= 1 and tuned.judge_only == pytest.approx(np.concatenate([f, fu]).mean())


def test_coverage_over_500_repetitions_is_valid_and_narrower_than_people_alone() -> None:
    """A biased judge (always errs upwards): the judge-only mean misses, PPI does not."""
    rng = np.random.default_rng(2026)
    truth = 0 * 0.4 + 1 * 0.3 + 2 * 0.2 + 3 * 0.1
    covered = {"ppi": 0, "ppi++": 0, "human": 0}
    widths = {"ppi": [], "ppi++": [], "human": []}
    judge_only = []
    for _ in range(500):
        y, f = _judged_grades(rng, 150)
        _, fu = _judged_grades(rng, 3000)
        for name, result in (("ppi", ppi_mean(y, f, fu, tuned=False)), ("ppi++", ppi_mean(y, f, fu))):
            covered[name] += result.ppi.low <= truth <= result.ppi.high
            widths[name].append(result.ppi.high - result.ppi.low)
        covered["human"] += result.human_only.low <= truth <= result.human_only.high
        widths["human"].append(result.human_only.high - result.human_only.low)
        judge_only.append(result.judge_only)
    for name in ("ppi", "ppi++"):
        assert 0.93 <= covered[name] / 500 <= 0.97, (name, covered[name])
        assert np.mean(widths[name]) < 0.8 * np.mean(widths["human"])
    assert np.mean(judge_only) - truth > 0.15  # the judge alone is biased


@pytest.mark.parametrize(("options", "level"), [([], 1), (["--relevance-level", "2"], 2), (["--threshold", "3"], 3)])
def test_estimate_command_uses_people_on_the_labelled_items_and_the_judge_elsewhere(
    tmp_path: Path, options: list[str], level: int
) -> None:
    db = make_project(tmp_path / "p.db", n_queries=4, per_query=10)
    pool = db.execute("SELECT query_id, doc_id FROM pool ORDER BY query_id, doc_id").fetchall()
    rng = random.Random(3)
    judge = {k: rng.randint(0, 3) for k in pool}
    people = {k: min(3, max(0, judge[k] + rng.choice([-1, 0, 0]))) for k in pool[::3]}
    access.add_annotator(db, "ann")
    import_verdicts(db, write_jsonl(tmp_path / "h.jsonl", [{"query_id": q, "doc_id": d, "relevance": r} for (q, d), r in people.items()]),
                    annotator="ann", caller=OWNER)
    import_verdicts(db, write_jsonl(tmp_path / "j.jsonl", [{"query_id": q, "doc_id": d, "relevance": r} for (q, d), r in judge.items()]),
                    judge="g", caller=OWNER)
    result = CliRunner().invoke(cli, ["estimate", str(tmp_path / "p.db"), "--judge", "g", "--metric", "relevant-share",
                                      *options, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["relevance_level"] == out["threshold"] == level
    labelled = sorted(people)
    y = np.array([float(people[k] >= level) for k in labelled])
    f = np.array([float(judge[k] >= level) for k in labelled])
    fu = np.array([float(judge[k] >= level) for k in sorted(judge) if k not in people])
    assert (out["n_labelled"], out["n_unlabelled"]) == (len(y), len(fu)) == (14, 26)
    assert [out["ppi"]["low"], out["ppi"]["high"]] == pytest.approx([float(v[0]) for v in ppi_mean_ci(y, f, fu, alpha=0.05, lam=1)])
    assert [out["ppi_plus_plus"]["low"], out["ppi_plus_plus"]["high"]] == pytest.approx(
        [float(v[0]) for v in ppi_mean_ci(y, f, fu, alpha=0.05)])
    shown = CliRunner().invoke(cli, ["estimate", str(tmp_path / "p.db"), "--judge", "g", "--metric", "relevant-share", *options])
    assert f"relevant-share (relevance level {level}: grade >= {level}) by judge 'g'" in shown.output
    text = CliRunner().invoke(cli, ["estimate", str(tmp_path / "p.db"), "--judge", "g", "--metric", "win-rate"])
    assert text.exit_code == 1 and "PPI needs at least 2 human-labelled items" in text.output

"""run-judge --repeats: K calls an item, their majority the verdict, and the judge's agreement
with itself recovered from a stub judge whose noise is known."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

from judge_server import JudgeServer
from labels_fixtures import make_project
from labeler.cli import cli
from labeler.judges.client import Endpoint
from labeler.judges.run import plan_units, run_judge
from labeler.judges.verdict_files import import_items
from labeler.store.access import OWNER
from labeler.store.verdicts import latest_judge_verdicts

N_ITEMS = 300
NOISE = 0.4  # the share of calls answered by a fair coin instead of the truth


def _truth(i: int) -> str:
    return "SUPPORTED" if i % 2 == 0 else "UNSUPPORTED"


@pytest.fixture
def db(tmp_path: Path) -> sqlite_utils.Database:
    db = make_project(tmp_path / "p.db", n_queries=1, per_query=2)
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"item_id": f"f{i:03d}", "kind": "faithfulness", "question": f"question {i}",
                                         "contexts": ["c"], "response": f"response {i} truth={_truth(i)}"}) + "\n"
                             for i in range(N_ITEMS)), encoding="utf-8")
    import_items(db, items, caller=OWNER)
    return db


def noisy_judge(seed: int = 7):
    """A judge that answers the truth written in the response, except that a share NOISE of its
    calls is a fair coin: each call gives the truth with probability q = 1 - NOISE / 2."""
    rng = random.Random(seed)

    def answer(message: str) -> str:
        truth = re.search(r"truth=(\w+)", message)[1]
        return rng.choice(["SUPPORTED", "UNSUPPORTED"]) if rng.random() < NOISE else truth

    return answer


def expected_retest() -> tuple[float, float]:
    """κ and flip rate of two calls on the same item: agreement p_o = q² + (1 - q)²; each call
    says SUPPORTED half the time (half the items are), so chance agreement p_e = 1/2."""
    q = 1 - NOISE / 2
    p_o, p_e = q * q + (1 - q) * (1 - q), 0.5
    return (p_o - p_e) / (1 - p_e), 1 - p_o


def test_the_test_retest_kappa_of_a_judge_of_known_noise_is_recovered_within_its_interval(db, tmp_path) -> None:
    server = JudgeServer(answer=noisy_judge())
    try:
        with Endpoint(server.url, timeout=5, attempts=2, temperature=0.8) as endpoint:
            s = run_judge(db, judge="noisy", model="m", endpoint=endpoint, task="faithfulness", concurrency=1,
                          repeats=3, progress=False, caller=OWNER)
        assert (s.calls, s.repeats, s.ties, server.count) == (3 * N_ITEMS, 3, 0, 3 * N_ITEMS)
    finally:
        server.close()
    # Each verdict is the majority of its three repeats, stored with their indexes.
    repeats = {}
    for item_id, repeat, verdict in db.execute(
            "SELECT v.item_id, r.repeat, r.verdict FROM judge_repeats r JOIN judge_verdicts v ON v.id = r.verdict_id"):
        repeats.setdefault(item_id, {})[repeat] = verdict
    assert len(repeats) == N_ITEMS and all(sorted(r) == [0, 1, 2] for r in repeats.values())
    combined = {v.item_id: v.verdict for v in latest_judge_verdicts(db, "noisy", caller=OWNER)}
    for item_id, got in repeats.items():
        votes = list(got.values())
        assert combined[item_id] == max(set(votes), key=votes.count)
    result = CliRunner().invoke(cli, ["calibrate", str(tmp_path / "p.db"), "--judge", "noisy", "--json", "--n-boot", "1000"])
    assert result.exit_code == 0, result.output
    retest = json.loads(result.stdout)["judges"]["noisy"]["faithfulness"]["retest"]
    kappa, flip_rate = expected_retest()  # 0.36 and 0.32
    assert retest["repeats"] == 3 and retest["n"] == N_ITEMS and retest["n_pairs"] == 3 * N_ITEMS
    assert retest["kappa"]["low"] <= kappa <= retest["kappa"]["high"]
    assert retest["flip_rate"]["low"] <= flip_rate <= retest["flip_rate"]["high"]
    assert retest["kappa"]["high"] - retest["kappa"]["low"] < 0.2  # and the interval says something
    text = CliRunner().invoke(cli, ["calibrate", str(tmp_path / "p.db"), "--judge", "noisy", "--n-boot", "200"]).stdout
    assert "Test-retest over 3 repeats, n = 300 items (900 pairs of repeats): kappa 0." in text


def test_a_judge_asked_once_has_no_test_retest_and_says_how_to_get_one(db, tmp_path, server) -> None:
    server.answer = lambda message: "SUPPORTED"
    with Endpoint(server.url, timeout=5, attempts=2) as endpoint:
        run_judge(db, judge="once", model="m", endpoint=endpoint, task="faithfulness", limit=5, progress=False,
                  caller=OWNER)
    out = json.loads(CliRunner().invoke(cli, ["calibrate", str(tmp_path / "p.db"), "--judge", "once", "--json",
                                              "--n-boot", "0"]).stdout)
    assert out["judges"]["once"]["faithfulness"]["retest"] == {
        "repeats": 1, "n": 0, "n_pairs": 0, "kappa": None, "kappa_weights": "none", "agreement": None,
        "flip_rate": None, "ties": 0}


def test_two_repeats_that_disagree_tie_give_no_verdict_and_are_done(db, tmp_path) -> None:
    flip = iter(["SUPPORTED", "UNSUPPORTED"] * 4)
    server = JudgeServer(answer=lambda message: next(flip))
    try:
        with Endpoint(server.url, timeout=5, attempts=2) as endpoint:
            s = run_judge(db, judge="split", model="m", endpoint=endpoint, task="faithfulness", limit=3, concurrency=1,
                          repeats=2, progress=False, caller=OWNER)
        assert (s.calls, s.ties, s.kept) == (6, 3, 3)
        rows = latest_judge_verdicts(db, "split", caller=OWNER)
        assert [(r.verdict, r.error) for r in rows] == [(None, None)] * 3  # no verdict, and no failed call
        # A rerun finds them done: a tie is what the repeats said, not a failure to ask again.
        with Endpoint(server.url, timeout=5, attempts=2) as endpoint:
            _, _, already, todo = plan_units(db, judge="split", model="m", endpoint=endpoint, task="faithfulness",
                                             repeats=2, caller=OWNER)
        assert already == 3 and {r.item_id for r in rows}.isdisjoint(u.target.item_id for u in todo)
    finally:
        server.close()

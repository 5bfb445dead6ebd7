"""Two prompt versions compared on people (calibrate --paired), the items a judge and people part
on (goldpool disagreements, the Judges page), and what a run costs before and after."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from calibration.paired import paired_judges
from labeler.cli import cli

XSS = "<script>alert(1)</script>"


def _random_labels(seed: int, n_groups: int = 30):
    rng = random.Random(seed)
    humans, a, b, groups = {}, {}, {}, {}
    for g in range(n_groups):
        for i in range(rng.randint(1, 4)):
            key = f"g{g}-{i}"
            truth = rng.choice("xyz")
            humans[key] = {p: (truth if rng.random() < 0.8 else rng.choice("xyz")) for p in ("ann", "bob")[:rng.randint(1, 2)]}
            a[key] = truth if rng.random() < 0.75 else rng.choice("xyz")
            b[key] = truth if rng.random() < 0.55 else rng.choice("xyz")
            groups[key] = f"g{g}"
    return humans, a, b, groups


def _flat(humans, judge, keys):
    h = [humans[k][p] for k in keys for p in sorted(humans[k])]
    j = [judge[k] for k in keys for p in sorted(humans[k])]
    return h, j


@pytest.mark.parametrize("seed", [1, 2])
def test_the_paired_difference_equals_scikit_learn_and_its_interval_a_plain_group_bootstrap(seed: int) -> None:
    humans, a, b, groups = _random_labels(seed)
    got = paired_judges(humans, a, b, groups, labels="xyz", n_boot=4000, seed=seed)
    keys = sorted(humans)
    ka = cohen_kappa_score(*_flat(humans, a, keys))
    kb = cohen_kappa_score(*_flat(humans, b, keys))
    assert got.kappa_a.value == pytest.approx(ka) and got.kappa_b.value == pytest.approx(kb)
    assert got.kappa_difference.value == pytest.approx(ka - kb)
    # A plain cluster bootstrap: draw groups with replacement, both judges on the same draw
    # (draws enough that the two percentiles' Monte Carlo error, about 0.007 together, is far
    # inside the tolerance).
    rng = np.random.default_rng(100 + seed)
    by_group: dict[str, list[str]] = {}
    for k in keys:
        by_group.setdefault(groups[k], []).append(k)
    names = sorted(by_group)
    diffs = []
    for _ in range(3000):
        drawn = [k for g in rng.choice(names, size=len(names)) for k in by_group[g]]
        ha, ja = _flat(humans, a, drawn)
        _, jb = _flat(humans, b, drawn)
        diffs.append(cohen_kappa_score(ha, ja, labels=list("xyz")) - cohen_kappa_score(ha, jb, labels=list("xyz")))
    low, high = np.percentile(diffs, [2.5, 97.5])
    assert got.kappa_difference.low == pytest.approx(low, abs=0.03)
    assert got.kappa_difference.high == pytest.approx(high, abs=0.03)


def test_only_items_both_judges_labelled_are_compared() -> None:
    humans = {1: {"p": "x"}, 2: {"p": "y"}, 3: {"p": "x"}}
    got = paired_judges(humans, {1: "x", 2: "y", 3: None}, {1: "x", 2: "x", 3: "x"}, n_boot=0)
    assert (got.n_items, got.n_pairs, got.n_changed) == (2, 2, 1)


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    """Faithfulness items people labelled, and two judges ("v1", "v2") as two prompt versions."""
    items, people, v1, v2 = [], [], [], []
    rng = random.Random(5)
    for i in range(40):
        truth = "SUPPORTED" if i % 3 else "UNSUPPORTED"
        other = "UNSUPPORTED" if truth == "SUPPORTED" else "SUPPORTED"
        text = XSS if i == 0 else f"response {i}"
        items.append({"item_id": f"f{i:02d}", "kind": "faithfulness", "question": f"question {i // 2}",
                      "contexts": [f"context {i}"], "response": text})
        for who in ("ann", "bob"):
            people.append((who, {"item_id": f"f{i:02d}", "verdict": truth if (who == "ann" or i % 7) else other}))
        v1.append({"item_id": f"f{i:02d}", "verdict": truth if rng.random() < 0.9 else other})
        v2.append({"item_id": f"f{i:02d}", "verdict": truth if rng.random() < 0.6 else other})
    v1[0]["verdict"] = "SUPPORTED" if items[0]["response"] and v1[0]["verdict"] == "UNSUPPORTED" else "UNSUPPORTED"
    db = tmp_path / "p.db"
    write = lambda name, rows: (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # noqa: E731
    write("items.jsonl", items)
    write("v1.jsonl", v1)
    write("v2.jsonl", v2)
    runner = CliRunner()
    steps = [["init", str(db)], ["import-items", str(db), str(tmp_path / "items.jsonl")]]
    for who in ("ann", "bob"):
        write(f"{who}.jsonl", [r for w, r in people if w == who])
        steps += [["add-annotator", str(db), who],
                  ["import-verdicts", str(db), str(tmp_path / f"{who}.jsonl"), "--annotator", who]]
    steps += [["import-verdicts", str(db), str(tmp_path / "v1.jsonl"), "--judge", "v1"],
              ["import-verdicts", str(db), str(tmp_path / "v2.jsonl"), "--judge", "v2"]]
    for step in steps:
        result = runner.invoke(cli, step)
        assert result.exit_code == 0, (step, result.output)
    return db


def test_calibrate_paired_gives_the_difference_of_two_prompt_versions(labelled: Path) -> None:
    result = CliRunner().invoke(cli, ["calibrate", str(labelled), "--judge", "v1", "--judge", "v2", "--paired", "--json",
                                      "--n-boot", "500"])
    assert result.exit_code == 0, result.output
    p = json.loads(result.stdout)["paired"]
    t = p["tasks"]["faithfulness"]
    assert (p["a"], p["b"], t["n"], t["n_pairs"]) == ("v1", "v2", 40, 80)
    assert t["kappa"]["difference"]["value"] == pytest.approx(t["kappa"]["a"]["value"] - t["kappa"]["b"]["value"])
    assert t["kappa"]["difference"]["low"] > 0  # the better prompt, told apart on these items
    text = CliRunner().invoke(cli, ["calibrate", str(labelled), "--judge", "v1", "--judge", "v2", "--paired",
                                    "--n-boot", "500"]).stdout
    assert "v1 agrees with people better than v2 (the interval is above 0)." in text
    one = CliRunner().invoke(cli, ["calibrate", str(labelled), "--judge", "v1", "--paired"])
    assert one.exit_code == 2 and "--paired compares two judges" in one.output


def test_disagreements_list_unanimous_items_first_with_their_texts_escaped(labelled: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["disagreements", str(labelled), "--judge", "v2", "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found and all(d["task"] == "faithfulness" for d in found)
    flags = [d["unanimous"] for d in found]
    assert flags == sorted(flags, reverse=True) and True in flags and False in flags
    for d in found:
        assert any(label != d["judge"] for label in d["people"].values())
        assert d["texts"]["question"].startswith("question") and "context_1" in d["texts"]
    page = tmp_path / "d.html"
    html = CliRunner().invoke(cli, ["disagreements", str(labelled), "--judge", "v1", "--html", str(page)])
    assert html.exit_code == 0 and "f00" in html.stdout
    written = page.read_text(encoding="utf-8")
    assert XSS not in written and "&lt;script&gt;alert(1)&lt;/script&gt;" in written
    assert "\x1b" not in html.stdout
    none = CliRunner().invoke(cli, ["disagreements", str(labelled), "--judge", "v1", "--task", "pairwise"])
    assert none.exit_code == 1 and "has no verdict on pairwise" in none.output


def test_a_jury_is_the_majority_of_its_members_and_reads_like_any_judge(labelled: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    v3 = [{"item_id": f"f{i:02d}", "verdict": "SUPPORTED"} for i in range(40)]
    (tmp_path / "v3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in v3), encoding="utf-8")
    assert runner.invoke(cli, ["import-verdicts", str(labelled), str(tmp_path / "v3.jsonl"), "--judge", "v3"]).exit_code == 0
    result = runner.invoke(cli, ["jury", str(labelled), "--judge", "v1", "--judge", "v2", "--judge", "v3", "--name", "J",
                                 "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    t = out["tasks"]["faithfulness"]
    members = {}
    for name in ("v1", "v2", "v3"):
        rows = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        members[name] = {r["item_id"]: r["verdict"] for r in rows}
    expected = {k: max(("SUPPORTED", "UNSUPPORTED"), key=[members[m][k] for m in members].count) for k in members["v1"]}
    disagree = sum(len({members[m][k] for m in members}) > 1 for k in expected)
    assert (t["units"], t["left_out"], t["ties"], t["disagree"], out["written"]) == (40, 0, 0, disagree, 40)
    assert t["disagreement_rate"]["value"] == pytest.approx(disagree / 40)
    from labeler.store import connect
    from labeler.store.access import OWNER
    from labeler.store.verdicts import latest_judge_verdicts

    with connect(labelled) as db:
        assert {v.item_id: v.verdict for v in latest_judge_verdicts(db, "J", caller=OWNER)} == expected
    report = json.loads(runner.invoke(cli, ["calibrate", str(labelled), "--judge", "J", "--json", "--n-boot", "0"]).stdout)
    assert report["judges"]["J"]["faithfulness"]["n"] == 40
    again = runner.invoke(cli, ["jury", str(labelled), "--judge", "v1", "--judge", "v2", "--judge", "v3", "--name", "J"])
    assert "0 verdicts written" in again.stdout and "members disagree on" in again.stdout
    alone = runner.invoke(cli, ["jury", str(labelled), "--judge", "v1", "--name", "J2"])
    assert alone.exit_code == 1 and "two judges or more" in alone.output

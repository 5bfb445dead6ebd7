"""The demo corpus: no text twice (an annotator would grade it twice), and rebuilt as committed."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from pooling.readers import read_corpus

DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_demo_corpus_has_no_duplicate_text() -> None:
    docs = list(read_corpus(DATA / "demo" / "corpus.jsonl"))
    repeated = [t for t, n in Counter(d.text for d in docs).items() if n > 1]
    assert repeated == []
    assert len({d.content_hash for d in docs}) == len(docs)


def test_build_demo_rebuilds_the_committed_corpus(tmp_path: Path) -> None:
    committed = (DATA / "demo" / "corpus.jsonl").read_text(encoding="utf-8")
    built_with = json.loads(committed.splitlines()[0])["python"]
    if built_with != platform.python_version():
        pytest.skip(f"the committed corpus was built with Python {built_with}")
    out = tmp_path / "corpus.jsonl"
    subprocess.run([sys.executable, str(DATA / "build_demo.py"), str(out)], check=True, capture_output=True)
    assert out.read_text(encoding="utf-8") == committed


@pytest.mark.parametrize("serve", [False, True])
def test_the_demo_says_where_each_token_lands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serve: bool) -> None:
    from click.testing import CliRunner

    import labeler.commands.serve
    import labeler.retrieval.demo
    from labeler.cli import cli

    built = labeler.retrieval.demo.DemoProject(tmp_path / "demo.db", {"demo-admin": "gp1.a", "alice": "gp2.b"}, 3, 2, 5)
    monkeypatch.setattr(labeler.retrieval.demo, "build_demo_project", lambda *args, **kwargs: built)
    served = []
    monkeypatch.setattr(labeler.commands.serve, "run_app", lambda *args: served.append(args))
    args = ["demo", "--dir", str(tmp_path)] + ([] if serve else ["--no-serve"])
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "demo-admin lands on Progress: open Label in the sidebar to label" in result.output
    assert "alice and bob land on Label" in result.output
    assert "paste the demo-admin token" not in result.output
    assert len(served) == int(serve)

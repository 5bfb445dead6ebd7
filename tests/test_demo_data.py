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

"""Each package raises its own root error; the command line turns exactly those into one line."""

from __future__ import annotations

import importlib
from pathlib import Path

import click
import pytest

from labeler.commands.common import ERROR_ROOTS, user_errors


@pytest.mark.parametrize(("module", "name"), ERROR_ROOTS)
def test_each_root_derives_from_exception_and_becomes_one_line(module: str, name: str) -> None:
    root = getattr(importlib.import_module(module), name)
    assert root.__bases__ == (Exception,)
    with pytest.raises(click.ClickException) as caught, user_errors():
        raise root("q.jsonl: something to fix")
    assert caught.value.format_message() == "q.jsonl: something to fix"


@pytest.mark.parametrize("error", [ValueError("bad"), KeyError("x"), TypeError("t")])
def test_any_other_error_is_a_bug_and_keeps_its_traceback(error: Exception) -> None:
    with pytest.raises(type(error)), user_errors():
        raise error


def test_a_missing_demo_file_is_a_demo_error(tmp_path: Path) -> None:
    from labeler.retrieval.demo import DemoError, build_demo_project

    with pytest.raises(DemoError, match=r"corpus\.jsonl: demo data not found"):
        build_demo_project(tmp_path / "project", data_dir=tmp_path / "absent")
    assert not (tmp_path / "project").exists()


def test_pooling_refuses_mismatched_inputs_with_its_own_error() -> None:
    from pooling import PoolingError
    from pooling.bm25 import BM25Index
    from pooling.retrieve import retrieve

    with pytest.raises(PoolingError, match="2 doc_ids but 1 texts"):
        BM25Index(["d1", "d2"], ["only one text"], progress=False)
    with pytest.raises(PoolingError, match="dense retrieval needs a cache_dir"):
        retrieve([("q1", "cat")], ["d1"], ["h1"], lambda: ["a cat"], lambda _: ["a cat"], bm25_depth=0, progress=False)

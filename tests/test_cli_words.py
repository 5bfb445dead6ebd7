"""One meaning per CLI word, over every command of ``goldpool``: ``-o`` is ``--output``;
``--metric`` and ``--system`` are repeatable; ``--summary`` is a path; a golden set is read from
the positional GOLDEN, never from ``--version`` or ``--db``; an old spelling is hidden and says
it is deprecated."""

from __future__ import annotations

import json
import re

import click
import pytest
from click.testing import CliRunner

from labeler.cli import cli

#: (command, word): why that word is not repeatable there.
SINGLE = {
    ("import-answers", "--system"): "one file holds one system's answers",
    ("import-traces", "--system"): "one file holds one system's traces",
    ("sample-answers", "--system"): "a sample is drawn from one system's answers",
}

#: (command, word): why that command's --version or --db reads no golden set.
NOT_GOLDEN = {
    ("freeze", "--version"): "it names the version freeze creates",
    ("plan", "--db"): "it reads the live labels and the judge's grades of a project, no frozen version",
}

#: (command, old spelling, the arguments besides it that make a run): the hidden old spellings.
DEPRECATED = {
    ("export", "--out"): "-o/--output",
    ("export", "--version"): "GOLDEN as DB@VERSION",
    ("completeness", "--version"): "GOLDEN as DB@VERSION",
    ("diff", "--summary"): "--counts-only",
    ("eval", "--metrics"): "--metric (repeated)",
}


def _options() -> list[tuple[str, click.Option]]:
    return [(name, p) for name, command in sorted(cli.commands.items()) for p in command.params
            if isinstance(p, click.Option)]


def _words(option: click.Option) -> list[str]:
    return [*option.opts, *option.secondary_opts]


def test_every_o_is_output() -> None:
    found = [(name, _words(p)) for name, p in _options() if "-o" in _words(p)]
    assert found, "no command takes -o"
    assert [(name, words) for name, words in found if words != ["-o", "--output"]] == []
    assert [(name, _words(p)) for name, p in _options() if "--output" in _words(p) and "-o" not in _words(p)] == []


@pytest.mark.parametrize("word", ["--metric", "--system"])
def test_metric_and_system_are_repeatable(word: str) -> None:
    found = [(name, p) for name, p in _options() if word in _words(p) and not p.hidden]
    assert len(found) >= 3
    single = sorted(name for name, p in found if not p.multiple)
    assert single == sorted(name for name, w in SINGLE if w == word)


def test_summary_is_a_path_wherever_it_appears() -> None:
    found = [(name, p) for name, p in _options() if "--summary" in _words(p) and not p.hidden]
    assert [name for name, _ in found] == ["gate"]
    assert all(isinstance(p.type, click.Path) and not p.is_flag for _, p in found)


def test_no_command_reads_a_golden_set_from_version_or_db() -> None:
    found = {(name, w) for name, p in _options() if not p.hidden for w in _words(p) if w in ("--version", "--db")}
    assert found == set(NOT_GOLDEN)


def test_a_command_that_reads_a_golden_set_takes_it_as_golden() -> None:
    for name in ("compare", "completeness", "diagnose", "eval", "export", "gate", "gold-context", "stages"):
        first = cli.commands[name].params[0]
        assert isinstance(first, click.Argument) and first.name == "golden", name


def test_deprecated_spellings_are_hidden() -> None:
    hidden = {(name, w) for name, p in _options() if p.hidden for w in _words(p)}
    assert set(DEPRECATED) <= hidden
    for name, old in DEPRECATED:
        shown = cli.commands[name].get_help(click.Context(cli.commands[name], info_name=name))
        assert not re.search(rf"{re.escape(old)}(?![\w-])", shown), (name, old)


def test_judge_has_one_meaning() -> None:
    found = [(name, p) for name, p in _options() if "--judge" in _words(p)]
    assert len(found) >= 12
    assert {p.metavar for _, p in found} == {"NAME"}


@pytest.fixture
def frozen(tmp_path, monkeypatch):
    """A project with versions v1 and v2 and a run, in the working folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text('{"query_id": "q1", "text": "a"}\n{"query_id": "q2", "text": "b"}\n')
    (tmp_path / "c.jsonl").write_text("".join(f'{{"doc_id": "d{i}", "text": "t{i}"}}\n' for i in range(4)))
    (tmp_path / "a.qrels").write_text("q1 0 d0 2\nq1 0 d1 0\nq2 0 d2 1\n")
    (tmp_path / "b.qrels").write_text("q1 0 d0 2\nq1 0 d1 1\nq2 0 d2 1\nq2 0 d3 2\n")
    (tmp_path / "r.trec").write_text("q1 Q0 d0 1 2.0 r\nq1 Q0 d1 2 1.0 r\nq2 Q0 d2 1 2.0 r\nq2 Q0 d3 2 1.0 r\n")
    (tmp_path / "s.trec").write_text("q1 Q0 d1 1 2.0 s\nq1 Q0 d0 2 1.0 s\nq2 Q0 d3 1 2.0 s\nq2 Q0 d2 2 1.0 s\n")
    runner = CliRunner()
    for args in (["init", "p.db"], ["import-queries", "p.db", "q.jsonl"], ["import-corpus", "p.db", "c.jsonl"],
                 ["add-run", "p.db", "r.trec", "--name", "r"], ["add-run", "p.db", "s.trec", "--name", "s"],
                 ["import-judgments", "p.db", "a.qrels", "--annotator", "ann"],
                 ["freeze", "p.db", "--version", "v1"],
                 ["import-judgments", "p.db", "b.qrels", "--annotator", "ann"],
                 ["freeze", "p.db", "--version", "v2"]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, (args, result.output)
    return tmp_path


#: old spelling -> (its run, the same run in the new spelling)
RUNS = {
    ("export", "--out"): (["export", "p.db@v1", "--format", "trec", "--out", "e1"],
                          ["export", "p.db@v1", "--format", "trec", "-o", "e1"]),
    ("export", "--version"): (["export", "p.db", "--version", "v1", "--format", "trec", "-o", "e1"],
                              ["export", "p.db@v1", "--format", "trec", "-o", "e1"]),
    ("completeness", "--version"): (["completeness", "p.db", "--version", "v1", "--json"],
                                    ["completeness", "p.db@v1", "--json"]),
    ("diff", "--summary"): (["diff", "p.db", "v1", "v2", "--summary"], ["diff", "p.db", "v1", "v2", "--counts-only"]),
    ("eval", "--metrics"): (["eval", "p.db@v1", "r.trec", "--metrics", "RR,P@1", "--json"],
                            ["eval", "p.db@v1", "r.trec", "--metric", "RR", "--metric", "P@1", "--json"]),
}


@pytest.mark.parametrize(("command", "old"), list(DEPRECATED), ids=[f"{c} {o}" for c, o in DEPRECATED])
def test_an_old_spelling_works_and_says_it_is_deprecated(frozen, command: str, old: str) -> None:
    assert set(RUNS) == set(DEPRECATED)
    old_args, new_args = RUNS[(command, old)]
    runner = CliRunner()
    before = runner.invoke(cli, old_args)
    assert before.exit_code == 0, before.output
    assert before.stderr == f"{old} is deprecated: use {DEPRECATED[(command, old)]}\n"
    after = runner.invoke(cli, new_args)
    assert after.exit_code == 0, after.output
    assert after.stderr == ""
    assert before.stdout == after.stdout


def test_old_and_new_spelling_together_are_refused(frozen) -> None:
    result = CliRunner().invoke(cli, ["export", "p.db@v1", "--version", "v1", "--format", "trec", "-o", "e1"])
    assert result.exit_code == 2 and "names its version already" in result.output
    result = CliRunner().invoke(cli, ["diff", "p.db", "v1", "v2", "--summary", "--counts-only"])
    assert result.exit_code == 2 and "not both" in result.output


def test_several_metrics_print_one_block_each_in_order(frozen) -> None:
    runner = CliRunner()
    base = ["compare", "p.db@v2", "r.trec", "s.trec"]
    one = [runner.invoke(cli, [*base, "--metric", m]) for m in ("RR", "P@1")]
    both = runner.invoke(cli, [*base, "--metric", "RR", "--metric", "P@1"])
    assert both.exit_code == 0, both.output
    assert both.stdout == one[0].stdout + "\n" + one[1].stdout
    data = json.loads(runner.invoke(cli, [*base, "--metric", "RR", "--metric", "P@1", "--json"]).stdout)
    single = [json.loads(runner.invoke(cli, [*base, "--metric", m, "--json"]).stdout) for m in ("RR", "P@1")]
    assert data == single and [d["metric"] for d in data] == ["RR", "P@1"]


def test_several_systems_are_diagnosed_each_in_turn(tmp_path) -> None:
    from diagnose_fixtures import build, invoke

    db = build(tmp_path, None)
    rows = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    (tmp_path / "other.jsonl").write_text("".join(json.dumps({**r, "answer_id": "b" + r["answer_id"]}) + "\n"
                                                  for r in rows), encoding="utf-8")
    invoke("import-answers", str(db), str(tmp_path / "other.jsonl"), "--system", "other")
    golden = f"{db}@v1"
    each = [invoke("diagnose", golden, "--system", s) for s in ("rag", "other")]
    assert invoke("diagnose", golden, "--system", "rag", "--system", "other") == each[0] + "\n" + each[1]
    data = json.loads(invoke("diagnose", golden, "--system", "rag", "--system", "other", "--json"))
    assert [d["system"] for d in data] == ["rag", "other"]
    assert data[0] == json.loads(invoke("diagnose", golden, "--system", "rag", "--json"))

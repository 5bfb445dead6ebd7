"""Cost before spending: --dry-run counts the calls after the cache and their prompt tokens, and a
run ends with the tokens the endpoint reported; the estimate is checked against them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from labels_fixtures import make_project
from labeler.cli import cli
from labeler.generation.answers import import_answers
from labeler.judges.cost import CHARS_PER_TOKEN, Prices, tokenizer
from labeler.store import connect
from labeler.store.access import OWNER


@pytest.fixture
def whitespace_tokenizer(tmp_path: Path) -> Path:
    """A tokenizer.json that makes one token of every run of non-space characters: the count the
    stub server reports as a reply's prompt_tokens (``len(message.split())``)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    return path


def _run(db: Path, url: str, *extra: str):
    return CliRunner().invoke(cli, ["run-judge", str(db), "--judge", "j", "--model", "m", "--base-url", url, *extra])


def test_a_dry_run_counts_what_a_run_then_spends_and_sends_nothing(tmp_path: Path, server, whitespace_tokenizer) -> None:
    db = tmp_path / "p.db"
    make_project(db, n_queries=2, per_query=3).close()
    prices = ["--price-in", "0.5", "--price-out", "2"]
    dry = _run(db, server.url, "--dry-run", "--tokenizer", str(whitespace_tokenizer), *prices)
    assert dry.exit_code == 0, dry.output
    match = re.search(r"Dry run: 6 calls to make \(0 answered by the cache\), ([\d,]+) prompt tokens "
                      r"\(tokenizer tokenizer.json\), replies at most 96 tokens; cost \$([\d.]+) for the prompts", dry.stdout)
    assert match and "Nothing was sent." in dry.stdout, dry.stdout
    planned = int(match[1].replace(",", ""))
    assert float(match[2]) == pytest.approx(round(planned * 0.5 / 1e6, 4))
    assert server.count == 0 and connect(db).execute("SELECT count(*) FROM judge_verdicts").fetchone()[0] == 0
    # The run: the tokens the endpoint reported equal the estimate, and their cost is said.
    real = _run(db, server.url, *prices)
    assert real.exit_code == 0, real.output
    reported = re.search(r"Tokens the endpoint reported: ([\d,]+) in, 6 out; cost \$([\d.]+)", real.stdout)
    assert reported and int(reported[1].replace(",", "")) == planned
    assert float(reported[2]) == pytest.approx(round((planned * 0.5 + 6 * 2) / 1e6, 4))
    # Without a tokenizer: an estimate from characters, said to be one.
    again = _run(db, server.url, "--dry-run", "--temperature", "0.5").stdout
    estimated = re.search(r"6 calls to make \(0 answered by the cache\), ([\d,]+) prompt tokens \(estimated from "
                          r"characters \(1 token a 4 characters\)\)", again)
    assert estimated and 0.5 * planned < int(estimated[1].replace(",", "")) < 2 * planned, again
    # After the run the cache answers every call of the same settings.
    done = _run(db, server.url, "--dry-run").stdout
    assert "6 to judge, 6 already done" in done and "Dry run: 0 calls to make (0 answered by the cache)" in done
    other = CliRunner().invoke(cli, ["run-judge", str(db), "--judge", "k", "--model", "m", "--base-url", server.url,
                                     "--dry-run"]).stdout
    assert "Dry run: 0 calls to make (6 answered by the cache), 0 prompt tokens" in other


def test_split_claims_dry_run_and_the_tokens_a_run_reports(tmp_path: Path, server) -> None:
    db = tmp_path / "p.db"
    assert CliRunner().invoke(cli, ["init", str(db)]).exit_code == 0
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"answer_id": f"a{i}", "question": f"Q {i}?", "response": f"It is {i}."}) + "\n"
                               for i in range(3)), encoding="utf-8")
    with connect(db) as store:
        import_answers(store, answers, "rag", caller=OWNER)
    server.answer = lambda message: "It is a fact."
    args = ["split-claims", str(db), "--system", "rag", "--judge", "s", "--model", "m", "--base-url", server.url]
    dry = CliRunner().invoke(cli, [*args, "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.stdout)["dry_run"]["calls"] == 3 and server.count == 0
    real = CliRunner().invoke(cli, args)
    assert real.exit_code == 0 and "Tokens the endpoint reported: " in real.stdout and server.count == 3


def test_the_tokenizer_is_said_and_a_bad_one_refused(tmp_path: Path) -> None:
    assert tokenizer(None, "m").count("x" * (3 * CHARS_PER_TOKEN + 1)) == 4
    missing = CliRunner().invoke(cli, ["run-judge", str(tmp_path / "p.db"), "--judge", "j", "--model", "m", "--base-url",
                                       "http://127.0.0.1:9/v1", "--dry-run", "--tokenizer", str(tmp_path / "none.json")])
    assert missing.exit_code == 1 and "no such file" in missing.output
    assert Prices().cost(10, 10) is None and Prices(1.0).cost(1_000_000, 5) == 1.0

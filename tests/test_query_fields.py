"""A TREC topic's description and narrative (and a JSONL query's extra fields) are kept in the
query's meta and shown, escaped, under the query on the labelling page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from app_fixtures import sign_in
from labeler.ui import state
from labeler.cli import cli
from labeler.ui.query_fields import LONG, query_fields_html
from labeler.store import connect
from labeler.store import access

NARRATIVE = "A relevant document must <b>identify</b> the organization & its activity" + ", in detail" * 30 + "."
TOPICS = (
    "<top>\n<num> Number: 301\n<title> International Organized Crime\n"
    "<desc> Description:\nIdentify organizations that take part in <i>international</i> crime.\n"
    f"<narr> Narrative:\n{NARRATIVE}\n</top>\n"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.chdir(tmp_path)
    texts = ["organized crime group", "international crime", "second hand books", "weather today", "tide tables"]
    Path("c.jsonl").write_text("".join(json.dumps({"doc_id": f"d{n}", "text": t}) + "\n" for n, t in enumerate(texts)))
    Path("topics.txt").write_text(TOPICS)
    Path("q.jsonl").write_text(json.dumps({"query_id": "q2", "text": "second", "lang": "en", "intent": "<script>x</script>"}) + "\n")
    runner = CliRunner()
    for args in (["init", "p.db"], ["import-corpus", "p.db", "c.jsonl"], ["import-queries", "p.db", "topics.txt"],
                 ["import-queries", "p.db", "q.jsonl"], ["build-pool", "p.db", "--dense-depth", "0", "--no-progress"]):
        result = runner.invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    db = connect("p.db")
    _, token = access.add_annotator(db, "ann")
    db.close()
    monkeypatch.setenv(state.DB_ENV_VAR, str(tmp_path / "p.db"))
    return tmp_path / "p.db", token


def test_topics_keep_description_and_narrative(project: tuple[Path, str]) -> None:
    with connect(project[0]) as db:
        meta = {q: json.loads(m) for q, m in db.execute("SELECT query_id, meta FROM queries")}
    assert meta == {
        "301": {"desc": "Identify organizations that take part in <i>international</i> crime.", "narr": NARRATIVE},
        "q2": {"intent": "<script>x</script>", "lang": "en"},
    }


def test_labelling_page_shows_the_narrative_escaped_and_collapsed(project: tuple[Path, str]) -> None:
    at = sign_in(project[1])
    seen: dict[str, str] = {}
    for _ in range(8):
        query_id = at.session_state[state.CURRENT][0]
        seen[query_id] = next(h.proto.body for h in at.html if "gp-query" in h.proto.body)
        if len(seen) == 2:
            break
        at.button(key=state.grade_key(1)).click().run()
    topic, other = seen["301"], seen["q2"]
    assert "<strong>Description</strong> Identify organizations that take part in &lt;i&gt;international&lt;/i&gt; crime." in topic
    # The narrative is longer than LONG characters: collapsed, its opening words in the summary.
    assert len(NARRATIVE) > LONG
    assert "<details><summary><strong>Narrative</strong> A relevant document must &lt;b&gt;identify&lt;/b&gt;" in topic
    assert "the organization &amp; its activity" in topic and "<b>" not in topic and "<i>" not in topic
    assert "<strong>intent</strong> &lt;script&gt;x&lt;/script&gt;" in other and "<strong>lang</strong> en" in other
    assert "<script>" not in other
    assert not at.exception


def test_no_fields_no_block() -> None:
    assert query_fields_html({"lang": ""}) == ""

"""A small labelling project for the app tests, written straight into a fresh database, and
the ways the tests drive the app on it through Streamlit's AppTest.

Independent of the pooling code on purpose: the rows are inserted as the schema describes
them, so the app tests exercise only the store and the app.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import labeler
from labeler.ui import state
from labeler.store import connect, init_db, now
from labeler.store import access

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

#: The app's entry point, as ``goldpool serve`` runs it.
APP = Path(labeler.__file__).parent / "app.py"
#: Seconds one AppTest run may take; the first run imports the app.
TIMEOUT = 30

#: A chunk that would run script in the page if it ever reached it as markup.
XSS_PAYLOAD = "<script>alert(1)</script><img src=x onerror=alert(1)>"

#: Words that only ever appear in the pool's provenance, never in anything an annotator sees.
SOURCE_MARKERS = ("bm25", "dense-minilm", "0.0328", "priority")

QUERIES = {
    "q1": "boiling point of water",
    "q2": "capital city of australia",
    "q3": "who painted the night watch",
}


@dataclass(frozen=True, slots=True)
class Project:
    path: Path
    admin_token: str
    annotator_token: str
    admin_id: int
    annotator_id: int
    n_items: int


def _hash(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _documents() -> list[tuple[str, str, str, int]]:
    """(query_id, doc_id, text, rank): five chunks per query, one of them the XSS payload."""
    rows = []
    for query_id, query in QUERIES.items():
        for n in range(1, 6):
            text = f"Chunk {n} about the {query}. Plain prose for {query_id} number {n}."
            if query_id == "q1" and n == 3:
                text = f"Water facts {XSS_PAYLOAD} & more"
            rows.append((query_id, f"{query_id}-d{n}", text, n))
    return rows


def build_project(directory: Path) -> Project:
    """Create ``directory/project.db`` with 3 queries x 5 chunks, one admin, one annotator."""
    path = directory / "project.db"
    db = init_db(path)
    at = now()
    db["queries"].insert_all(
        {"query_id": q, "text": t, "meta": "{}", "content_hash": _hash(t)} for q, t in QUERIES.items()
    )
    documents = _documents()
    db["documents"].insert_all(
        {"doc_id": d, "title": "", "text": t, "meta": "{}", "content_hash": _hash("", t)} for _, d, t, _ in documents
    )
    db["pool_builds"].insert({"id": 1, "at": at, "params": "{}"})
    db["pool"].insert_all(
        {
            "query_id": q,
            "doc_id": d,
            "sources": json.dumps({"bm25": rank, "dense-minilm": rank}),
            "priority": round(2 / (60 + rank), 4),  # 0.0328 for rank 1
            "position": rank,
            "added_at": at,
            "build_id": 1,
        }
        for q, d, _, rank in documents
    )
    admin, admin_token = access.add_annotator(db, "ada", role="admin")
    annotator, annotator_token = access.add_annotator(db, "bob")
    db.close()
    return Project(path, admin_token, annotator_token, admin.id, annotator.id, len(documents))


def add_judgments(path: Path, annotator_id: int, grades: dict[tuple[str, str], int]) -> None:
    """Append labels for one annotator straight into the judgments table."""
    db = connect(path)
    db["judgments"].insert_all(
        {"query_id": q, "doc_id": d, "annotator_id": annotator_id, "relevance": g, "note": "", "at": now(),
         "seconds": 4.0}
        for (q, d), g in grades.items()
    )
    db.close()


#: Names that exist only in the items' provenance and the judge's verdicts, never on an annotator's page.
MODEL_NAMES = ("gpt-hidden-alpha", "llama-hidden-beta")
JUDGE_NAME = "oracle-judge-9"
JUDGE_RAW = "JUDGE-REPLY-MARKER"


def verdict_records(n_faithfulness: int = 4, n_pairwise: int = 8) -> list[dict]:
    """Faithfulness and pairwise items; one of each carries the script payload and odd white space."""
    records: list[dict] = []
    for n in range(1, n_faithfulness + 1):
        response = f"Response {n}:\n  indented line\tand a tab" if n > 1 else f"Claim {XSS_PAYLOAD}\n\n  spaced"
        records.append({"item_id": f"f{n}", "kind": "faithfulness", "question": f"Faithfulness question {n}?",
                        "contexts": [f"Context one of item {n}.", f"Context two of item {n}."], "response": response})
    for n in range(1, n_pairwise + 1):
        records.append({"item_id": f"p{n}", "kind": "pairwise", "question": f"Pairwise question {n}?",
                        "response_a": f"ALPHA answer {n}" + (f" {XSS_PAYLOAD}" if n == 1 else ""),
                        "response_b": f"BETA answer {n}", "model_a": MODEL_NAMES[0], "model_b": MODEL_NAMES[1]})
    return records


def add_verdict_items(path: Path, n_faithfulness: int = 4, n_pairwise: int = 8, judge: bool = True) -> None:
    """Import verdict items (and a judge's verdicts on all of them) into the project at ``path``."""
    from labeler.store.access import OWNER
    from labeler.judges.verdict_files import import_items, import_verdicts

    items = path.parent / "items.jsonl"
    records = verdict_records(n_faithfulness, n_pairwise)
    items.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    db = connect(path)
    import_items(db, items, caller=OWNER)
    if judge:
        verdicts = path.parent / "judge.jsonl"
        rows = [{"item_id": r["item_id"], "verdict": "SUPPORTED" if r["kind"] == "faithfulness" else "A",
                 **({"order": "AB"} if r["kind"] == "pairwise" else {}), "raw": JUDGE_RAW} for r in records]
        verdicts.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        import_verdicts(db, verdicts, judge=JUDGE_NAME, caller=OWNER)
    db.close()


#: A system's name: in its answer ids (so in every item id of its answers), never on a page.
SYSTEM_NAME = "system-hidden-gamma"
#: A filler sentence that makes a text long: 62 of them make about 5,000 characters.
FILLER = "The delta spreads over a wide plain where the water slows and drops its silt. "


def answer_records(n: int = 3, long_texts: bool = False) -> list[dict]:
    """Answers of :data:`SYSTEM_NAME`, each with a reference and three claims: one word for word
    in the response, one that differs from it in white space and case only, and one the
    response does not contain. Answer 1's response and first claim carry the script payload.
    With ``long_texts``, each context and each reference is about 5,000 characters long, and
    each response about 2,500 (its claims first)."""
    records = []
    for k in range(1, n + 1):
        first = f"River {k} is long {XSS_PAYLOAD} & wide." if k == 1 else f"River {k} is long."
        contexts = [f"Context one of answer {k}: river {k} is long.", f"Context two of answer {k}: it crosses three countries."]
        response = f"{first} It  crosses THREE\ncountries. It ends in a delta."
        reference = f"Reference {k}: river {k} is 6,650 km long."
        if long_texts:
            contexts = [c + " " + FILLER * 62 + f"End of context {n} of answer {k}." for n, c in enumerate(contexts, start=1)]
            response += " " + FILLER * 31 + "End of the response."
            reference += " " + FILLER * 62 + "End of the reference."
        records.append({
            "answer_id": f"{SYSTEM_NAME}-{k}", "question": f"Answer question {k}: how long is river {k}?",
            "response": response, "contexts": contexts, "reference": reference,
            "claims": [first, "it crosses three countries.", f"River {k} is blue and cold."],
        })
    return records


def add_answers(path: Path, n: int = 3, long_texts: bool = False, judge: bool = True) -> list[dict]:
    """Import :func:`answer_records` into the project at ``path`` (and a judge's verdicts on
    every claim, correctness and relevance item); returns the records."""
    from labeler.generation.answers import import_answers
    from labeler.store.access import OWNER
    from labeler.judges.verdict_files import import_verdicts

    records = answer_records(n, long_texts)
    answers = path.parent / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    db = connect(path)
    import_answers(db, answers, SYSTEM_NAME, caller=OWNER)
    if judge:
        verdicts = path.parent / "answer-judge.jsonl"
        rows = [{"item_id": f"{r['answer_id']}#{c}", "verdict": "SUPPORTED", "raw": JUDGE_RAW} for r in records for c in (1, 2, 3)]
        rows += [{"item_id": r["answer_id"], "verdict": v, "raw": JUDGE_RAW} for r in records for v in ("CORRECT", "ADDRESSES")]
        verdicts.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        import_verdicts(db, verdicts, judge=JUDGE_NAME, caller=OWNER)
    db.close()
    return records


def signed_in_as(at: AppTest, path: Path, token: str) -> None:
    """Put the annotator of ``token`` into ``at``'s session as a sign-in would (user and the
    fingerprint of the token in force, which every run re-checks)."""
    from labeler.store import sessions

    with connect(path) as db:
        user = access.authenticate(db, token)
        assert user is not None, "the fixture's token does not sign in"
        at.session_state[state.USER] = user
        at.session_state[state.TOKEN_FP] = sessions.token_fingerprint(db, user.id)


#: A script that holds the project's write lock: ``python -c HOLDER DB SECONDS`` prints
#: "locked" once it holds it (one row written, not committed), then rolls back.
HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO settings (key, value) VALUES ('held', '1')")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def app_test(timeout: float = TIMEOUT) -> AppTest:
    """The whole app (sign-in form first), not run yet; the project comes from ``GOLDPOOL_DB``."""
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(APP), default_timeout=timeout)


def sign_in(token: str) -> AppTest:
    """The whole app after typing ``token`` into the sign-in form and pressing "Sign in"."""
    at = app_test().run()
    at.text_input(key=state.TOKEN_INPUT).input(token)
    at.button(key=state.LOGIN_SUBMIT).click().run()
    return at


def function_test(script: Callable[..., None], *args: object, timeout: float = TIMEOUT) -> AppTest:
    """``script(*args)`` run as a Streamlit app (its body must import what it uses), not run yet."""
    from streamlit.testing.v1 import AppTest

    return AppTest.from_function(script, args=args, default_timeout=timeout)


def page_script(page: str) -> None:
    """Run one page function of the app directly, as reaching its address does."""
    from labeler import app

    getattr(app, page)()


def open_page(path: Path, page: str, token: str, timeout: float = TIMEOUT) -> AppTest:
    """The app's ``page`` function, run once for the annotator holding ``token``."""
    at = function_test(page_script, page, timeout=timeout)
    signed_in_as(at, path, token)
    return at.run()


def press(at: AppTest, key: str) -> None:
    """Click the button with widget key ``key`` (as its keyboard shortcut does) and rerun."""
    at.button(key=key).click().run()


def _walk(node: object) -> Iterator[object]:
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def page_text(at: AppTest) -> str:
    """Everything the page sends to the browser: every element's full message, main and sidebar."""
    return "\n".join(str(getattr(n, "proto", "")) for block in (at.main, at.sidebar) for n in _walk(block))


NOBODY = 65534
SETPRIV = shutil.which("setpriv")
#: Put before a command to run it as a user who cannot write the project: ``nobody`` when the
#: tests run as root, for whom file modes mean nothing. It keeps the right to read and search
#: every directory, never to write, so that the programs it starts (``serve`` starts Streamlit)
#: can run a Python installed where only root may look.
AS_NOBODY: list[str] = (
    [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
     "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    if os.geteuid() == 0 and SETPRIV else []
)
#: What a goldpool run ``AS_NOBODY`` adds to its environment: this checkout's code, and a home
#: directory it may write.
NOBODY_ENV = {"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HOME": tempfile.gettempdir()}
#: Mark of a test that needs such a user.
NEEDS_NOBODY = pytest.mark.skipif(
    os.geteuid() == 0 and SETPRIV is None, reason="running as root without setpriv: cannot drop write rights"
)


def make_readonly(db: Path, what: str) -> None:
    """Take away the write rights on the project ``db``: on the ``file``, or on its ``directory`` too."""
    if what == "file":
        os.chmod(db.parent, 0o777)  # the directory stays writable: SQLite may create -shm there
        os.chmod(db, 0o444)
    else:
        os.chmod(db, 0o444)
        os.chmod(db.parent, 0o555)


class Clock:
    """A clock a test moves by hand (``clock.now += 5``): flows take it in place of time.monotonic."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def fake_streamlit(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], dict[str, str]]]:
    """Stand in for the Streamlit child `serve` starts (a child that exits 0 at once); returns
    the (command, environment) of each child started."""
    import subprocess

    started: list[tuple[list[str], dict[str, str]]] = []

    class Child:
        def __init__(self, cmd: list[str], env: dict[str, str], **_: object) -> None:
            started.append((cmd, env))

        def wait(self, timeout: float | None = None) -> int:
            return 0

        def poll(self) -> int:
            return 0

    monkeypatch.setattr(subprocess, "Popen", Child)
    return started

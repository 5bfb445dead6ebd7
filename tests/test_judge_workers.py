"""run-judge --workers W: the calls made by W processes, the database written by this one alone.

Against the scripted local server: the same verdicts, replies, tokens and requests as one
process; the cache and resuming unchanged; an endpoint's refusal, a worker's death and a
killed run each end the way they end without workers.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

from judge_server import JudgeServer
from labels_fixtures import make_project
from labeler.cli import cli
from labeler.judges import JudgeError
from labeler.judges.client import Endpoint
from labeler.judges.run import RunSummary, run_judge
from labeler.store import connect
from labeler.store.access import OWNER

ROOT = Path(__file__).resolve().parent.parent


def _run(db: sqlite_utils.Database, server: JudgeServer, workers: int, judge: str = "j1", *,
         reported: list | None = None, **kw) -> RunSummary:
    """A run; ``reported`` gets the tokens the endpoint reported (what the run's last line says)."""
    with Endpoint(server.url, timeout=5.0, attempts=5, backoff=0.01) as endpoint:
        summary = run_judge(db, judge=judge, model="m1", endpoint=endpoint, progress=False, workers=workers,
                            caller=OWNER, **{"concurrency": 4, **kw})
    if reported is not None:
        reported.append((endpoint.tokens_in, endpoint.tokens_out))
    return summary


def _stored(db: sqlite_utils.Database, judge: str = "j1") -> dict:
    """Every verdict row of ``judge`` and every reply it cached, without times, ids or latencies."""
    verdicts = db.execute("SELECT query_id, doc_id, item_id, shown_order, verdict, raw, parseable, tokens_in, tokens_out "
                          "FROM judge_verdicts WHERE judge = ? ORDER BY query_id, doc_id, item_id, shown_order",
                          [judge]).fetchall()
    columns = [c.name for c in db["judge_cache"].columns if c.name not in ("id", "at", "latency")]
    cached = db.execute(f"SELECT {', '.join(columns)} FROM judge_cache ORDER BY {', '.join(columns)}").fetchall()
    repeats = db.execute("SELECT v.query_id, v.doc_id, r.repeat, r.verdict, r.raw, r.tokens_in FROM judge_repeats r "
                         "JOIN judge_verdicts v ON v.id = r.verdict_id WHERE v.judge = ? ORDER BY 1, 2, 3", [judge]).fetchall()
    return {"verdicts": verdicts, "cached": cached, "repeats": repeats}


def _summary(s: RunSummary) -> tuple:
    return (s.total, s.already_done, s.from_cache, s.calls, s.requests, s.errors, s.unparseable, s.tokens_in,
            s.tokens_out, s.kept, s.ties)


@pytest.mark.parametrize("repeats", [1, 3])
def test_two_workers_store_what_one_process_stores(tmp_path: Path, server: JudgeServer, repeats: int) -> None:
    got = {}
    for workers in (1, 2):
        db = make_project(tmp_path / f"w{workers}.db", n_queries=3, per_query=8)
        server.script = ["500", "badjson"]  # two retried requests: counted through the workers too
        before, reported = server.count, []
        summary = _run(db, server, workers, repeats=repeats, reported=reported)
        got[workers] = (_summary(summary), _stored(db), server.count - before, reported[0])
        db.close()
    assert got[2] == got[1]
    (total, _, _, calls, requests, errors, _, tokens_in, tokens_out, *_), stored, asked, reported = got[2]
    assert (total, calls, requests, errors, asked) == (24, 24 * repeats, 24 * repeats + 2, 0, 24 * repeats + 2)
    assert reported == (tokens_in, tokens_out) and tokens_out == 24 * repeats
    assert len(stored["verdicts"]) == 24 and len(stored["cached"]) == 24 * repeats
    assert len(stored["repeats"]) == (24 * repeats if repeats > 1 else 0)


def test_a_rerun_with_workers_makes_no_calls_and_another_judge_is_answered_from_the_cache(tmp_path: Path,
                                                                                         server: JudgeServer) -> None:
    db = make_project(tmp_path / "p.db", n_queries=2, per_query=6)
    first = _run(db, server, 2)
    assert (first.calls, server.count) == (12, 12)
    again = _run(db, server, 2)
    assert (again.already_done, again.calls, again.requests, server.count) == (12, 0, 0, 12)
    other = _run(db, server, 2, judge="j2")
    assert (other.from_cache, other.calls, other.tokens_in, server.count) == (12, 0, 0, 12)
    assert _stored(db, "j2")["verdicts"] == _stored(db, "j1")["verdicts"]
    assert multiprocessing.active_children() == []  # nothing to call: no worker was started


def test_an_endpoint_refusing_the_key_stops_a_run_with_workers_with_the_error_of_one_process(
        tmp_path: Path, server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-Zq8v1NOTAREALKEYx93"
    monkeypatch.setenv("OPENAI_API_KEY", key)  # the workers read it from the environment they inherit
    errors = {}
    for workers in (1, 2):
        db = make_project(tmp_path / f"w{workers}.db", n_queries=2, per_query=6)
        server.script = ["401"]
        with pytest.raises(JudgeError) as raised:
            _run(db, server, workers)
        errors[workers] = str(raised.value)
    assert errors[2] == errors[1]
    assert errors[2].startswith(f"{server.url}: AuthenticationError") and "Bearer ***" in errors[2]
    assert server.authorization[-1] == f"Bearer {key}" and key not in errors[2]
    assert multiprocessing.active_children() == []  # the workers were ended
    server.script = ["401"]
    result = CliRunner().invoke(cli, ["run-judge", str(tmp_path / "w2.db"), "--judge", "j1", "--model", "m1",
                                      "--base-url", server.url, "--workers", "2"])
    assert result.exit_code == 1
    assert [line for line in result.output.splitlines() if line.startswith("Error:")] == [f"Error: {errors[1]}"]


def test_a_worker_that_dies_stops_the_run_saying_so_and_what_arrived_is_kept(tmp_path: Path) -> None:
    db = make_project(tmp_path / "p.db", n_queries=4, per_query=10)
    server = JudgeServer(delay=0.1)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            _run(db, server, 2)
        except BaseException as exc:  # noqa: BLE001 (read by the test)
            raised.append(exc)

    try:
        thread = threading.Thread(target=run)
        thread.start()
        assert server.wait_for(8)
        victim = next(p for p in multiprocessing.active_children() if p.name == "judge-worker-1")
        os.kill(victim.pid, signal.SIGKILL)
        thread.join(timeout=60)
        assert len(raised) == 1 and isinstance(raised[0], JudgeError)
        assert str(raised[0]).startswith("judge-worker-1 stopped (exit code -9) with ")
        assert multiprocessing.active_children() == []
        kept = connect(tmp_path / "p.db").execute("SELECT count(*) FROM judge_verdicts").fetchone()[0]
        assert 4 <= kept < 40
        resumed = _run(db, server, 2)
        assert (resumed.already_done, resumed.calls) == (kept, 40 - kept)
        keys = Counter(db.execute("SELECT query_id, doc_id FROM judge_verdicts").fetchall())
        assert len(keys) == 40 and set(keys.values()) == {1}
        assert server.count <= 40 + 4  # at most the calls in flight at the death were asked twice
    finally:
        server.close()


def _descendants(pid: int) -> list[int]:
    """The processes descended from ``pid`` (Linux: read from /proc): the workers, the fork server."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children = [child for child, p in parents.items() if p == parent]
        found += children
        todo += children
    return found


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")
def test_a_killed_run_with_workers_resumes_each_item_once_and_its_workers_end(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    make_project(path, n_queries=4, per_query=10).close()
    server = JudgeServer(delay=0.05)
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", "from labeler.cli import main; main()", "run-judge", str(path), "--judge", "j1",
               "--model", "m1", "--base-url", server.url, "--timeout", "5", "--concurrency", "3", "--workers", "2"]
    try:
        process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        db = connect(path)
        deadline = time.monotonic() + 60
        while db.execute("SELECT count(*) FROM judge_verdicts").fetchone()[0] < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        workers = _descendants(process.pid)
        process.send_signal(signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 30
        while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(workers) >= 3 and all(_gone(pid) for pid in workers)  # no worker outlives a killed run
        done_before = db.execute("SELECT count(*) FROM judge_verdicts").fetchone()[0]
        assert 8 <= done_before < 40
        resumed = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        assert f"{done_before} already done" in resumed.stdout
        keys = Counter(db.execute("SELECT query_id, doc_id FROM judge_verdicts").fetchall())
        assert len(keys) == 40 and set(keys.values()) == {1}
        # Asked twice at most: the 3 calls in flight at the kill, and the replies that had arrived and
        # were not yet committed (on their way up a worker's pipe, or read during the write the kill cut
        # short): one for each call in flight at most, unless a write is slow.
        assert 40 <= server.count <= 40 + 3 + 3
    finally:
        server.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")
def test_ctrl_c_to_the_whole_group_keeps_what_arrived_ends_the_workers_and_says_how_to_resume(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    make_project(path, n_queries=1, per_query=6).close()
    server = JudgeServer()
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = ["run-judge", str(path), "--judge", "j1", "--model", "m1", "--base-url", server.url, "--concurrency", "2",
            "--workers", "2", "--timeout", "30"]
    command = [sys.executable, "-c", "from labeler.cli import main; main()", *args]
    try:
        server.script = ["", "", "", "hold", "hold"]  # three answered, then both calls in flight held
        process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        assert server.wait_for(5)
        db = connect(path)
        deadline = time.monotonic() + 30
        while db.execute("SELECT count(*) FROM judge_verdicts").fetchone()[0] < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        tree = _descendants(process.pid)
        os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: every process of the group
        out, err = process.communicate(timeout=30)
        assert process.returncode == 130, err
        assert "Interrupted: 3 verdicts kept this run; 3 of 6 done in all." in err
        assert "Traceback" not in err
        assert "--workers 2" in err.splitlines()[-1]  # the command that resumes
        deadline = time.monotonic() + 30
        while not all(_gone(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(tree) >= 3 and all(_gone(pid) for pid in tree)  # the workers and their fork server ended
        again = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=60)
        assert again.returncode == 0, again.stderr
        assert "3 already done, 0 from the cache, 3 calls" in again.stdout
    finally:
        server.close()

"""SIGTERM to ``goldpool serve`` (a service manager, ``kill``, a container stop) stops its
Streamlit child too: the app never outlives the command that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from browser_helpers import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
def test_sigterm_to_serve_stops_the_streamlit_child(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    cli = [sys.executable, "-c", "from labeler.cli import main; main()"]
    db = tmp_path / "p.db"
    subprocess.run([*cli, "init", str(db)], check=True, env=env, capture_output=True)
    port = free_port()
    # A session of its own: the signal goes to the serve process alone, not to a process group.
    serve = subprocess.Popen([*cli, "serve", str(db), "--port", str(port)], env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(serve, f"http://127.0.0.1:{port}/_stcore/health")
        [child] = _children(serve.pid)
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(30) == 0  # stopped as asked: not an error
        deadline = time.monotonic() + 15
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(child), "the Streamlit child outlived serve"
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)

"""Demo start-up: seconds from ``goldpool demo`` to the first item on screen, ready to label.

    python bench/demo.py [--checkout PATH] [--runs 3]

Each run starts ``goldpool demo`` on a fresh project folder (no database, no embedding cache
of its own) from the checkout given (default: this one; for a fresh-clone figure, clone the
repository and pass its path), reads an annotator's token from its output, and signs in with
headless Chromium; the clock stops when the grade buttons of the first item are drawn. Prints
each run and the median. Needs ``chromium`` on the PATH (Debian's package) and Playwright (the test extras).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium")
TOKEN_LINE = re.compile(r"^\s+alice\s+(\S+)\s*$")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _watch(stream, lines: list[str]) -> None:  # noqa: ANN001 - a text pipe
    for line in stream:
        lines.append(line)


def one_run(checkout: Path, folder: Path) -> float:
    from playwright.sync_api import expect, sync_playwright

    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    goldpool = Path(sys.executable).with_name("goldpool")
    began = time.perf_counter()
    demo = subprocess.Popen(
        [str(goldpool), "demo", "--dir", str(folder), "--port", str(port), "--no-progress"],
        cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    lines: list[str] = []
    threading.Thread(target=_watch, args=(demo.stdout, lines), daemon=True).start()
    try:
        token = None
        while token is None:
            if demo.poll() is not None:
                raise SystemExit("goldpool demo stopped:\n" + "".join(lines))
            token = next((m.group(1) for m in map(TOKEN_LINE.match, lines) if m), None)
            time.sleep(0.05)
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1):
                    break
            except OSError:
                time.sleep(0.05)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_label("Access token").fill(token)
            page.keyboard.press("Enter")
            expect(page.get_by_role("button", name=re.compile(r"^3 · "))).to_be_visible(timeout=300_000)
            seconds = time.perf_counter() - began
            browser.close()
        return seconds
    finally:
        os.killpg(demo.pid, signal.SIGTERM)
        try:
            demo.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="goldpool checkout to run the demo from")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if CHROMIUM is None:
        parser.error("no `chromium` on the PATH (apt-get install chromium)")
    times = []
    for n in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory() as tmp:
            seconds = one_run(args.checkout.resolve(), Path(tmp) / "goldpool-demo")
        times.append(seconds)
        print(f"run {n}: {seconds:.1f} s from `goldpool demo` to the first item ready to label", flush=True)
    print(f"median of {len(times)}: {statistics.median(times):.1f} s")


if __name__ == "__main__":
    main()

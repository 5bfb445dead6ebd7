"""Sign-in benchmark: 1, 8 and 16 annotators sign in together, in real Chromium, against
``goldpool serve``; how long until each sees their first item, and where the server's time
goes.

    python bench/sign_in.py [--annotators 1 8 16] [--out bench/out/sign_in.json]

Project: the labelling benchmark's (``bench/labelling.py``: 1,000 queries x 100 pool entries,
50k labels by eight annotators, one of whom has just been handed a batch) with 16 more
annotators who have never labelled. For each
count N, on a fresh copy of it: N browser pages (each its own cookie jar) open the sign-in
form and type their token; then Enter is pressed in all of them at once. Measured in each
page: from its Enter to its first item on screen (the item frame drawn). Then each presses a
grade key once: from the key to the next item on screen.

Server side, ``bench/probe/sitecustomize.py`` (loaded into the Streamlit process) times each
script run and, inside it, the calls a sign-in goes through: connect, token check (scrypt),
session record, signed-in checks, open tasks, first item (the hand-out; an adaptive decision
is made inside it), counts, preference, rubric. ``other`` is the run's time outside them
(Streamlit and the page's own code). The sign-in run is the one that checked a token; a key
run the one that recorded a label.

Needs Chromium (``chromium`` on the PATH) and Playwright, as the browser tests do. The
machine is shared: compare the numbers with each other, not across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import labelling  # noqa: E402 - the labelling benchmark's project
from labeler.retrieval import scheduling  # noqa: E402
from labeler.store import connect  # noqa: E402
from labeler.store import access  # noqa: E402

NEW_ANNOTATORS = 16
TIMEOUT_MS = 300_000
IDLE = "document.querySelector('[data-testid=\"stApp\"]').getAttribute('data-test-script-state') === 'notRunning'"

# In a page: the time of the Enter (or grade key), set just before it is pressed, and of the
# next item frame drawn after it.
WATCH = r"""(frame) => {
  window.__gp = {pressed: null, shown: null};
  const seen = () => {
    const f = document.querySelector(frame);
    return f ? f.textContent : null;
  };
  const before = seen();
  new MutationObserver(() => {
    const now = seen();
    if (window.__gp.pressed !== null && window.__gp.shown === null && now !== null && now !== before) {
      window.__gp.shown = performance.now();
    }
  }).observe(document.body, {childList: true, subtree: true, characterData: true});
}"""
FRAME = '[data-testid="stMain"] .gp-frame, [data-testid="stMain"] .gp-chunk'


def build(path: Path) -> list[str]:
    """The labelling benchmark's project plus ``NEW_ANNOTATORS`` new annotators; their tokens.

    One of the eight asks for work once, as in a project under way: the hand-out finds the
    first open query and stores it, so a newcomer's first hand-out starts there instead of
    scanning the 500 finished queries (what only the project's very first hand-out does).
    """
    people = labelling.build(path)
    db = connect(path)
    scheduling.next_item(db, people[0])
    tokens = [access.add_annotator(db, f"newcomer{n}")[1] for n in range(NEW_ANNOTATORS)]
    db.close()
    return tokens


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(project: Path, probe: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "GOLDPOOL_PROBE": str(probe),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "bench" / "probe"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    goldpool = Path(sys.executable).with_name("goldpool")
    server = subprocess.Popen([str(goldpool), "serve", str(project), "--port", str(port)], env=env,
                              stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "_stcore/health", timeout=2):
                return server, url
        except OSError:
            time.sleep(0.25)
    raise SystemExit(f"goldpool serve did not start; see {log}")


def stop(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)


def _timed_presses(pages: list, key: str) -> list[float]:
    """Install the watch in every page, press ``key`` in all of them, then wait for each page's
    next item; seconds from each page's key to its item."""
    for page in pages:
        page.evaluate(WATCH, FRAME)
    for page in pages:
        page.evaluate("window.__gp.pressed = performance.now()")
        page.keyboard.press(key)
    took = []
    for page in pages:
        page.wait_for_function("window.__gp.shown !== null", timeout=TIMEOUT_MS)
        took.append(page.evaluate("(window.__gp.shown - window.__gp.pressed) / 1000"))
    return took


def browsers(url: str, tokens: list[str]) -> dict[str, list[float]]:
    """Sign ``tokens`` in together, then press one grade key in each page."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            pages = []
            for token in tokens:
                page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
                page.set_default_timeout(TIMEOUT_MS)
                page.goto(url)
                page.get_by_label("Access token").fill(token)
                pages.append(page)
            for page in pages:  # every form drawn and quiet before the Enter
                page.wait_for_function(IDLE)
            sign_in = _timed_presses(pages, "Enter")
            for page in pages:
                page.wait_for_function(IDLE)
            key = _timed_presses(pages, "1")
            for page in pages:  # the key's run has ended, and the server has written its times
                page.wait_for_function(IDLE)
            return {"sign_in": sign_in, "key": key}
        finally:
            browser.close()


def server_profile(probe: Path) -> dict[str, dict[str, float]]:
    """Per kind of run (sign-in, key): mean seconds per run of each phase, and of the run."""
    runs: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for line in probe.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        runs[event["run"]][event["phase"]] += event["s"]
    kinds: dict[str, list[dict[str, float]]] = defaultdict(list)
    for phases in runs.values():
        if "run" not in phases:
            continue
        kind = "sign_in" if "token check" in phases else "key" if "key: record" in phases else None
        if kind:
            phases["other"] = phases["run"] - sum(s for p, s in phases.items() if p not in ("run", "other"))
            kinds[kind].append(phases)
    profile = {}
    for kind, found in kinds.items():
        names = sorted({p for phases in found for p in phases}, key=lambda p: (p == "run", p))
        profile[kind] = {"runs": len(found), **{p: round(sum(ph.get(p, 0.0) for ph in found) / len(found), 4) for p in names}}
    return profile


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 3), "max": round(ordered[-1], 3), "mean": round(statistics.fmean(ordered), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, nargs="+", default=[1, 8, 16])
    parser.add_argument("--out", type=Path, default=OUT / "sign_in.json")
    args = parser.parse_args()
    if max(args.annotators) > NEW_ANNOTATORS:
        raise SystemExit(f"at most {NEW_ANNOTATORS} annotators")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.db"
        began = time.perf_counter()
        tokens = build(base)
        print(f"project built in {time.perf_counter() - began:.0f} s", flush=True)
        for n in args.annotators:
            project, probe = Path(tmp) / f"n{n}.db", Path(tmp) / f"probe{n}.jsonl"
            shutil.copy(base, project)
            server, url = serve(project, probe, Path(tmp) / f"serve{n}.log")
            try:
                seen = browsers(url, tokens[:n])
            finally:
                stop(server)
            results[n] = {"browser_s": {kind: _summary(v) for kind, v in seen.items()},
                          "server_s_per_run": server_profile(probe)}
            print(json.dumps({n: results[n]}, indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

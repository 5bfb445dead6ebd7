"""Claims page benchmark: from a key press to the next claim on screen, in a real browser.

    python bench/claims_page.py [--presses 120] [--answers 50]

A project with ``--answers`` answers of one system, three claims each (one word for word in
the response, one re-spaced, one not in it), two contexts of about 5,000 characters per
answer and a reference, is served by ``goldpool serve`` and opened in headless Chromium
(Debian's ``chromium`` on the PATH) at 1400x900. One annotator presses the claims page's keys
(``1``, ``0``, ``x`` in turn) ``--presses`` times, waiting each time until the page is still
before the next key. Per press, measured in the page from the keydown event:

- ``drawn``: until the frame after the next item's element replaced the old one (what the
  annotator sees as "the next claim is there");
- ``ready``: until the app's run is over as well (the page is still: a key pressed now acts
  at once instead of being held by the key guard).

Batches of claims are handed out as the annotator works (``batch_size`` of the project), so
some presses include a hand-out. Every press must be recorded: the bench checks the verdict
count afterwards. p50, p95 and max go to stdout and ``bench/out/claims_page.json``.

The machine is shared: compare the numbers with each other, not across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
sys.path.insert(0, str(ROOT))

from labeler.generation.answers import import_answers  # noqa: E402
from labeler.store import connect, init_db  # noqa: E402
from labeler.store import access, labels  # noqa: E402
from labeler.store.access import OWNER  # noqa: E402
# The browser's flags, the keydown clock and the wait for the next item: labelling_scale's (bench/ is the script's folder).
from labelling_scale import CHROMIUM_ARGS, KEY_CLOCK, WAIT_NEXT  # noqa: E402

FILLER = "The delta spreads over a wide plain where the water slows and drops its silt. "
SYSTEM = "bench-system"
KEYS = ("1", "0", "x")


def build(path: Path, n_answers: int) -> str:
    """The project; returns the annotator's token."""
    db = init_db(path)
    records = []
    for k in range(n_answers):
        first = f"River {k} is long."
        records.append({
            "answer_id": f"a{k}", "question": f"How long is river {k}, and where does it end?",
            "response": f"{first} It  crosses THREE\ncountries. It ends in a delta. " + FILLER * 6,
            "contexts": [f"Context one of river {k}. " + FILLER * 62, f"Context two of river {k}. " + FILLER * 62],
            "reference": f"River {k} is 6,650 km long.",
            "claims": [first, "it crosses three countries.", f"River {k} is blue."],
        })
    answers = path.parent / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    import_answers(db, answers, SYSTEM, caller=OWNER)
    labels.set_settings(db, {"tasks": "claims"}, caller=OWNER)
    _, token = access.add_annotator(db, "bench")
    db.close()
    return token


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(path: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``goldpool serve`` on the project, once it answers its health check."""
    port = free_port()
    goldpool = Path(sys.executable).with_name("goldpool")
    env = {k: v for k, v in os.environ.items() if k != "GOLDPOOL_DB"} | {"PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([str(goldpool), "serve", str(path), "--port", str(port)], env=env,
                              stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return server, url
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.25)
    os.killpg(server.pid, signal.SIGTERM)
    raise SystemExit(f"goldpool serve did not start; see {log}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values), 1), "p95": round(percentile(values, 0.95), 1),
            "max": round(max(values), 1), "mean": round(statistics.fmean(values), 1)}


def measure(url: str, token: str, presses: int) -> tuple[list[float], list[float]]:
    from playwright.sync_api import expect, sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("needs Debian's chromium on the PATH (apt-get install chromium)")
    drawn: list[float] = []
    ready: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
            expect.set_options(timeout=60_000)
            page.add_init_script(KEY_CLOCK)
            page.goto(url + "claims")
            page.get_by_label("Access token").fill(token)
            page.keyboard.press("Enter")
            expect(page.get_by_text("Claims: judged 0 of")).to_be_visible()
            app = page.get_by_test_id("stApp")
            for n in range(presses):
                expect(app).to_have_attribute("data-test-script-state", "notRunning")
                expect(page.locator(".gp-answer")).to_have_count(1)
                before = page.locator(".gp-answer").inner_html()
                page.evaluate(WAIT_NEXT, ['.gp-answer', before, f'judged {n + 1} of'])
                page.keyboard.press(KEYS[n % len(KEYS)])
                times = page.evaluate("window.__gpNext")
                if times is None:
                    raise SystemExit(f"key press {n + 1}: the next claim did not come within a minute")
                shown, still = times
                drawn.append(shown)
                ready.append(still)
        finally:
            browser.close()
    return drawn, ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=120)
    parser.add_argument("--answers", type=int, default=50, help="answers of three claims each (at least presses / 3 + 1)")
    args = parser.parse_args()
    if args.answers * 3 <= args.presses:
        parser.error("give more answers than presses / 3: every press needs a claim after it")
    with tempfile.TemporaryDirectory(prefix="goldpool-claims-bench-") as scratch:
        path = Path(scratch) / "project.db"
        token = build(path, args.answers)
        server, url = serve(path, Path(scratch) / "serve.log")
        try:
            drawn, ready = measure(url, token, args.presses)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        with connect(path) as db:
            recorded = db.execute("SELECT count(*) FROM human_verdicts").fetchone()[0]
    if recorded != args.presses:
        raise SystemExit(f"{recorded} verdicts recorded for {args.presses} key presses")
    result = {"presses": args.presses, "claims": args.answers * 3, "recorded": recorded,
              "drawn_ms": summary(drawn), "ready_ms": summary(ready)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "claims_page.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"claims page, {args.presses} key presses, 1400x900, two 5,000-character contexts per claim")
    for name, what in (("drawn_ms", "key -> next claim drawn"), ("ready_ms", "key -> page still (next key acts at once)")):
        s = result[name]
        print(f"  {what:45s} p50 {s['p50']:7.1f} ms  p95 {s['p95']:7.1f} ms  max {s['max']:7.1f} ms")


if __name__ == "__main__":
    main()

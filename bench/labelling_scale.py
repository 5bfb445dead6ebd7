"""Labelling at scale: key -> next item on the Claims and relevance pages, 1k vs 100k answers.

    python bench/labelling_scale.py [--presses 100] [--small 1000 100] [--large 100000 10000]
                                    [--runs 3] [--work DIR] [--checkout PATH] [--profile 30]

Two projects are built through the command line (``bench/scale_project.py``): a small one
(``--small ANSWERS QUERIES``: 1,000 answers, a 10,000-entry pool) and a large one (100,000
answers of two systems, 300,000 claims; a 1,000,000-entry pool), each with 30% of the claims
and of the pool already done by another annotator. Each is served by ``goldpool serve`` and
opened in headless Chromium (Debian's ``chromium``) at 1400x900, as the browser tests do:

- sign-in -> first item: the Enter in the sign-in form until the first item is drawn, on
  the Claims page (``/claims``) and on the relevance page (``/labelling``), each a fresh
  annotator, so it includes their first hand-out; and for the admin, Enter -> the Progress
  page drawn whole;
- key -> next item: ``--presses`` keys on each page (``1``, ``0``, ``x`` on Claims; ``0``-``3``
  on relevance), waiting each time until the page is still; from the keydown until the frame
  after the next item is drawn (``drawn``) and until the app's run is over (``ready``).

Every press must be recorded (checked in the database afterwards). Each project is measured
``--runs`` times, small and large in turn; printed: p50, p95 and max per project and the
large/small ratio within a run, as the median over the runs with their range, in one table;
written to ``bench/out/labelling_scale.json``. ``--profile N`` then serves each project again
with every script run profiled (cProfile, ``bench/profile_probe``) for N presses per page (and
the sign-ins before them) and prints the top entries. ``--checkout``
runs another checkout's code (build and serve), to measure before and after a change on the
same machine. ``--work`` keeps the built projects (and reuses those found there).

The machine is shared: compare numbers of one run with each other, not across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_project

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 120_000

# Runs before any script of the page, so it sees every keydown before the key guard takes it.
KEY_CLOCK = "window.addEventListener('keydown', () => { window.__gpKeyAt = performance.now(); }, true);"

# Resolves once the item element (``selector``) differs from ``before`` and a progress line
# holds ``counted`` (a frame later: the frame that paints it), then once the app's run is
# over: [drawn, ready] in ms after the last keydown. Gives up (null) after two minutes.
WAIT_NEXT = """([selector, before, counted]) => { window.__gpNext = new Promise((resolve) => {
  setTimeout(() => resolve(null), 120000);
  const app = () => document.querySelector('[data-testid="stApp"]');
  const item = () => { const e = document.querySelector(selector); return e ? e.innerHTML : null; };
  const isCounted = () => counted === null || Array.from(document.querySelectorAll('[data-testid="stProgress"]'))
      .some((p) => (p.parentElement.textContent || '').includes(counted));
  let drawn = null;
  const check = () => {
    if (drawn === null && item() !== null && item() !== before && isCounted()) {
      drawn = -1;
      requestAnimationFrame(() => { drawn = performance.now(); check(); });
    }
    if (drawn > 0 && app().getAttribute('data-test-script-state') === 'notRunning') {
      observer.disconnect();
      resolve([drawn - window.__gpKeyAt, performance.now() - window.__gpKeyAt]);
    }
  };
  const observer = new MutationObserver(check);
  observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
  check();
}); }"""

#: Per page: address, person, item element, the progress text after n presses, keys.
PAGES = {
    "claims": ("claims", "bench-claims", '[data-testid="stMain"] .gp-answer', "judged {n:,} of", ("1", "0", "x")),
    "relevance": ("labelling", "bench-relevance", '[data-testid="stMain"] .gp-frame', "you: {n:,} labelled",
                  ("0", "1", "2", "3")),
}
#: What the Progress page draws last (its last heading: on a large project the section under it
#: is computed on request).
PROGRESS_DONE = "Agreement on the overlap"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(checkout: Path, db: Path, log: Path, profile: Path | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """``goldpool serve`` of ``checkout`` on ``db``, once it answers its health check."""
    port = _free_port()
    path = [str(ROOT / "bench" / "profile_probe")] if profile else []
    env = {k: v for k, v in os.environ.items() if k not in ("GOLDPOOL_DB", "GOLDPOOL_PROFILE")}
    env |= {"PYTHONPATH": os.pathsep.join([*path, str(checkout)])} | ({"GOLDPOOL_PROFILE": str(profile)} if profile else {})
    server = subprocess.Popen([str(scale_project.GOLDPOOL), "serve", str(db), "--port", str(port)], env=env,
                              stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return server, url
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.25)
    os.killpg(server.pid, signal.SIGTERM)
    raise SystemExit(f"goldpool serve did not start; see {log}")


def stop(server: subprocess.Popen[bytes]) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def _idle(page) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")


def _next(page, selector: str, counted: str | None, key: str) -> tuple[float, float]:
    """Press ``key``; ms until the next item is drawn, and until the page is still."""
    item = page.locator(selector)
    before = item.first.inner_html() if item.count() else None
    page.evaluate(WAIT_NEXT, [selector, before, counted])
    page.keyboard.press(key)
    times = page.evaluate("window.__gpNext")
    if times is None:
        raise SystemExit(f"{key!r}: the next item did not come within two minutes")
    return times[0], times[1]


def label_page(browser, url: str, token: str, task: str, presses: int) -> dict[str, object]:
    """Sign in on the task page, then press its keys: the times, in ms."""
    address, _, selector, counted, keys = PAGES[task]
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.add_init_script(KEY_CLOCK)
    page.goto(url + address)
    page.get_by_label("Access token").fill(token)
    _idle(page)
    first = _next(page, selector, counted.format(n=0), "Enter")
    drawn, ready = [], []
    for n in range(presses):
        _idle(page)
        shown, still = _next(page, selector, counted.format(n=n + 1), keys[n % len(keys)])
        drawn.append(shown)
        ready.append(still)
    page.context.close()
    return {"sign_in_ms": round(first[0], 1), "drawn": drawn, "ready": ready}


def progress_page(browser, url: str, token: str) -> float:
    """The admin's Enter in the sign-in form until the Progress page is drawn whole, in ms."""
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.add_init_script(KEY_CLOCK)
    page.goto(url)
    page.get_by_label("Access token").fill(token)
    _idle(page)
    page.keyboard.press("Enter")
    page.get_by_text(PROGRESS_DONE, exact=True).wait_for()
    _idle(page)
    took = page.evaluate("performance.now() - window.__gpKeyAt")
    page.context.close()
    return round(took, 1)


def recorded(db: Path) -> tuple[int, int]:
    """(verdicts, labels) the two bench annotators made."""
    with sqlite3.connect(db) as conn:
        ids = dict(conn.execute("SELECT name, id FROM annotators"))
        verdicts = conn.execute("SELECT count(*) FROM human_verdicts WHERE annotator_id = ?", [ids["bench-claims"]]).fetchone()[0]
        labels = conn.execute("SELECT count(*) FROM judgments WHERE annotator_id = ?", [ids["bench-relevance"]]).fetchone()[0]
    return verdicts, labels


def measure(checkout: Path, built: Path, scratch: Path, presses: int, profile: Path | None = None) -> dict[str, object]:
    """Serve a fresh copy of the built project and drive both pages, then (unless profiled:
    the profile is of key presses) the Progress page."""
    from playwright.sync_api import expect, sync_playwright

    db = scratch / "run.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copy(built / "project.db", db)
    tokens = json.loads((built / "tokens.json").read_text(encoding="utf-8"))
    server, url = serve(checkout, db, scratch / "serve.log", profile)
    try:
        with sync_playwright() as playwright:
            expect.set_options(timeout=TIMEOUT_MS)
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS,
                                                 headless=True)
            try:
                result: dict[str, object] = {task: label_page(browser, url, tokens[PAGES[task][1]], task, presses)
                                             for task in PAGES}
                if profile is None:
                    result["progress_ms"] = progress_page(browser, url, tokens["bench-admin"])
            finally:
                browser.close()
    finally:
        stop(server)
    if recorded(db) != (presses, presses):
        raise SystemExit(f"{recorded(db)} verdicts and labels recorded for {presses} key presses on each page")
    return result


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values), 1), "p95": round(percentile(values, 0.95), 1),
            "max": round(max(values), 1)}


def top_entries(profile: Path, limit: int = 10) -> list[str]:
    """Over every profiled script run: the store's functions with the most cumulative time (where
    the queries are), then every function by its own time (sqlite3's ``execute`` among them)."""
    files = sorted(profile.glob("run-*.pstats"))
    if not files:
        return []
    stats = pstats.Stats(*map(str, files)).stats  # type: ignore[attr-defined]
    rows = [(cumulative, own, calls, file, line, name) for (file, line, name), (_, calls, own, cumulative, _) in stats.items()]

    def shown(row: tuple[float, float, int, str, int, str]) -> str:
        cumulative, own, calls, file, line, name = row
        where = f"labeler/{file.split('/labeler/', 1)[1]}:{line}" if "/labeler/" in file else Path(file).name
        return f"{cumulative:8.3f} s cum {own:7.3f} s own {calls:7d} calls  {where} {name}"

    store = sorted((r for r in rows if "/labeler/store/" in r[3]), reverse=True)[:limit]
    own = sorted(rows, key=lambda r: r[1], reverse=True)[:limit]
    return ["store functions by cumulative time:", *map(shown, store), "all functions by own time:", *map(shown, own)]


def _spread(values: list[float], digits: int = 1) -> str:
    """The median of one figure over the runs, and its range when there are several."""
    middle = f"{statistics.median(values):.{digits}f}"
    return middle if len(values) == 1 else f"{middle} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def _table(runs: list[dict[str, dict[str, object]]]) -> list[str]:
    """p50, p95 and max of key -> next item drawn per page and project, and the large/small
    ratio of each (taken within each run), as the median over the runs [min-max]."""
    lines = [f"key -> next item drawn, ms; median over {len(runs)} run(s) [min-max]"]
    for task in PAGES:
        for size in ("small", "large"):
            figures = [summary(run[size][task]["drawn"]) for run in runs]
            first = [run[size][task]["sign_in_ms"] for run in runs]
            lines.append(f"{task:10s} {size:6s} sign-in->1st {_spread(first, 0):>18s}  "
                         + "  ".join(f"{q} {_spread([f[q] for f in figures]):>22s}" for q in ("p50", "p95", "max")))
        ratios = [(summary(run["large"][task]["drawn"]), summary(run["small"][task]["drawn"])) for run in runs]
        lines.append(f"{task:10s} {'ratio':6s} {'':31s}  "
                     + "  ".join(f"{q} {_spread([a[q] / b[q] for a, b in ratios], 2):>22s}" for q in ("p50", "p95", "max")))
    for size in ("small", "large"):
        lines.append(f"progress page, admin Enter -> drawn, {size}: {_spread([run[size]['progress_ms'] for run in runs], 0)} ms")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=100)
    parser.add_argument("--small", type=int, nargs=2, default=[1000, 100], metavar=("ANSWERS", "QUERIES"))
    parser.add_argument("--large", type=int, nargs=2, default=[100_000, 10_000], metavar=("ANSWERS", "QUERIES"))
    parser.add_argument("--done", type=float, default=0.3)
    parser.add_argument("--work", type=Path, default=None, help="keep the built projects here (reused if found)")
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--runs", type=int, default=3, help="measurements of each project, in turn")
    parser.add_argument("--profile", type=int, default=0, help="presses per page of a profiled pass (0: none)")
    parser.add_argument("--out", type=Path, default=OUT / "labelling_scale.json")
    args = parser.parse_args()
    if shutil.which("chromium") is None:
        raise SystemExit("needs Debian's chromium on the PATH (apt-get install chromium)")
    checkout = args.checkout.resolve()
    sizes = {"small": args.small, "large": args.large}
    with tempfile.TemporaryDirectory(prefix="goldpool-scale-bench-") as tmp:
        work = args.work or Path(tmp)
        built = {size: work / f"{answers}-{queries}" for size, (answers, queries) in sizes.items()}
        for size, (answers, queries) in sizes.items():
            if not (built[size] / "tokens.json").exists():
                print(f"building the {size} project ({answers:,} answers, {queries * scale_project.DEPTH:,} pool entries)")
                scale_project.build(built[size], answers, queries, args.done, checkout)
        runs = []
        for n in range(args.runs):  # small and large in turn, so the machine's moods fall on both
            runs.append({size: measure(checkout, built[size], Path(tmp), args.presses) for size in sizes})
            print(f"run {n + 1} of {args.runs} measured", flush=True)
        profiles: dict[str, list[str]] = {}
        for size in sizes if args.profile else ():
            folder = Path(tmp) / f"profile-{size}"
            folder.mkdir()
            measure(checkout, built[size], Path(tmp), args.profile, folder)
            profiles[size] = top_entries(folder)
        lines = _table(runs)
    print(f"checkout {checkout}, {args.presses} presses per page, 1400x900")
    print("\n".join(lines))
    for size, entries in profiles.items():
        print(f"\nprofile, {size} project ({args.profile} presses per page and their sign-ins, every script run):")
        print("\n".join(entries))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"checkout": str(checkout), "presses": args.presses, "runs": runs,
                                    "summary": lines, "profile": profiles}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

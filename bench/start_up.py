"""How long `goldpool --help` takes against a bare click group, in the same run.

    python bench/start_up.py [CHECKOUT ...] [--runs N]

Each command runs in a fresh interpreter (this one), in N rounds of one run each; the median of
each and the ratio to the bare group are printed. Given checkouts (an older one, say, made with `git worktree
add`), each is timed from its own source tree with PYTHONPATH, beside this one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BARE = "import click\n@click.group()\ndef g():\n    pass\ng(['--help'], prog_name='g', standalone_mode=False)\n"
HELP = "from labeler.cli import cli\ncli(['--help'], prog_name='goldpool', standalone_mode=False)\n"


def seconds(code: str, checkout: Path | None = None) -> float:
    """One run of ``code`` in a fresh interpreter (from ``checkout``'s source tree when given)."""
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, cwd=checkout or HERE)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    cases = [("bare click group", BARE, None), ("goldpool --help: this checkout", HELP, HERE)]
    cases += [(f"goldpool --help: {c.name}", HELP, c.resolve()) for c in args.checkouts]
    times: list[list[float]] = [[] for _ in cases]
    for _ in range(args.runs):  # rounds: each case once a round, so a slow spell of the machine hits them all
        for i, (_, code, checkout) in enumerate(cases):
            times[i].append(seconds(code, checkout))
    bare = statistics.median(times[0])
    print(f"{'':<32} {'median':>8} {'× bare click':>12}")
    for (label, _, _), took in zip(cases, times, strict=True):
        median = statistics.median(took)
        print(f"{label:<32} {median * 1000:>6.0f}ms {median / bare:>12.2f}")


if __name__ == "__main__":
    main()

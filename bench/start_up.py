"""How long `goldpool --help` takes against a bare click group, in the same run.

    python bench/start_up.py [CHECKOUT ...] [--runs N]

Each command runs in a fresh interpreter (this one), N times; the median of each and the ratio
to the bare group are printed. Given checkouts (an older one, say, made with `git worktree
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


def median_seconds(code: str, runs: int, checkout: Path | None = None) -> float:
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                       cwd=checkout or HERE)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    bare = median_seconds(BARE, args.runs)
    print(f"{'':<32} {'median':>8} {'× bare click':>12}")
    print(f"{'bare click group':<32} {bare * 1000:>6.0f}ms {1:>12.2f}")
    for checkout in [HERE, *args.checkouts]:
        took = median_seconds(HELP, args.runs, checkout.resolve())
        label = "goldpool --help: " + ("this checkout" if checkout == HERE else checkout.name)
        print(f"{label:<32} {took * 1000:>6.0f}ms {took / bare:>12.2f}")


if __name__ == "__main__":
    main()

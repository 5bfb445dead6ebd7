"""The gate's exit code, and whether it wrote --summary and --junit, on each bad input that
tests/test_gate_inputs.py refuses, for the checkout given (this one by default): one line each.

    python bench/gate_inputs.py [CHECKOUT]

Given an older checkout, it shows what the gate did there (its own code, this one's fixtures).
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE
sys.path[:0] = [str(HERE / "tests")]
from gate_fixtures import write_golden, write_runs
tmp = Path(tempfile.mkdtemp())
write_golden(tmp / "golden"); write_runs(tmp, 5)
main = (tmp / "main.trec").read_text().splitlines()
(tmp / "renumbered.trec").write_text("".join(f"{l.split(' ',1)[0].lstrip('q0') or '0'} {l.split(' ',1)[1]}\n" for l in main))
(tmp / "blank.trec").write_text("\n  \n\n"); (tmp / "empty.trec").write_text("")
first = main[0].split(" ")
for name, bad in (("nul", "d\x00x"), ("zero-width", "d\u200bx")):
    (tmp / f"{name}.trec").write_text(" ".join([first[0], "Q0", bad, *first[3:]]) + "\n" + "\n".join(main[1:]) + "\n")
shutil.copytree(tmp / "golden", tmp / "no-manifest"); (tmp / "no-manifest" / "manifest.json").unlink()
BAD = [
    ("no golden query in the candidate", "golden", "main.trec", "renumbered.trec", "nDCG@10"),
    ("no golden query in either", "golden", "renumbered.trec", "renumbered.trec", "nDCG@10"),
    ("a blank run", "golden", "blank.trec", "pr.trec", "nDCG@10"),
    ("an empty run", "golden", "main.trec", "empty.trec", "nDCG@10"),
    ("cutoff 0 of P", "golden", "main.trec", "pr.trec", "P@0"),
    ("cutoff 0 of nDCG", "golden", "main.trec", "pr.trec", "nDCG@0"),
    ("a NUL in a doc id", "golden", "main.trec", "nul.trec", "nDCG@10"),
    ("a zero-width doc id", "golden", "main.trec", "zero-width.trec", "nDCG@10"),
    ("P(rel=9)@10, above the 0-2 scale", "golden", "main.trec", "pr.trec", "P(rel=9)@10"),
    ("an export without its manifest", "no-manifest", "main.trec", "pr.trec", "nDCG@10"),
]
env = {**os.environ, "PYTHONPATH": str(root)}
for case, g, b, c, m in BAD:
    cmd = [sys.executable, "-c", "from labeler.cli import main; main()", "gate", str(tmp / g), "--baseline", str(tmp / b), "--candidate", str(tmp / c), "--metric", m,
           "--summary", str(tmp / "s.md"), "--junit", str(tmp / "j.xml")]
    for f in ("s.md", "j.xml"):
        (tmp / f).unlink(missing_ok=True)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    out = (r.stdout + r.stderr).strip().splitlines()
    last = [l for l in out if l.strip()][-1] if out else ""
    print(f"{case} | {r.returncode} | summary {'yes' if (tmp/'s.md').exists() else 'no'} junit {'yes' if (tmp/'j.xml').exists() else 'no'} | {last[:150]}")
shutil.rmtree(tmp)

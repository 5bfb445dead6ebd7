"""The README's CI workflow: its gate step, run as the shell script GitHub Actions runs, on two
fixture runs of 200 questions (a 5-point and a 2-point drop of nDCG@10)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gate_fixtures import write_golden, write_runs

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _workflow() -> dict:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(# \.github/workflows/golden-gate\.yml\n.*?)```", text, re.DOTALL)
    assert len(blocks) == 1, "README.md must show the golden-gate workflow once"
    return yaml.safe_load(blocks[0])


def _gate_step() -> dict:
    steps = _workflow()["jobs"]["gate"]["steps"]
    found = [s for s in steps if s.get("id") == "gate"]
    assert len(found) == 1
    return found[0]


def _shown_summary() -> str:
    text = README.read_text(encoding="utf-8")
    found = re.search(r"the job summary reads:\n\n```markdown\n(.*?)```", text, re.DOTALL)
    assert found, "README.md must show the gate's job summary"
    return found.group(1)


def _run_step(tmp_path: Path, drop_points: int) -> tuple[subprocess.CompletedProcess[str], str]:
    """The gate step's script, run as Actions runs a `run:` step (bash -e -o pipefail, from the
    checkout), with `goldpool` this tree's CLI; the step summary's text."""
    work = tmp_path / f"drop{drop_points}"
    write_golden(work / "golden")
    write_runs(work, drop_points)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "goldpool"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "import sys; from labeler.cli import main; '
                    f'sys.argv[0] = \'goldpool\'; main()" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    script = work / "step.sh"
    script.write_text(_gate_step()["run"], encoding="utf-8")
    summary = work / "step_summary.md"
    summary.write_text("", encoding="utf-8")  # the runner creates it empty for each step
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    return done, summary.read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_readme_gate_step_fails_a_five_point_drop(tmp_path: Path) -> None:
    done, summary = _run_step(tmp_path, 5)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert summary.startswith("## goldpool gate: FAIL\n")
    assert "| nDCG@10 | **fail** | 0.6664 | 0.6164 | 0.0500 |" in summary
    assert "::error title=goldpool gate::nDCG@10 dropped by 0.050" in done.stdout
    junit = (tmp_path / "drop5" / "gate-junit.xml").read_text(encoding="utf-8")
    assert '<testcase classname="goldpool.gate" name="nDCG@10">' in junit and "<failure " in junit
    # The README shows exactly what the step writes.
    assert summary == _shown_summary()


@pytest.mark.slow
def test_the_readme_gate_step_passes_a_two_point_drop_with_a_warning(tmp_path: Path) -> None:
    done, summary = _run_step(tmp_path, 2)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "warning: nDCG@10: a drop of 0.020 is below the 0.037 this set resolves" in done.stderr
    assert "::warning title=goldpool gate::nDCG@10: a drop of 0.020 is below the 0.037 this set resolves." in done.stdout
    assert summary.startswith("## goldpool gate: PASS\n")
    assert "| nDCG@10 | pass, with a warning |" in summary
    assert "<failure" not in (tmp_path / "drop2" / "gate-junit.xml").read_text(encoding="utf-8")

"""The core imports without Streamlit or torch; the app is a thin layer over it. (Which
module may import which: ``test_import_graph.py``.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

CORE = ["pooling", "calibration", "labeler.store", "labeler.store.labels", "labeler.cli"]


@pytest.mark.parametrize("module", CORE)
def test_core_module_imports_without_streamlit_or_torch(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "heavy = sorted(m for m in ('streamlit', 'torch', 'sentence_transformers') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"{module} imported {result.stdout.strip()}"


def test_every_command_has_help() -> None:
    from click.testing import CliRunner

    from labeler.cli import cli

    runner = CliRunner()
    assert cli.commands, "no commands registered"
    for name, command in cli.commands.items():
        assert command.help, f"`goldpool {name}` has no help text"
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0, result.output
        assert f"goldpool {name}" in result.output
        # The first paragraph of the docstring is what --help says the command does (compared
        # without white space: click may wrap a line at a hyphen).
        summary = "".join(command.help.split("\n\n")[0].split())
        assert summary in "".join(result.output.split()), name


def test_every_command_is_in_the_readme() -> None:
    from pathlib import Path

    from labeler.cli import cli

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    missing = [name for name in cli.commands if f"`{name} " not in readme and f"`{name}`" not in readme]
    assert not missing, f"commands missing from README.md: {missing}"


# Libraries too slow to load at start-up: a command imports them inside the function that
# uses them. sqlite_utils is here too: it loads pandas, and `--help` needs no database.
HEAVY = ("torch", "sentence_transformers", "pandas", "streamlit", "pyarrow", "sqlite_utils", "ray", "openai")


@pytest.mark.parametrize(
    "code",
    [
        "import labeler.cli",
        "from labeler.cli import cli\ntry:\n    cli(['--help'], prog_name='goldpool')\nexcept SystemExit:\n    pass",
    ],
    ids=["import labeler.cli", "goldpool --help"],
)
def test_start_up_imports_no_heavy_library(code: str) -> None:
    report = f"\nimport sys\nprint('LOADED:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    result = subprocess.run([sys.executable, "-c", code + report], capture_output=True, text=True, check=True)
    loaded = result.stdout.rsplit("LOADED:", 1)[1].strip()
    if "--help" in code:
        assert "Usage: goldpool [OPTIONS] COMMAND" in result.stdout and "build-pool" in result.stdout
    assert loaded == "", f"start-up imported {loaded}"


"""The README's command blocks: every command line of a fenced ```bash or ```sh block is known
here, each either run by a test or listed with the reason it cannot run, so a command added to
the README without a test fails this module.

The walk-through runs TO_RUN in README order, each command through ``bash -c`` (globs and
``$(date ...)`` as a shell gives them) with ``goldpool`` this tree's CLI, in one folder holding
the fixture project (:mod:`readme_fixtures`) and against a stub OpenAI-compatible judge on
127.0.0.1: each must exit 0, print no traceback and write every file it names."""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from browser_helpers import free_port, wait_healthy
from judge_server import JudgeServer
from readme_fixtures import MODEL, judge_answer, write_project_files

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def readme_commands() -> list[str]:
    """Every command of the README's ```bash and ```sh blocks, in README order: comments and
    trailing comments dropped, backslash continuations joined."""
    text = README.read_text(encoding="utf-8")
    commands: list[str] = []
    for block in re.findall(r"^```(?:bash|sh)\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
        pending = ""
        for line in block.splitlines():
            if line.lstrip().startswith("#") and not pending:
                continue
            line = re.sub(r"\s+#\s.*$", "", line).rstrip()
            if line.endswith("\\"):
                pending += line[:-1].strip() + " "
                continue
            command = re.sub(r"\s+", " ", (pending + line).strip())
            pending = ""
            if command:
                commands.append(command)
    return commands


#: Commands that cannot run inside a test, with the reason.
NOT_RUNNABLE: dict[str, str] = {
    "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 && .venv/bin/pip install -e '.[test]' && .venv/bin/goldpool demo":
        "installs into a fresh virtual environment: .ci/run runs it",
    ".venv/bin/python -m pytest": "the test suite itself: .ci/run runs it",
    "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu && .venv/bin/pip install -e '.[test]' && .venv/bin/goldpool demo":
        "installs from PyTorch's index into a fresh virtual environment",
    "pip install 'goldpool[ray]'": "installs a package; tests/test_ray_engine.py covers the Ray engine",
    "ray start --head": "starts a Ray cluster head",
    "ray start --address HEAD_IP:6379": "joins a Ray cluster on another machine",
}

#: Commands a test is to run, on the fixture project (to be run by the README walk-through).
TO_RUN: list[str] = [
    "goldpool init project.db",
    "goldpool import-corpus project.db chunks.jsonl",
    "goldpool import-queries project.db questions.jsonl",
    "goldpool import-run project.db my_rag.trec --name my-rag",
    "goldpool build-pool project.db",
    "goldpool add-annotator project.db ada --role admin",
    "goldpool add-annotator project.db ben",
    "goldpool serve project.db",
    "goldpool calibrate project.db --html report.html",
    "goldpool agree human.qrels judge.qrels",
    "goldpool export-judgments project.db -o judgments.jsonl",
    "goldpool agree judgments.jsonl judge.qrels",
    "goldpool agree judgments.jsonl judge.qrels --adjudicated",
    "goldpool plan --n 200 --paired --discordant 0.2 --delta 0.03 --judge-sensitivity 0.74 --judge-specificity 0.70",
    "goldpool import-answers project.db answers.jsonl --system my-rag",
    "goldpool split-claims project.db --system my-rag --sentences",
    "goldpool split-claims project.db --system my-rag --judge splitter-v1 --model M --base-url URL",
    "goldpool answer-metrics project.db",
    "goldpool answer-metrics project.db --judge qwen-v1 --html metrics.html",
    "goldpool import-traces project.db traces.jsonl --system my-rag-prod --batch 2026-W49",
    "goldpool import-traces project.db phoenix_spans.parquet --system my-rag-prod --batch 2026-W50",
    "goldpool export-answers project.db --system my-rag-prod -o sample.jsonl",
    "goldpool sample-answers project.db --system my-rag-prod --n 6 --design stratified --by batch --name weekly",
    "goldpool label-settings project.db answer_sample=weekly",
    "goldpool answer-metrics project.db --system my-rag-prod --by batch --html batches.html",
    "goldpool import-nuggets project.db nuggets.jsonl",
    "goldpool nuggetize project.db --judge nuggetizer-v1 --model M --base-url URL",
    "goldpool run-judge project.db --judge qwen-v1 --model M --base-url URL --task nuggets",
    "goldpool nugget-metrics project.db --judge qwen-v1 --html nuggets.html",
    "goldpool stages project.db@v1 --system my-rag --k 10",
    "goldpool stages project.db@v1 --system old --system new",
    "goldpool gold-context project.db@v1 --system my-rag --base-url URL --model M [--prompt team.txt]",
    "goldpool diagnose project.db@v1 --system my-rag [--add-to-pool] [--html why.html]",
    "awk -v OFS='\\t' '{print $1, $3, $4}' qrels.txt | LC_ALL=C sort | sha256sum",
    "tail -n +2 qrels/test.tsv | LC_ALL=C sort | sha256sum",
    "goldpool import-items project.db items.jsonl",
    "goldpool import-verdicts project.db people.jsonl --annotator alice",
    "OPENAI_API_KEY=... goldpool run-judge project.db --judge qwen-v1 --model qwen2.5-7b --base-url http://127.0.0.1:8000/v1 --task pairwise",
    "goldpool calibrate project.db --judge qwen-v1 --judge umbrela --html judges.html",
    "goldpool estimate project.db --judge qwen-v1 --metric win-rate",
    "goldpool run-judge project.db --judge qwen-v2 --model M --base-url URL --task pairwise --prompt v2.txt --dry-run --price-in 0.15 --price-out 0.60",
    "goldpool run-judge project.db --judge qwen-v2 --model M --base-url URL --task pairwise --prompt v2.txt --repeats 3 --temperature 0.7",
    "goldpool calibrate project.db --judge qwen-v1 --judge qwen-v2 --paired",
    "goldpool disagreements project.db --judge qwen-v2 --html disagreements.html",
    "goldpool jury project.db --judge qwen-v1 --judge qwen-v2 --name panel",
    "goldpool run-judge project.db --judge qwen-v1 --model qwen2.5-7b --base-url URL --task relevance",
    "goldpool plan-sample project.db --name tenth --share 0.1 --design stratified --judge qwen-v1",
    "goldpool label-settings project.db sample=tenth",
    "goldpool freeze project.db --version v1",
    "goldpool eval project.db@v1 runs/*.trec --judge qwen-v1 --sample tenth --metric nDCG@10 --metric P@10 --metric R@10",
    "goldpool compare project.db@v1 runs/a.trec runs/b.trec --judge qwen-v1 --sample tenth --html differences.html",
    "mkdir -p backups",
    "goldpool backup project.db backups/project-$(date +%Y%m%d-%H%M).db",
    "goldpool build-pool project.db --engine ray",
    "goldpool build-pool project.db --engine ray --ray-address auto --num-workers 8 --num-gpus 1 --batch-size 256",
]


def test_every_readme_command_is_known_here() -> None:
    commands = readme_commands()
    known = set(TO_RUN) | set(NOT_RUNNABLE)
    unknown = [c for c in commands if c not in known]
    assert not unknown, f"README commands neither run nor listed as not runnable: {unknown}"
    gone = sorted(known - set(commands))
    assert not gone, f"listed here but no longer in README.md: {gone}"


# --- The walk-through: every command of TO_RUN, in README order, on the fixture project. ---


G = "goldpool"
#: Setup the README does not show, run before the README command it is keyed by (ports, URLs
#: and the model name filled in as for the README's commands).
SETUP_BEFORE: dict[str, list[str]] = {
    "goldpool calibrate project.db --html report.html": [
        f"{G} import-verdicts project.db setup/relevance_alice.jsonl --annotator alice",
        f"{G} import-verdicts project.db setup/relevance_bob.jsonl --annotator bob",
        f"{G} import-verdicts project.db setup/relevance_carol.jsonl --annotator carol",
    ],
    "goldpool answer-metrics project.db": [
        f"{G} import-answers project.db setup/answers_old.jsonl --system old",
        f"{G} import-answers project.db setup/answers_new.jsonl --system new",
        f"{G} split-claims project.db --system old --sentences",
        f"{G} split-claims project.db --system new --sentences",
        f"{G} import-verdicts project.db setup/answer_verdicts_carol.jsonl --annotator carol",
        *(f"{G} run-judge project.db --judge qwen-v1 --model M --base-url URL --task {task}"
          for task in ("claims", "correctness", "answer-relevance", "faithfulness")),
    ],
    # People's support labels on half the questions, for the people's and PPI++'s nugget scores.
    "goldpool nugget-metrics project.db --judge qwen-v1 --html nuggets.html": [
        f"{G} import-verdicts project.db setup/support_carol.jsonl --annotator carol",
    ],
    # The stages section wants a frozen version; the README freezes v1 further down, in the
    # judge-assisted section, where the same grades make no new version.
    "goldpool stages project.db@v1 --system my-rag --k 10": [f"{G} freeze project.db --version v1"],
    "awk -v OFS='\\t' '{print $1, $3, $4}' qrels.txt | LC_ALL=C sort | sha256sum": [
        f"{G} export project.db@v1 --format trec --format beir -o export",
    ],
    # A cold embedding cache, so that the Ray engine encodes (with a warm one it starts no Ray).
    "goldpool build-pool project.db --engine ray": ["rm -rf project.db.cache"],
    "goldpool calibrate project.db --judge qwen-v1 --judge umbrela --html judges.html": [
        f"{G} import-verdicts project.db setup/umbrela.qrels --judge umbrela",
    ],
}
#: The folder a command runs in, when not the project's (the export it reads).
CWD = {
    "awk -v OFS='\\t' '{print $1, $3, $4}' qrels.txt | LC_ALL=C sort | sha256sum": "export",
    "tail -n +2 qrels/test.tsv | LC_ALL=C sort | sha256sum": "export",
}
#: Commands run with the README's optional parts ([...]) left out, and again with them.
OPTIONAL = re.compile(r"\s*\[([^\]]+)\]")


@dataclass
class Step:
    readme: str
    runs: list[str]
    setup: list[str] = field(default_factory=list)


def _filled(command: str, url: str) -> str:
    command = command.replace("http://127.0.0.1:8000/v1", url)
    command = re.sub(r"(?<=--base-url )URL\b", url, command)
    command = re.sub(r"(?<=--model )M\b", MODEL, command)
    return command.replace("OPENAI_API_KEY=...", "OPENAI_API_KEY=test")


def _variants(command: str) -> list[str]:
    if not OPTIONAL.search(command):
        return [command]
    return [re.sub(r"\s+", " ", OPTIONAL.sub("", command)).strip(), OPTIONAL.sub(r" \1", command)]


def steps(url: str) -> list[Step]:
    return [Step(c, [_filled(v, url) for v in _variants(c)], [_filled(s, url) for s in SETUP_BEFORE.get(c, [])])
            for c in TO_RUN]


def test_to_run_is_in_readme_order() -> None:
    order = list(dict.fromkeys(c for c in readme_commands() if c in TO_RUN))
    assert TO_RUN == order
    assert set(SETUP_BEFORE) <= set(TO_RUN) and set(CWD) <= set(TO_RUN)


@dataclass
class Walk:
    root: Path
    env: dict[str, str]
    url: str
    judge: JudgeServer


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("readme")
    bin_dir = root.parent / f"{root.name}-bin"
    bin_dir.mkdir()
    shim = bin_dir / "goldpool"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "import sys; from labeler.cli import main; '
                    f'sys.argv[0] = \'goldpool\'; main()" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    write_project_files(root)
    judge = JudgeServer(answer=judge_answer)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "OPENAI_API_KEY": "test"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    yield Walk(root, env, judge.url, judge)
    judge.close()


_DATE = "$(date +%Y%m%d-%H%M)"
#: Options naming a file the command writes.
_WRITES = re.compile(r"(?:--html|-o|--summary|--junit)\s+(\S+)")


def _written(command: str) -> list[str]:
    command = command.replace(_DATE, "*")  # the name the shell gives is matched as a glob
    names = _WRITES.findall(command)
    words = shlex.split(command.replace("*", "STAR"))
    if words[:2] == [G, "backup"]:
        names.append(words[3].replace("STAR", "*"))
    return names


def _run(walk: Walk, command: str, cwd: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
                          cwd=walk.root / (cwd or ""), env=walk.env, capture_output=True, text=True, timeout=600)


def _serve(walk: Walk, command: str) -> None:
    """A long-running command: up until its health check says ok, then SIGTERM, exit 0."""
    port = free_port()
    proc = subprocess.Popen(["bash", "--noprofile", "--norc", "-c", f"exec {command} --port {port}"], cwd=walk.root,
                            env=walk.env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_healthy(proc, f"http://127.0.0.1:{port}/_stcore/health")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        out = proc.stdout.read()
        assert "Traceback" not in out, out
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _check(walk: Walk, command: str, cwd: str | None) -> subprocess.CompletedProcess[str]:
    expected = _written(command)
    for name in expected:
        for old in glob.glob(str(walk.root / (cwd or "") / name)):
            Path(old).unlink()
    done = _run(walk, command, cwd)
    with (walk.root / "walk.log").open("a", encoding="utf-8") as log:
        log.write(f"$ {command}\nexit {done.returncode}\n{done.stdout}{done.stderr}\n")
    shown = f"$ {command}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, shown
    assert "Traceback" not in done.stdout + done.stderr, shown
    for name in expected:
        pattern = str(walk.root / (cwd or "") / name)
        found = glob.glob(pattern)
        assert found and all(Path(f).stat().st_size > 0 for f in found), f"{command} wrote no {name}\n{shown}"
    return done


def _ray_missing() -> str | None:
    try:
        import ray  # noqa: F401
    except ImportError:
        return "the Ray engine needs the optional extra: pip install 'goldpool[ray]'"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(TO_RUN)), ids=[c[:60] for c in TO_RUN])
def test_readme_command_runs(walk: Walk, index: int) -> None:
    step = steps(walk.url)[index]
    if "--engine ray" in step.readme and (reason := _ray_missing()):
        pytest.skip(reason)
    for command in step.setup:
        _check(walk, command, None)
    for command in step.runs:
        if command.startswith(f"{G} serve "):
            _serve(walk, command)
            continue
        done = _check(walk, command, CWD.get(step.readme))
        if "sha256sum" in command:
            manifest = json.loads((walk.root / "export" / "manifest.json").read_text(encoding="utf-8"))
            assert done.stdout.split()[0] in json.dumps(manifest), (done.stdout, manifest)

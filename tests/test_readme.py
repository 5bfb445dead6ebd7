"""The README's command blocks: every command line of a fenced ```bash or ```sh block is known
here, each either run by a test or listed with the reason it cannot run, so a command added to
the README without a test fails this module."""

from __future__ import annotations

import re
from pathlib import Path

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
    "goldpool estimate project.db --judge qwen-v1 --metric relevant-share",
    "goldpool run-judge project.db --judge qwen-v1 --model qwen2.5-7b --base-url URL --task relevance",
    "goldpool plan-sample project.db --name tenth --share 0.1 --design stratified --judge qwen-v1",
    "goldpool label-settings project.db sample=tenth",
    "goldpool freeze project.db --version v1",
    "goldpool eval project.db@v1 runs/*.trec --judge qwen-v1 --sample tenth --metrics \"nDCG@10,P@10,R@10\"",
    "goldpool compare project.db@v1 runs/a.trec runs/b.trec --judge qwen-v1 --sample tenth",
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

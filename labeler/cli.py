"""The ``goldpool`` command: a thin layer over the library.

Each command parses its arguments, calls one library function, formats the result, and turns
a library error into a one-line message (``click.ClickException``). The project database path
is the first argument of every command that has one. Commands live in
``labeler/commands/`` by stage: pooling, labelling, calibration.
"""

from __future__ import annotations

import click

from labeler.commands import backup as _backup
from labeler.commands import adaptive as _adaptive
from labeler.commands import answer_metrics as _answer_metrics
from labeler.commands import answers as _answers
from labeler.commands import calibrate as _calibrate
from labeler.commands import demo as _demo
from labeler.commands import diagnose as _diagnose
from labeler.commands import gate as _gate
from labeler.commands import judge as _judge
from labeler.commands import judge_assisted as _judge_assisted
from labeler.commands import golden_set as _golden_set
from labeler.commands import label as _label
from labeler.commands import nuggets as _nuggets
from labeler.commands import pool as _pool
from labeler.commands import serve as _serve
from labeler.commands import traces as _traces
from labeler.commands import verdicts as _verdicts


@click.group(name="goldpool", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="goldpool")
def cli() -> None:
    """goldpool: pool, label and calibrate a golden set for RAG evaluation."""


for _module in (_pool, _label, _serve, _backup, _calibrate, _golden_set, _verdicts, _judge, _adaptive, _answers,
                _answer_metrics, _nuggets, _demo, _gate, _diagnose, _judge_assisted, _traces):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    """Console-script entry point."""
    cli()

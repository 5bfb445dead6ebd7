"""Commands of this stage."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []

"""Pieces shared by every command module: the project a command opens, error translation,
JSON and file output, and the options several commands take."""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import click

from labeler.store.vocabulary import RELEVANCE_LEVEL

if TYPE_CHECKING:
    import sqlite_utils

F = TypeVar("F", bound=Callable[..., object])

def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and the noun in the right number: ``1 item``, ``2 items``, ``3 queries``.

    >>> plural(1, "item"), plural(2, "item"), plural(3, "query", "queries")
    ('1 item', '2 items', '3 queries')
    """
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


#: The project database, first argument of every command that has one.
db_argument = click.argument("db", type=click.Path(dir_okay=False))


#: The root error of each package, by module: what a user can fix. Anything else is a bug
#: and keeps its traceback.
ERROR_ROOTS: tuple[tuple[str, str], ...] = (
    ("pooling", "PoolingError"),
    ("calibration", "CalibrationError"),
    ("labeler.store.errors", "StoreError"),
    ("labeler.retrieval.demo", "DemoError"),
)


def _roots() -> tuple[type[Exception], ...]:
    # Only modules already loaded can have raised their error, so nothing is imported here.
    return tuple(getattr(sys.modules[module], name) for module, name in ERROR_ROOTS if module in sys.modules)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the packages' root errors into a one-line ``click.ClickException``."""
    try:
        yield
    except Exception as exc:
        if isinstance(exc, _roots()):
            raise click.ClickException(str(exc)) from exc
        raise


class Project:
    """The project database of one command: opened on first use, closed when the command ends.

    Opening lazily keeps a command's own checks (arguments, input files) ahead of the
    database's, and a command that never needs the database never opens it.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._db: sqlite_utils.Database | None = None

    @property
    def db(self) -> sqlite_utils.Database:
        """The open project (``labeler.store.connect``); StoreError when it is not one."""
        if self._db is None:
            from labeler.store import connect  # lazy: start-up

            self._db = connect(self.path)
        return self._db

    def create(self) -> sqlite_utils.Database:
        """The project, created or brought up to date first (``labeler.store.init_db``)."""
        if self._db is None:
            from labeler.store import init_db  # lazy: start-up

            self._db = init_db(self.path)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            db.close()


def handles_errors(command: F) -> F:
    """Run the command body with the packages' root errors turned into one-line errors."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        with user_errors():
            return command(*args, **kwargs)

    return run  # type: ignore[return-value]


def with_project(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command the DB argument, as a :class:`Project` in its first parameter.

    The body runs with the packages' root errors turned into one-line errors, and the
    project is closed when it ends, whether it returns or raises. Put it right under
    ``@click.command`` so that DB comes first.
    """

    @functools.wraps(command)
    def run(db: str, **kwargs: Any) -> Any:
        project = Project(db)
        with user_errors():
            try:
                return command(project, **kwargs)
            finally:
                project.close()

    return db_argument(run)


def with_golden(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command the GOLDEN argument, ``DB@VERSION`` or ``DB`` (read by
    :func:`labeler.project.parse_golden`), as a :class:`Project` and the version (None: DB alone).

    The old spelling ``DB --version NAME`` still works one release, with a deprecation note.
    Errors and closing as :func:`with_project`. Put it right under ``@click.command``.
    """

    @functools.wraps(command)
    def run(golden: str, deprecated_version: str | None, **kwargs: Any) -> Any:
        from labeler.project import parse_golden  # lazy: start-up

        with user_errors():
            db, version = parse_golden(golden)
        if deprecated_version is not None:
            click.echo("--version is deprecated: use GOLDEN as DB@VERSION", err=True)
            if version is not None:
                raise click.UsageError(f"{golden} names its version already: drop --version")
            version = deprecated_version
        project = Project(db)
        with user_errors():
            try:
                return command(project, version, **kwargs)
            finally:
                project.close()

    run = click.option("--version", "deprecated_version", hidden=True, default=None, metavar="NAME")(run)
    return click.argument("golden", metavar="GOLDEN")(run)


def _finite(value: Any) -> Any:
    """``value`` with every NaN and infinity (also inside lists and dicts) made None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def json_text(data: Any) -> str:
    """``data`` as strict JSON (indented): an undefined number (NaN, infinity) is ``null``.

    Python's ``json`` would write ``NaN``, which JSON readers other than Python's refuse.
    """
    return json.dumps(_finite(data), indent=2, allow_nan=False, default=str)


#: Where :func:`echo_json` puts what it is given while :func:`each_system` gathers several runs.
_json_gathered: list[Any] | None = None


def echo_json(data: Any) -> None:
    """Print ``data`` as strict JSON: the one way a command prints JSON."""
    if _json_gathered is not None:
        _json_gathered.append(data)
        return
    click.echo(json_text(data))


def each_system(help: str, *, one_html: bool = False) -> Callable[[F], F]:
    """``--system NAME``, repeatable: the command body (taking ``system``) runs once per system,
    in the order given. One system prints exactly what it always did; several print one block
    each, a blank line between, and with --json a list of the objects, one per system. With
    ``one_html``, --html takes one system.
    """

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def run(*args: Any, systems: tuple[str, ...], **kwargs: Any) -> Any:
            global _json_gathered
            systems = tuple(dict.fromkeys(systems))
            if len(systems) == 1:
                return command(*args, system=systems[0], **kwargs)
            if one_html and kwargs.get("html_path"):
                raise click.UsageError("--html writes the report of one --system: give one")
            if not kwargs.get("as_json"):
                for i, system in enumerate(systems):
                    if i:
                        click.echo("")
                    command(*args, system=system, **kwargs)
                return None
            _json_gathered = []
            try:
                for system in systems:
                    command(*args, system=system, **kwargs)
                gathered = _json_gathered
            finally:
                _json_gathered = None
            echo_json(gathered)
            return None

        return click.option("--system", "systems", multiple=True, required=True, metavar="NAME",
                            help=help + " Repeat for several: each in turn.")(run)  # type: ignore[return-value]

    return decorate


@contextmanager
def output_file(path: str | Path) -> Iterator[TextIO]:
    """``path`` opened for writing (UTF-8), the one way every command writes a file.

    The text goes to ``<path>.partial``, created exclusively and moved into place only when
    the block succeeds, so a failure never leaves half a file. A path that is a symbolic
    link, a read-only file, or whose ``.partial`` is a link or another user's file is
    refused before anything is written; so is an unwritable path: one line naming it.
    """
    from pooling.files import UnsafeTarget, atomic_write  # lazy: start-up
    try:
        with atomic_write(path) as handle:
            yield handle
    except UnsafeTarget as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot write ({exc.strerror or exc})") from exc


# --- options several commands take -----------------------------------------------------------

#: An input file, second argument of the import commands.
file_argument = click.argument("file", type=click.Path(dir_okay=False))

json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON instead of text.")
html_option = click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
                           help="Also write the result as one self-contained HTML page (works offline).")


def output_option_for(*, folder: bool = False, required: bool = False,
                      help: str = "File to write (default: standard output).") -> Callable[[F], F]:
    """``-o/--output``: the one spelling of what a command writes (a file, or with ``folder`` a folder)."""
    kind = click.Path(file_okay=False) if folder else click.Path(dir_okay=False)
    return click.option("-o", "--output", "output", type=kind, required=required, default=None, help=help)


output_option = output_option_for()


def judge_option(help: str, *, required: bool = False, multiple: bool = False, metavar: str = "NAME") -> Callable[[F], F]:
    """``--judge NAME``: the name a judge's verdicts are stored under; the help says what it does here."""
    if multiple:
        return click.option("--judge", "judges", multiple=True, metavar=metavar, help=help)
    return click.option("--judge", "judge", required=required, default=None, metavar=metavar, help=help)


def endpoint_options(limit_help: str, *, timeout: float = 60.0, max_tokens: int | None = 512) -> Callable[[F], F]:
    """The options of a command that calls a judge's endpoint: --concurrency, --limit (``limit_help``
    says of what), --timeout, --attempts and, unless ``max_tokens`` is None, --max-tokens."""
    options = [
        click.option("--concurrency", type=click.IntRange(min=1, max=256), default=4, show_default=True,
                     help="Calls in flight."),
        click.option("--limit", type=click.IntRange(min=1), default=None, help=limit_help),
        click.option("--timeout", type=click.FloatRange(min=0.1), default=timeout, show_default=True,
                     help="Seconds one attempt may take in all, from connecting to the reply's last byte."),
        click.option("--attempts", type=click.IntRange(min=1), default=5, show_default=True,
                     help="Tries per call on 5xx, rate limits, timeouts and broken replies (exponential backoff; "
                          "a Retry-After header is waited for, up to 60 s)."),
    ]
    if max_tokens is not None:
        options.append(click.option("--max-tokens", type=click.IntRange(min=1), default=max_tokens, show_default=True,
                                    help="Reply budget per call."))

    def apply(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


def _given(value: Any) -> bool:
    return value not in (None, (), False)


def deprecated_alias(old: str, *, into: str, new: str, merge: Callable[[dict[str, Any], Any], None] | None = None,
                     **option: Any) -> Callable[[F], F]:
    """A hidden old spelling ``old`` of option ``new`` (parameter ``into``), kept one release.

    Using it prints one line to standard error (``OLD is deprecated: use NEW``) and passes its
    value on as ``into`` (or through ``merge(kwargs, value)``); giving both spellings is refused.
    """
    dest = "deprecated_" + old.lstrip("-").replace("-", "_")

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(dest)
            if _given(value):
                click.echo(f"{old} is deprecated: use {new}", err=True)
                if _given(kwargs.get(into)):
                    raise click.UsageError(f"give {new} or {old}, not both ({old} is its old spelling)")
                if merge is None:
                    kwargs[into] = value
                else:
                    merge(kwargs, value)
            return command(*args, **kwargs)

        return click.option(old, dest, hidden=True, **option)(run)  # type: ignore[return-value]

    return decorate


def require(value: Any, spelling: str) -> None:
    """A required option that also has a deprecated spelling (so click cannot require it itself)."""
    if not _given(value):
        raise click.UsageError(f"Missing option '{spelling}'.")

seed_option = click.option("--seed", type=int, default=0, show_default=True,
                           help="Seed of the random draws (bootstrap, randomisation test): same seed, same numbers.")
n_boot_option = click.option("--n-boot", type=click.IntRange(min=0), default=2000, show_default=True,
                             help="Bootstrap resamples (0: none).")
host_option = click.option("--host", default="127.0.0.1", show_default=True, help="Address to serve the app on.")
port_option = click.option("--port", default=8501, show_default=True, type=click.IntRange(1, 65535),
                           help="Port to serve the app on.")
no_progress_option = click.option("--no-progress", is_flag=True, help="Hide progress bars.")
per_query_option = click.option("--per-query", is_flag=True, help="Also show each query's numbers.")
run_name_option = click.option("--name", required=True, help="Name of the run; it becomes a pool source.")
relevance_level_option = click.option(
    "--relevance-level", "relevance_level", type=click.IntRange(min=1), default=RELEVANCE_LEVEL,
    show_default=True, metavar="N",
    help="Grade from which a chunk counts as relevant, as trec_eval's -l (the same level for every command).")

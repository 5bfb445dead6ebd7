"""``goldpool serve``: run the Streamlit labelling app on one project database."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import click

from labeler.commands.common import Project, host_option, port_option, with_project

#: The Streamlit entry point ``serve`` runs.
APP_PATH = Path(__file__).resolve().parent.parent / "app.py"

# The same settings as .streamlit/config.toml, passed on the command line so they hold
# whatever directory the app is started from. No usage statistics leave the machine. No full
# garbage collection after every run: it holds every session up for a tenth of a second or
# more on a busy machine, at each key press; Python's own collector still runs as usual.
STREAMLIT_OPTIONS: tuple[str, ...] = (
    "--server.headless=true",
    "--runner.postScriptGC=false",
    "--browser.gatherUsageStats=false",
    "--server.runOnSave=false",
    "--server.fileWatcherType=none",
    "--client.toolbarMode=minimal",
    "--client.showErrorDetails=false",
    "--theme.base=light",
    "--theme.primaryColor=#b8860b",
)


def streamlit_command(host: str, port: int) -> list[str]:
    """The command line that runs the app (without the database, which goes in the environment)."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP_PATH),
        *STREAMLIT_OPTIONS,
        f"--server.address={host}",
        f"--server.port={port}",
    ]


def is_loopback(host: str) -> bool:
    """Whether ``host`` keeps the app on this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: reachable from elsewhere as far as we know


def clear_text_warning(host: str) -> str | None:
    """The warning ``serve`` prints when ``host`` is reachable from the network, else None."""
    if is_loopback(host):
        return None
    return (
        f"Warning: serving on {host}: access tokens and labels travel in clear text (plain HTTP) to "
        "anyone on the network path. For a team, keep the app on 127.0.0.1 behind a TLS reverse "
        "proxy (README: \"Serving a team\")."
    )


def run_app(
    db_path: str | Path, host: str = "127.0.0.1", port: int = 8501, extra_env: Mapping[str, str] | None = None
) -> int:
    """Run the labelling app on ``db_path`` until it stops; return Streamlit's exit code.

    Args:
        db_path: An existing project database.
        host: Address to listen on (``127.0.0.1`` keeps the app on this machine).
        port: TCP port to listen on.
        extra_env: Extra environment variables for the Streamlit process.

    Raises:
        StoreError: ``db_path`` is missing or is not a goldpool project.
    """
    from labeler.store import connect  # lazy: start-up
    from labeler.ui.state import DB_ENV_VAR  # lazy: start-up

    path = Path(db_path).resolve()
    connect(path).close()  # a clear error now beats an error page in the browser later
    warning = clear_text_warning(host)
    if warning:
        click.echo(warning, err=True)
    env = {**os.environ, **(extra_env or {}), DB_ENV_VAR: str(path)}
    return _supervise(subprocess.Popen(streamlit_command(host, port), env=env))


#: How long Streamlit has to shut down after SIGTERM before it is killed.
STOP_GRACE = 10.0


def _supervise(child: subprocess.Popen[bytes]) -> int:
    """Wait for the Streamlit child; SIGTERM (a service manager, ``kill``, a container stop) or
    SIGHUP to this process is passed on to it, so it never outlives the command. Ctrl-C reaches
    the child through the terminal's process group, and both shut down cleanly."""
    import signal

    def stop(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                code = child.wait()
                break
            except KeyboardInterrupt:
                if child.poll() is None:
                    child.send_signal(signal.SIGINT)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if child.poll() is None:
            try:
                child.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    # Stopped by the signal it was passed (or by Ctrl-C): a clean stop, not an error.
    return 0 if code < 0 or code in (130, 143) else code


@click.command()
@with_project
@host_option
@port_option
def serve(project: Project, host: str, port: int) -> None:
    """Run the labelling app on DB (open the printed address in a browser)."""
    code = run_app(project.path, host, port)
    if code:
        raise click.exceptions.Exit(code)


COMMANDS: list[click.Command] = [serve]

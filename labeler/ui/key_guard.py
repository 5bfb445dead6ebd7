"""The browser key guard of the task pages, and the mark it waits for.

The guard's script is ``static/key_guard.js`` (why it holds and replays keys is said there);
this module fills in the selectors of every task page's item buttons and note field, read
from the session keys the flows use (``labeler.ui.flow``), and reads the file once per process.
The app draws :func:`script` in the sidebar of every signed-in page and :func:`handled_mark`
last in every run.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

from labeler.ui import state
from labeler.ui.flow import FLOWS

#: Class of the mark drawn at the end of every run: how many item keys the session handled.
HANDLED_MARK = "gp-keys"

# Item keys: the buttons that answer one key each and move to another item (the choices,
# back `u`, skip `s`) on every task page.
ITEM_BUTTONS = ", ".join(
    [
        *(f'[class*="st-key-{state.choice_key(task, "")}"] button' for task in FLOWS),
        *(f".st-key-{state.task_key(task, part)} button" for task in FLOWS for part in ("back", "skip")),
    ]
)
NOTE_FIELDS = ", ".join(f".st-key-{state.task_key(task, 'note')}" for task in FLOWS)


@cache
def script() -> str:
    """The guard as an HTML ``<script>`` element, ready for ``st.html``."""
    body = files("labeler.ui").joinpath("static", "key_guard.js").read_text(encoding="utf-8")
    for name, value in (("__BUTTONS__", ITEM_BUTTONS), ("__NOTES__", NOTE_FIELDS), ("__MARK__", HANDLED_MARK)):
        body = body.replace(name, json.dumps(value))
    return f"<script>\n{body}</script>"


def handled_mark(count: int) -> str:
    """The hidden mark that tells the key guard how many item keys the server has handled."""
    return f'<span class="{HANDLED_MARK}" data-keys="{int(count)}" hidden></span>'

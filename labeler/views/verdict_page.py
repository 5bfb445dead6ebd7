"""What the faithfulness and pairwise pages share: progress, note, keys, back, skip, rubric.

Keyboard first, on the flow every task page runs (``labeler.flow``): every choice is a
Streamlit button with a one-key shortcut, ``u`` goes back and ``s`` skips, pressed through
the app's key guard (``labeler.key_guard``: keys that come while a run is on its way are
held and replayed in order, never lost); the layout is the same for every item (messages
are toasts) so no button moves and re-binds its key. The annotator sees the item's texts
and their own work only: never a model name, a judge verdict or anyone else's verdict.
Every text is escaped and keeps its white space.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

import sqlite_utils
import streamlit as st

from labeler import state
from labeler.flow import FLOWS, pending
from labeler.store import verdict_queue as queue
from labeler.store.assign import enabled_tasks
from labeler.store.labels import Annotator
from labeler.store.verdict_queue import Card
from labeler.views import busy_wait, on_item_key

#: What a response box shows when the model answered with nothing (or only white space).
EMPTY_RESPONSE = "(empty response)"
BOX = "border:1px solid #ddd;border-radius:6px;padding:0.75rem 1rem;white-space:pre-wrap;overflow-wrap:anywhere;"


@dataclass(frozen=True, slots=True)
class Choice:
    """One verdict button: what it records, its caption and its key."""

    value: str
    label: str
    shortcut: str


def text_box(text: str, css_class: str, heading: str = "", *, empty: str | None = None) -> None:
    """One untrusted text, escaped, white space kept, in a bordered box.

    With ``empty``, a text with nothing to see shows that caption in muted italics instead, so
    an empty answer reads as a fact about the item, not as a page that failed to load.
    """
    title = f'<div style="font-size:0.8rem;color:#666;margin-bottom:0.25rem">{escape(heading)}</div>' if heading else ""
    if empty is not None and not text.strip():
        body = f'<em class="gp-empty" style="color:#888">{escape(empty)}</em>'
    else:
        body = escape(text)
    st.html(f'{title}<div class="{css_class}" style="{BOX}">{body}</div>')


def render_task(db: sqlite_utils.Database, user: Annotator, task: str, title: str, choices: Sequence[Choice],
                draw: Callable[[Card], None], shown: Callable[[str | None], str]) -> None:
    """Draw the annotator's current item of ``task`` with ``draw``, then the keys, or a thank-you."""
    if user.role != "admin" and task not in enabled_tasks(db):
        st.info(f"The {title.lower()} task is not open in this project.")
        return
    flow, session = FLOWS[task], st.session_state
    if pending(session):
        busy_wait(db)
        return
    card = flow.current(session, db, user.id)
    flash = state.pop_flash(session)
    if flash:
        st.toast(flash)
    done = queue.progress(db, user.id, task)
    if card is None:
        st.progress(1.0, text=f"{title}: judged {done.done} of {done.assigned}")
        st.success("Nothing left to judge here. Thank you!")
        return
    st.progress(min(done.done / max(done.assigned, 1), 1.0), text=f"{title}: judged {done.done} of {done.assigned}")
    st.progress(min(card.position / max(card.batch_size, 1), 1.0), text=f"This batch: item {card.position} of {card.batch_size}")
    draw(card)
    st.caption(f"Your verdict: {shown(card.verdict)}")
    st.text_input("Note (optional)", key=flow.key("note"), max_chars=2000,
                  placeholder="Type a note, press Tab to leave the field, then a verdict key")
    for column, choice in zip(st.columns(len(choices)), choices, strict=True):
        column.button(choice.label, key=state.choice_key(task, choice.value), shortcut=choice.shortcut, width="stretch",
                      type="primary" if card.verdict == choice.value else "secondary",
                      on_click=on_item_key, args=(flow.choose, db, user.id, card.item_id, choice.value))
    st.caption(" · ".join(f"**{c.shortcut}** {c.label.split(' · ', 1)[-1]}" for c in choices) + " · **u** back · **s** skip")
    back, skip = st.columns(2)
    back.button("Back", key=flow.key("back"), shortcut="u", on_click=on_item_key, args=(flow.back, db, user.id, card.item_id))
    skip.button("Skip", key=flow.key("skip"), shortcut="s", on_click=on_item_key, args=(flow.skip, db, user.id, card.item_id))
    st.markdown(queue.RUBRICS[task])

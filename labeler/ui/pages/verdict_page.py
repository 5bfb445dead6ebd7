"""What the verdict pages share: the item frame, progress, note, keys, back, skip, rubric.

Keyboard first, on the flow every task page runs (``labeler.ui.flow``): every choice is a
Streamlit button with a one-key shortcut, ``u`` goes back and ``s`` skips, pressed through
the app's key guard (``labeler.ui.key_guard``: keys that come while a run is on its way are
held and replayed in order, never lost); the layout is the same for every item (messages
are toasts) so no button moves and re-binds its key. The annotator sees the item's texts
and their own work only: never a model name, a judge verdict or anyone else's verdict.
Every text is escaped and keeps its white space.

Layout rule of every verdict page (a new page follows it by drawing its item with
:func:`item_frame`): the item is ONE element, so the browser swaps question, texts and item
counter together and never shows a text under another item's question; it fills the window
beside the keys, the judged text right under the question, longer reading (contexts, a
reference) below it in a box that scrolls on its own. However long the texts, the judged
text and the keys stay in view.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

import sqlite_utils
import streamlit as st

from labeler.store import verdict_queue as queue
from labeler.store.verdict_queue import Card
from labeler.store.vocabulary import Annotator
from labeler.ui import state
from labeler.ui.flow import FLOWS, pending
from labeler.ui.pages import busy_wait, on_item_key

#: What a response box shows when the model answered with nothing (or only white space).
EMPTY_RESPONSE = "(empty response)"
BOX = "border:1px solid #ddd;border-radius:6px;padding:0.75rem 1rem;white-space:pre-wrap;overflow-wrap:anywhere;"

#: Style of the task pages (no script: st.html sends it without taking room on the page). The
#: frame is as tall as the window below the progress line, so nothing of it is below the fold;
#: its parts scroll on their own. Streamlit's "Press Enter to apply" under the note field would
#: cover the end of the note: Tab leaves the field and the placeholder says so. Streamlit draws
#: a button's shortcut hint in capitals ("U"), while the keys are the lower-case letters the
#: labels name ("u · ..."; Shift+U does nothing): the hints are shown in lower case.
PAGE_STYLE = """<style>
.block-container { padding-top: 2.5rem; }
.gp-frame { display: flex; flex-direction: column; gap: 0.5rem; height: calc(100vh - 9.5rem); min-height: 22rem; }
.gp-counter { flex: none; font-size: 0.875rem; }
.gp-bar { height: 0.25rem; border-radius: 2px; background: rgba(128, 128, 128, 0.2); margin-top: 0.25rem; }
.gp-bar > div { height: 100%; border-radius: 2px; background: #b8860b; }
.gp-ask { flex: none; max-height: 22%; overflow: auto; }
.gp-judged { flex: 0 1 auto; display: flex; gap: 0.75rem; min-height: 5rem; max-height: 45%; }
.gp-judged.gp-fill { flex: 1 1 0; max-height: none; }
.gp-reading { flex: 1 1 0; min-height: 6rem; overflow: auto; padding-right: 0.25rem; }
.gp-part { flex: 1 1 0; min-width: 0; min-height: 0; display: flex; flex-direction: column; }
.gp-part > div:last-child { flex: 0 1 auto; min-height: 0; overflow: auto; }
.gp-heading { flex: none; font-size: 0.8rem; color: #666; margin-bottom: 0.25rem; }
.gp-reading .gp-heading:not(:first-child) { margin-top: 0.5rem; }
[class*="st-key-gp_"][class*="_note"] [data-testid="InputInstructions"] { display: none; }
[class*="st-key-gp_"] button [aria-label^="Shortcut "] { text-transform: lowercase; }
</style>"""


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


@dataclass(frozen=True, slots=True)
class Box:
    """One untrusted text of an item and its heading, for :func:`item_frame`.

    ``css_class`` names the text's element (tests and the judges page find texts by it);
    with ``empty``, a text with nothing to see shows that caption in muted italics instead.
    """

    heading: str
    text: str
    css_class: str = "gp-context"
    empty: str | None = None
    html: str | None = None  # the body as HTML the caller escaped (a text with a mark), instead of ``text``


def counter_html(text: str, done: float) -> str:
    """The item counter: a line of text over a thin bar ``done`` (0 to 1) full."""
    width = f"{min(max(done, 0.0), 1.0) * 100:.0f}%"
    return f'<div class="gp-counter">{escape(text)}<div class="gp-bar"><div style="width:{width}"></div></div></div>'


def _box_html(box: Box) -> str:
    if box.html is not None:
        body = box.html
    elif box.empty is not None and not box.text.strip():
        body = f'<em class="gp-empty" style="color:#888">{escape(box.empty)}</em>'
    else:
        body = escape(box.text)
    heading = f'<div class="gp-heading">{escape(box.heading)}</div>' if box.heading else ""
    return f'{heading}<div class="{box.css_class}" style="{BOX}">{body}</div>'


def frame_html(counter: str, ask: str, judged: Sequence[Box], reading: Sequence[Box] = ()) -> str:
    """The HTML of one item frame (see :func:`item_frame`); ``counter`` and ``ask`` are HTML."""
    fill = "" if reading else " gp-fill"
    parts = "".join(f'<div class="gp-part">{_box_html(box)}</div>' for box in judged)
    below = f'<div class="gp-reading">{"".join(_box_html(box) for box in reading)}</div>' if reading else ""
    return (f'<div class="gp-frame">{counter}<div class="gp-ask">{ask}</div>'
            f'<div class="gp-judged{fill}">{parts}</div>{below}</div>')


def item_frame(question: str, judged: Sequence[Box], reading: Sequence[Box] = (), *,
               position: int, batch_size: int) -> None:
    """Draw a verdict item as one element: the item counter, the question, the judged texts,
    the reading texts; every text escaped, white space kept.

    Args:
        question: the question, on top (scrolls on its own past a fifth of the frame).
        judged: what the keys judge (a response; two responses side by side), right under
            the question, always in view; each scrolls on its own.
        reading: what the judged text is weighed against (contexts, a reference answer),
            one under another in one box below that scrolls on its own; without any, the
            judged texts take the whole height.
        position, batch_size: the item's place in its batch, for the counter.

    Call it once per run, in the page's ``draw`` (``render_task``), with nothing else drawn
    around it: any element of the item drawn apart from it could show beside another item.
    """
    st.html(item_frame_html(question, judged, reading, position=position, batch_size=batch_size))


def item_frame_html(question: str, judged: Sequence[Box], reading: Sequence[Box] = (), *,
                    position: int, batch_size: int) -> str:
    """The HTML :func:`item_frame` draws."""
    counter = counter_html(f"This batch: item {position} of {batch_size}", position / max(batch_size, 1))
    ask = f'<div class="gp-heading">Question</div><div class="gp-question" style="{BOX}">{escape(question)}</div>'
    return frame_html(counter, ask, judged, reading)


def render_task(db: sqlite_utils.Database, user: Annotator, task: str, title: str, choices: Sequence[Choice],
                draw: Callable[[Card], None], shown: Callable[[str | None], str], *, rubric: str | None = None) -> None:
    """Draw the annotator's current item of ``task`` with ``draw`` (which calls :func:`item_frame`
    once), the keys beside it and the rubric (``rubric``, else the task's in
    ``verdict_queue.RUBRICS``), or a thank-you."""
    if user.role != "admin" and task not in state.open_tasks(st.session_state, db):
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
    st.html(PAGE_STYLE)
    st.progress(min(done.done / max(done.assigned, 1), 1.0), text=f"{title}: judged {done.done} of {done.assigned}")
    item, keys = st.columns([3, 1], gap="medium")
    with item:
        draw(card)
    with keys:
        for choice in choices:
            st.button(choice.label, key=state.choice_key(task, choice.value), shortcut=choice.shortcut, width="stretch",
                      type="primary" if card.verdict == choice.value else "secondary",
                      on_click=on_item_key, args=(flow.choose, db, user.id, card.item_id, choice.value))
        st.caption(f"Your verdict: {shown(card.verdict)}")
        st.button("Back", key=flow.key("back"), shortcut="u", width="stretch", on_click=on_item_key,
                  args=(flow.back, db, user.id, card.item_id))
        st.button("Skip", key=flow.key("skip"), shortcut="s", width="stretch", on_click=on_item_key,
                  args=(flow.skip, db, user.id, card.item_id))
        st.text_input("Note (optional)", key=flow.key("note"), max_chars=2000,
                      placeholder="Type a note, press Tab to leave the field, then a verdict key")
        st.caption(rubric or queue.RUBRICS[task])

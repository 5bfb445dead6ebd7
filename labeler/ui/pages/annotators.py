"""Admin page: the annotator list, with activate/deactivate, new annotators and new tokens.

A token is shown once, right after it is made (adding someone or giving them a new token),
to be passed on to its holder; only its hash is kept. A new token ends every browser
session opened with the old one at its next click.
"""

from __future__ import annotations

import sqlite_utils
import streamlit as st

from calibration.formatting import markdown_escape
from labeler.ui import state
from labeler.ui.pages import admin_only
from labeler.store import StoreError
from labeler.store import access, review
from labeler.store.vocabulary import Annotator


def render(db: sqlite_utils.Database, user: Annotator) -> None:
    """List every annotator with a switch that activates or deactivates their token."""
    if not admin_only(user):
        return
    st.title("Annotators")
    flash = state.pop_flash(st.session_state)
    if flash:
        st.warning(flash)
    _issued()
    st.caption("A deactivated token stops working at its holder's next click; labels are kept.")
    counts = review.labelled_counts(db, caller=user)
    for annotator in access.list_annotators(db, caller=user):
        name, role, done, active, token = st.columns([3, 1, 2, 1, 1])
        name.markdown(f"**{markdown_escape(annotator.name)}**")
        role.write(annotator.role)
        done.text(labelled_text(counts.get(annotator.id, {})))
        active.toggle(
            "Active",
            value=annotator.active,
            key=state.active_key(annotator.id),
            # An admin cannot lock themselves out from here.
            disabled=annotator.id == user.id,
            on_change=_on_toggle,
            args=(db, annotator.id, user),
        )
        token.button(
            "New token",
            key=state.reissue_key(annotator.id),
            help="Replace this person's access token; the old one stops working at once.",
            on_click=_on_reissue,
            args=(db, annotator, user),
        )
    _add_form(db, user)


def labelled_text(counts: dict[str, int]) -> str:
    """``3,659 labelled`` (relevance, imported labels included), then each verdict task's
    verdicts when there are any: ``12 labelled · faithfulness 4 · pairwise 1``."""
    verdicts = "".join(f" · {task} {n:,}" for task, n in counts.items() if task != "relevance" and n)
    return f"{counts.get('relevance', 0):,} labelled{verdicts}"


def _issued() -> None:
    """The token just made, shown this once (it is not kept anywhere)."""
    issued = st.session_state.pop(state.ISSUED, None)
    if issued is None:
        return
    name, token = issued
    st.success(
        f"Access token for **{markdown_escape(name)}**. Copy it now and pass it on privately: "
        "it is shown only this once."
    )
    st.code(token, language=None)


def _add_form(db: sqlite_utils.Database, user: Annotator) -> None:
    st.subheader("Add an annotator")
    with st.form("add_annotator", clear_on_submit=True):
        name = st.text_input("Name", key=state.NEW_NAME, max_chars=100)
        role = st.selectbox("Role", ["annotator", "admin"], key=state.NEW_ROLE)
        submitted = st.form_submit_button("Add", key=state.ADD_SUBMIT)
    if submitted:
        try:
            state.check_token(st.session_state, db, user.id)
            added, token = access.issue_annotator(db, name or "", role, caller=user)
        except StoreError as exc:
            st.error(f"Not added: {exc}")
            return
        st.session_state[state.ISSUED] = (added.name, token)
        st.rerun()


def _on_reissue(db: sqlite_utils.Database, annotator: Annotator, user: Annotator) -> None:
    try:
        state.check_token(st.session_state, db, user.id)
        token = access.reissue_token(db, annotator.id, caller=user)
    except StoreError as exc:
        st.session_state[state.FLASH] = f"Not changed: {exc}"
        return
    st.session_state[state.ISSUED] = (annotator.name, token)
    if annotator.id == user.id:  # the admin holds the new token: this browser stays signed in
        state.keep_after_new_token(st.session_state, db, user)


def _on_toggle(db: sqlite_utils.Database, annotator_id: int, user: Annotator) -> None:
    try:
        state.check_token(st.session_state, db, user.id)
        access.set_active(db, annotator_id, bool(st.session_state[state.active_key(annotator_id)]), caller=user)
    except StoreError as exc:
        st.session_state[state.FLASH] = f"Not changed: {exc}"

"""The labelling app's entry point: ``goldpool serve DB`` runs this file with Streamlit.

The project database comes from the ``GOLDPOOL_DB`` environment variable, which ``serve``
sets for the Streamlit process; without it (or with a path that is not a project) the app
shows an error page and nothing else. A visitor first meets the sign-in form; once signed in,
annotators get the task pages the project's admins opened (relevance labelling, faithfulness,
pairwise, claims, correctness, answer relevance, nugget support; the ``tasks`` setting); admins land on Progress and label only when they open a task
page. An annotator who reaches an admin page, or a closed task's page, by its address is
refused by the page itself.

A sign-in is kept across reloads and typed addresses: the browser holds a random session
secret in a cookie (``state.COOKIE``; see ``labeler.store.sessions``), never the access token,
and never anything in an address. Streamlit reads cookies (``st.context.cookies``) but cannot
set them, so the page sets and clears the cookie with a few lines of script.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable

import sqlite_utils
import streamlit as st

from calibration.formatting import markdown_escape
from labeler.store import StoreBusy, StoreError, connect
from labeler.store.connection import busy_timeout, start_checkpointer
from labeler.store.errors import StoreReadOnly
from labeler.store.holds import release_holds
from labeler.store.sessions import SESSION_HOURS
from labeler.store.vocabulary import Annotator
from labeler.ui import key_guard, state
from labeler.ui.pages import (
    BUSY_NOTICE,
    RETRY_EVERY,
    adjudicate,
    admin_only,
    annotators,
    answer_relevance,
    calibration,
    claims,
    correctness,
    faithfulness,
    judges,
    label,
    pairwise,
    progress,
    rubric,
    support,
    tasks,
)
from labeler.ui.pages import golden_set as _golden_set
from labeler.ui.pages import nuggets as _nuggets

Render = Callable[[sqlite_utils.Database, Annotator], None]

#: Longest wait (seconds) of a key press for another writer's lock before the press is kept
#: in the session and saved later: an annotator is told at once instead of staring at a
#: page that hangs for the whole busy timeout.
APP_BUSY_WAIT = 5.0

#: Shown in place of a page that needs to write (hand out items, release holds) when the
#: project cannot be written here.
READ_ONLY_PAGE = "This page needs to save, and this project is read-only here: nothing can be handed out or changed."


def database() -> sqlite_utils.Database | None:
    """This session's connection to the project database, or None after showing why not."""
    path = os.environ.get(state.DB_ENV_VAR, "").strip()
    if not path:
        st.error(
            f"No project database was given. Start the app with `goldpool serve DB` "
            f"(or set {state.DB_ENV_VAR} to the project's path)."
        )
        return None
    # One connection per script thread: a rerun can start on a new thread while the run it
    # replaces is still inside a write, and one connection cannot hold two transactions.
    thread = threading.get_ident()
    cached = st.session_state.get(state.DB)
    if cached is not None and cached[:2] == (path, thread):
        return cached[2]
    try:
        db = connect(path, busy_timeout=min(busy_timeout(), APP_BUSY_WAIT), autocheckpoint=False)
    except StoreError as exc:
        st.error(f"Cannot open the project database: {exc}")
        return None
    _checkpointer(path)
    st.session_state[state.DB] = (path, thread, db)
    return db


@st.cache_resource
def _checkpointer(path: str) -> object:
    """One WAL checkpointer per served project (sessions' commits never checkpoint)."""
    return start_checkpointer(path)


def _signed_in_page(render: Render, admin: bool, task: str | None = None) -> None:
    db = database()
    if db is None:
        return
    user = state.signed_in(st.session_state, db)
    if user is None:
        st.rerun()  # signed out meanwhile: back to the sign-in form
    if admin and not admin_only(user):
        return
    if task is not None and user.role != "admin" and task not in state.open_tasks(st.session_state, db):
        st.info(f"The {task} task is not open in this project.")
        return
    try:
        if admin:  # an admin who left the labelling page holds nothing others could label
            release_holds(db, user.id)
        render(db, user)
    except StoreReadOnly:
        st.info(READ_ONLY_PAGE)
    except StoreBusy:
        # Another program holds the write lock (e.g. a large import): say so, try again.
        # Nothing was written; any key press made meanwhile is kept by the task page (labeler.ui.flow).
        st.info(BUSY_NOTICE, icon="⏳")
        time.sleep(RETRY_EVERY)
        st.rerun()


def login_page() -> None:
    """The sign-in form: one password field, "Access token"."""
    db = database()
    if db is None:
        return
    st.title("goldpool")
    with st.form("login", clear_on_submit=True):
        token = st.text_input("Access token", type="password", key=state.TOKEN_INPUT)
        submitted = st.form_submit_button("Sign in", key=state.LOGIN_SUBMIT)
    if submitted:
        if state.sign_in(st.session_state, db, token or "", client=state.client_address(st.context.ip_address)) is not None:
            st.rerun()
    error = st.session_state.pop(state.LOGIN_ERROR, None)
    if error:
        st.error(error)


def label_page() -> None:
    _signed_in_page(label.render, admin=False, task="relevance")


def faithfulness_page() -> None:
    _signed_in_page(faithfulness.render, admin=False, task="faithfulness")


def pairwise_page() -> None:
    _signed_in_page(pairwise.render, admin=False, task="pairwise")


def claims_page() -> None:
    _signed_in_page(claims.render, admin=False, task="claims")


def correctness_page() -> None:
    _signed_in_page(correctness.render, admin=False, task="correctness")


def answer_relevance_page() -> None:
    _signed_in_page(answer_relevance.render, admin=False, task="answer-relevance")


def support_page() -> None:
    _signed_in_page(support.render, admin=False, task="nuggets")


def judges_page() -> None:
    _signed_in_page(judges.render, admin=True)


def tasks_page() -> None:
    _signed_in_page(tasks.render, admin=True)


def progress_page() -> None:
    _signed_in_page(progress.render, admin=True)


def adjudicate_page() -> None:
    _signed_in_page(adjudicate.render, admin=True)


def annotators_page() -> None:
    _signed_in_page(annotators.render, admin=True)


def rubric_page() -> None:
    _signed_in_page(rubric.render, admin=True)


def golden_page() -> None:
    _signed_in_page(_golden_set.render, admin=True)


def nuggets_page() -> None:
    _signed_in_page(_nuggets.render, admin=True)


def calibration_page() -> None:
    _signed_in_page(calibration.render, admin=True)


# The page modules live in ``labeler/ui/pages/``, not ``pages/``: Streamlit treats a ``pages/``
# folder beside the entry point as file pages and routes the first request after start-up
# by their names, which would break deep links to the admin pages.
_ADMIN_PAGES: tuple[tuple[Callable[[], None], str, str], ...] = (
    (progress_page, "Progress", "progress"),
    (adjudicate_page, "Adjudicate", "adjudicate"),
    (annotators_page, "Annotators", "annotators"),
    (rubric_page, "Rubric", "rubric"),
    (calibration_page, "Calibration", "calibration"),
    (golden_page, "Golden set", "golden"),
    (nuggets_page, "Nuggets", "nugget-editor"),
    (judges_page, "Judges", "judges"),
    (tasks_page, "Tasks", "tasks"),
)

#: The task pages (function, title, address, task); the sidebar lists the enabled ones.
_TASK_PAGES: tuple[tuple[Callable[[], None], str, str, str], ...] = (
    (label_page, "Label", "labelling", "relevance"),
    (faithfulness_page, "Faithfulness", "faithfulness", "faithfulness"),
    (pairwise_page, "Pairwise", "pairwise", "pairwise"),
    (claims_page, "Claims", "claims", "claims"),
    (correctness_page, "Correctness", "correctness", "correctness"),
    (answer_relevance_page, "Answer relevance", "answer-relevance", "answer-relevance"),
    (support_page, "Nugget support", "nuggets", "nuggets"),
)


def _admin_pages() -> list[tuple[Callable[[], None], str, str]]:
    return list(_ADMIN_PAGES)


def _task_specs(open_tasks: tuple[str, ...]) -> list[tuple[Callable[[], None], str, str, bool, bool]]:
    """(page, title, address, default, listed) of each task page: the open ones are listed, the
    first of them is the default; the others exist (and refuse annotators) but are not listed."""
    listed = [page for page in _TASK_PAGES if page[3] in open_tasks] or [_TASK_PAGES[0]]
    return [(f, t, u, f is listed[0][0], (f, t, u, k) in listed) for f, t, u, k in _TASK_PAGES]


def _task_pages(open_tasks: tuple[str, ...], *, admin: bool) -> list[st.Page]:
    """The task pages at their own addresses; for an annotator, the first open one also at the
    root (the default page), so ``/labelling`` and the other addresses keep working."""
    specs = _task_specs(open_tasks)
    pages = [st.Page(f, title=t, url_path=u, visibility="visible" if shown else "hidden") for f, t, u, _, shown in specs]
    if admin:
        return pages
    first = next(spec for spec in specs if spec[3])
    return [st.Page(first[0], title=first[1], default=True, visibility="hidden"), *pages]


def _pages(user: Annotator | None, open_tasks: tuple[str, ...] = ("relevance",)) -> list[st.Page]:
    """Every address of the app; what it shows depends on who is signed in.

    Signed out, every address shows the sign-in form and keeps its path, so a link to an
    admin page leads there after signing in. Admin pages exist for everyone but are listed
    only for admins: an annotator who reaches one by its address meets the page's refusal.
    Task pages are listed only for the tasks open in the project (``open_tasks``). Admins land
    on Progress: the task pages hand out work, so they get it only by choosing it.
    """
    if user is None:
        return [
            st.Page(login_page, title="Sign in", default=True),
            st.Page(login_page, title="Label", url_path="labelling", visibility="hidden"),
            *(st.Page(login_page, title=t, url_path=u, visibility="hidden") for _, t, u, _ in _TASK_PAGES[1:]),
            *(st.Page(login_page, title=t, url_path=u, visibility="hidden") for _, t, u in _admin_pages()),
        ]
    if user.role != "admin":
        return [
            *_task_pages(open_tasks, admin=False),
            *(st.Page(f, title=t, url_path=u, visibility="hidden") for f, t, u in _admin_pages()),
        ]
    admin_pages = [st.Page(f, title=t, url_path=u) for f, t, u in _admin_pages()]

    def landing() -> None:
        st.switch_page(admin_pages[0])

    return [
        st.Page(landing, title="goldpool", default=True, visibility="hidden"),
        admin_pages[0],
        *_task_pages(open_tasks, admin=True),
        *admin_pages[1:],
    ]


def _cookie_script(value: str, max_age: int) -> str:
    """Script that sets (or with max_age 0 clears) the session cookie of this browser.

    SameSite=Strict keeps other sites from sending it; Secure when served over HTTPS.
    """
    return (
        "<script>(function () { var secure = location.protocol === 'https:' ? '; Secure' : '';"
        f" document.cookie = {json.dumps(state.COOKIE)} + '=' + {json.dumps(value)}"
        f" + '; Max-Age={int(max_age)}; Path=/; SameSite=Strict' + secure; }})();</script>"
    )


def _cookie(user: Annotator | None) -> None:
    """Keep this browser's session secret in its cookie while signed in; clear it after sign-out.

    Drawn on every run with the same text, so the script runs once per page load (a run cut
    short by a page switch cannot lose it).
    """
    secret = st.session_state.get(state.SESSION_SECRET)
    if user is not None and secret:
        st.html(_cookie_script(secret, int(SESSION_HOURS * 3600)), unsafe_allow_javascript=True)
    elif user is None and st.session_state.get(state.COOKIE_CLEAR):
        st.html(_cookie_script("", 0), unsafe_allow_javascript=True)


def _sign_out() -> None:
    db = database()
    state.sign_out(st.session_state, db)


def main() -> None:
    """Route the visitor: sign-in form, or the pages their role allows."""
    st.set_page_config(page_title="goldpool", layout="wide")
    db = database()
    if db is None:
        st.stop()
    user = state.signed_in(st.session_state, db)
    if user is None and not st.session_state.get(state.COOKIE_CLEAR):
        user = state.resume(st.session_state, db, st.context.cookies.get(state.COOKIE))
    if user is None:
        _cookie(None)
        st.navigation(_pages(None), position="hidden").run()
        return
    with st.sidebar:
        st.caption(f"Signed in as **{markdown_escape(user.name)}** ({user.role})")
        st.button("Sign out", key=state.LOGOUT, on_click=_sign_out)
        _cookie(user)
        st.html(key_guard.script(), unsafe_allow_javascript=True)
        handled = st.empty()
    notice = st.session_state.get(state.SIGN_IN_NOTICE)
    if notice:
        st.info(notice)
    open_tasks = state.read_open_tasks(st.session_state, db)  # once per run: the pages find it there
    position = "sidebar" if user.role == "admin" or len(open_tasks) > 1 else "hidden"
    st.navigation(_pages(user, open_tasks), position=position).run()
    # Drawn last, so the key guard knows the whole page of this run is on screen.
    handled.html(key_guard.handled_mark(state.keys_handled(st.session_state)))


if __name__ == "__main__":  # Streamlit runs the entry point as __main__; tests import it
    main()

"""What a token check costs: one hash, the same whether its id exists or not, a fast one for
the project's 256-bit secrets; and a client that keeps sending wrong tokens waits longer and
longer, whichever tab or reload sends them (no sleep anywhere)."""

from __future__ import annotations

import secrets

import pytest

from app_fixtures import Project, press, sign_in
from labeler.ui import state
from labeler.store import access, connect
from labeler.store.access import authenticate

WRONG_SECRET = "x" * 43


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every token check the process makes from now on, as the scheme it hashed with
    (``sha256``, or ``scrypt:n:r:p``)."""
    calls: list[str] = []
    real = access._matches

    def counting(secret: str, salt: bytes, stored: str) -> bool:
        calls.append(stored.rsplit(":", 1)[0])
        return real(secret, salt, stored)

    monkeypatch.setattr(access, "_matches", counting)
    return calls


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_unknown_token_id_costs_the_same_hash_as_a_known_one(project: Project, checks: list[str]) -> None:
    with connect(project.path) as db:
        known = authenticate(db, f"gp{project.annotator_id}.{WRONG_SECRET}")
        unknown = authenticate(db, f"gp{project.annotator_id + 1000}.{WRONG_SECRET}")
        assert authenticate(db, project.annotator_token) is not None
        assert known is None and unknown is None
        assert checks == ["sha256"] * 3  # the wrong, the unknown and the right token: one fast hash each
        stored = db.execute("SELECT token_hash FROM annotators WHERE id = ?", [project.annotator_id]).fetchone()[0]
        assert stored.startswith("sha256:") and len(stored) == len("sha256:") + 64


def test_a_token_stored_with_scrypt_still_signs_in_and_unknown_ids_cost_as_much(
    project: Project, checks: list[str]
) -> None:
    secret, salt = secrets.token_urlsafe(32), secrets.token_bytes(16)
    with connect(project.path) as db:
        db.execute("UPDATE annotators SET token_salt = ?, token_hash = ? WHERE id = ?",
                   [salt.hex(), access._scrypt_hash(secret, salt, 2**14, 8, 1), project.admin_id])
        assert authenticate(db, f"gp{project.admin_id}.{secret}").id == project.admin_id
        assert authenticate(db, f"gp{project.admin_id}.{WRONG_SECRET}") is None
        assert authenticate(db, f"gp{project.admin_id + 1000}.{secret}") is None
        assert authenticate(db, project.annotator_token) is not None  # a fast one beside it
    assert checks == ["scrypt:16384:8:1"] * 3 + ["sha256"]


def test_wrong_tokens_from_one_session_make_it_wait_longer_and_longer(project: Project, checks: list[str]) -> None:
    clock = Clock()
    session: dict = {}
    wrong = f"gp{project.annotator_id}.{WRONG_SECRET}"
    with connect(project.path) as db:
        for n in range(1, state.FREE_ATTEMPTS + 1):
            assert state.sign_in(session, db, wrong, clock) is None
            assert session[state.LOGIN_ERROR].startswith("That access token was not recognised.")
        assert session[state.LOGIN_ERROR].endswith("try again in 5 s.")
        assert len(checks) == state.FREE_ATTEMPTS
        # While it waits, even the right token is refused, unchecked: no hash is computed.
        clock.now += 4.5
        assert state.sign_in(session, db, project.annotator_token, clock) is None
        assert session[state.LOGIN_ERROR] == "Too many wrong access tokens from this address: try again in 1 s."
        assert len(checks) == state.FREE_ATTEMPTS and state.USER not in session
        # Each further wrong token doubles the wait.
        clock.now += 0.5
        assert state.sign_in(session, db, wrong, clock) is None
        assert session[state.LOGIN_ERROR].endswith("try again in 10 s.")
        clock.now += 9.9
        assert state.sign_in(session, db, project.annotator_token, clock) is None
        # Another annotator's token is not held up meanwhile.
        other: dict = {}
        assert state.sign_in(other, db, project.admin_token, clock) is not None
        # Once the wait is over the right token signs in, and the count starts again.
        clock.now += 0.1
        assert state.sign_in(session, db, project.annotator_token, clock) is not None
        state.sign_out(session, db)
        assert state.sign_in(session, db, wrong, clock) is None
        assert session[state.LOGIN_ERROR] == "That access token was not recognised. Check it and try again."


def test_the_wait_never_passes_the_longest(project: Project) -> None:
    clock = Clock()
    session: dict = {}
    with connect(project.path) as db:
        for _ in range(state.FREE_ATTEMPTS + 12):
            state.sign_in(session, db, f"gp{project.annotator_id}.{WRONG_SECRET}", clock)
            clock.now += state.LONGEST_WAIT  # past any wait
        assert session[state.LOGIN_ERROR].endswith(f"try again in {state.LONGEST_WAIT:.0f} s.")


def test_after_three_wrong_tokens_the_sign_in_form_says_how_long_to_wait(project: Project) -> None:
    at = sign_in(f"gp{project.annotator_id}.{WRONG_SECRET}")
    for _ in range(2):
        at.text_input(key=state.TOKEN_INPUT).input(f"gp{project.annotator_id}.{WRONG_SECRET}")
        press(at, state.LOGIN_SUBMIT)
    at.text_input(key=state.TOKEN_INPUT).input(project.annotator_token)
    press(at, state.LOGIN_SUBMIT)
    assert [e.value for e in at.error] == ["Too many wrong access tokens from this address: try again in 5 s."]
    assert state.USER not in at.session_state and not at.exception


def test_the_wait_holds_across_reloads_and_tabs_of_one_client(project: Project) -> None:
    wrong = f"gp{project.annotator_id}.{WRONG_SECRET}"
    at = sign_in(wrong)
    for _ in range(state.FREE_ATTEMPTS - 1):
        at.text_input(key=state.TOKEN_INPUT).input(wrong)
        press(at, state.LOGIN_SUBMIT)
    other_tab = sign_in(project.annotator_token)  # a reload, or another tab: a new session
    assert [e.value for e in other_tab.error] == ["Too many wrong access tokens from this address: try again in 5 s."]
    assert state.USER not in other_tab.session_state and not other_tab.exception


def test_the_wait_is_kept_per_client_and_per_annotator_the_token_names(project: Project, checks: list[str]) -> None:
    clock = Clock()
    wrong = f"gp{project.annotator_id}.{WRONG_SECRET}"
    with connect(project.path) as db:
        for _ in range(state.FREE_ATTEMPTS):
            assert state.sign_in({}, db, wrong, clock, client="203.0.113.7") is None
        tab: dict = {}
        assert state.sign_in(tab, db, project.annotator_token, clock, client="203.0.113.7") is None
        assert tab[state.LOGIN_ERROR].startswith("Too many wrong access tokens from this address")
        assert len(checks) == state.FREE_ATTEMPTS  # refused unchecked
        # Another address is not held up, nor another annotator's token from the same address
        # (behind a proxy every client may look alike: one person's typos lock out nobody else).
        assert state.sign_in({}, db, project.annotator_token, clock, client="203.0.113.8") is not None
        assert state.sign_in({}, db, project.admin_token, clock, client="203.0.113.7") is not None
        # Tokens naming ever new ids (no annotator holds them) are counted for the address as a whole.
        for n in range(state.CLIENT_FREE_ATTEMPTS):
            assert state.sign_in({}, db, f"gp{9000 + n}.{WRONG_SECRET}", clock, client="198.51.100.1") is None
        sprayed: dict = {}
        assert state.sign_in(sprayed, db, project.admin_token, clock, client="198.51.100.1") is None
        assert sprayed[state.LOGIN_ERROR].endswith("try again in 5 s.")

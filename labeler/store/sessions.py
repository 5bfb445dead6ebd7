"""Sign-ins kept across reloads, and each annotator's own display choices.

A browser that signs in with an access token gets a *session secret*: 32 random bytes,
unrelated to the token, kept by the browser in a cookie (never in an address). The database
keeps only the secret's SHA-256 (a 256-bit random secret needs no slow hash: there is nothing
to guess), who it belongs to, until when it is good, and a fingerprint of the access token in
force at sign-in. A session ends at its expiry, at sign-out (its row is deleted), when its
annotator is deactivated, and when the annotator gets a new token: every one of these is
checked on every use, so the next click after any of them meets the sign-in form.

Every tab of one browser that resumed from the cookie shares the one secret, so a sign-out in
any of them deletes the row the others stand on: each tab checks the row on every run and
before every write (``labeler.ui.state.check_token``), so a tab left open is refused at its
next key press instead of saving under the name that signed out.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from datetime import UTC, datetime, timedelta

import sqlite_utils

from labeler.store.access import caller_id, end_sessions, require_active
from labeler.store.connection import transaction
from labeler.store.errors import StoreError
from labeler.store.schema import now
from labeler.store.vocabulary import Annotator, Caller

__all__ = [
    "PREFERENCES",
    "SESSION_HOURS",
    "end_session",
    "end_sessions",
    "open_session",
    "preference",
    "resume_session",
    "session_open",
    "set_preference",
    "token_fingerprint",
]

#: How long a sign-in lasts without the token being typed again (one working day).
SESSION_HOURS = 12.0

#: Display choices an annotator can make, with their defaults.
PREFERENCES: dict[str, object] = {"highlight": True}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def token_fingerprint(db: sqlite_utils.Database, annotator_id: int) -> str | None:
    """A short fingerprint of the annotator's access token as stored now (None: no such
    annotator). It changes whenever a new token is issued, and reveals nothing of the token."""
    row = db.execute("SELECT token_hash FROM annotators WHERE id = ?", [annotator_id]).fetchone()
    return None if row is None else hashlib.sha256(row[0].encode()).hexdigest()[:32]


def open_session(db: sqlite_utils.Database, annotator: Annotator, hours: float = SESSION_HOURS) -> str:
    """Start a kept sign-in for ``annotator`` (just authenticated); return its secret.

    Raises:
        StoreError: the annotator is missing or deactivated.
    """
    secret = secrets.token_urlsafe(32)
    created = datetime.now(UTC)
    with transaction(db):
        require_active(db, annotator.id)
        db.execute("DELETE FROM sessions WHERE expires_at < ?", [created.isoformat(timespec="microseconds")])
        db.execute(
            "INSERT INTO sessions (secret_hash, annotator_id, token_fingerprint, created_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                _digest(secret),
                annotator.id,
                token_fingerprint(db, annotator.id),
                created.isoformat(timespec="microseconds"),
                (created + timedelta(hours=hours)).isoformat(timespec="microseconds"),
            ],
        )
    return secret


def resume_session(db: sqlite_utils.Database, secret: str) -> tuple[Annotator, str] | None:
    """The active annotator a session secret signs in, and their token fingerprint; None when
    the secret is unknown, expired, ended, its annotator deactivated or given a new token."""
    if not secret or len(secret) > 200:
        return None
    row = db.execute(
        "SELECT s.token_fingerprint, s.expires_at, n.id, n.name, n.role, n.active FROM sessions s "
        "JOIN annotators n ON n.id = s.annotator_id WHERE s.secret_hash = ?",
        [_digest(secret)],
    ).fetchone()
    if row is None or row[1] < now() or not row[5] or row[0] != token_fingerprint(db, row[2]):
        return None
    return Annotator(id=row[2], name=row[3], role=row[4], active=True), row[0]


def session_open(db: sqlite_utils.Database, secret: str) -> bool:
    """Whether the kept sign-in of ``secret`` still stands: not signed out (in this tab or any
    other tab of the browser sharing it) and not expired. Deactivation and a new token are
    checked apart, each with its own message."""
    if not secret or len(secret) > 200:
        return False
    row = db.execute("SELECT expires_at FROM sessions WHERE secret_hash = ?", [_digest(secret)]).fetchone()
    return row is not None and row[0] >= now()


def end_session(db: sqlite_utils.Database, secret: str) -> None:
    """Forget one session (sign-out): its secret signs nobody in any more."""
    with transaction(db):
        db.execute("DELETE FROM sessions WHERE secret_hash = ?", [_digest(secret)])


def preference(db: sqlite_utils.Database, annotator_id: int, key: str) -> object:
    """One of the annotator's display choices (its default when never made).

    Raises:
        StoreError: an unknown choice.
    """
    if key not in PREFERENCES:
        raise StoreError(f"unknown preference {key!r}; preferences are: {', '.join(PREFERENCES)}")
    row = db.execute(
        "SELECT value FROM preferences WHERE annotator_id = ? AND key = ?", [annotator_id, key]
    ).fetchone()
    return PREFERENCES[key] if row is None else json.loads(row[0])


def set_preference(db: sqlite_utils.Database, key: str, value: object, *, caller: Caller) -> None:
    """Record a display choice of ``caller`` (an active annotator; each sets their own).

    Raises:
        StoreError: an unknown choice, a value of the wrong type, or no active annotator.
    """
    if key not in PREFERENCES:
        raise StoreError(f"unknown preference {key!r}; preferences are: {', '.join(PREFERENCES)}")
    if type(value) is not type(PREFERENCES[key]):
        raise StoreError(f"preference {key}: {value!r} is not a {type(PREFERENCES[key]).__name__}")
    annotator_id = caller_id(caller)
    if annotator_id is None:
        raise StoreError("preferences belong to an annotator; the command line has none")
    with transaction(db):
        require_active(db, annotator_id)
        db.execute(
            "INSERT OR REPLACE INTO preferences (annotator_id, key, value) VALUES (?, ?, ?)",
            [annotator_id, key, json.dumps(value)],
        )

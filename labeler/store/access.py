"""Annotators, their access tokens and roles.

A token is ``gp<id>.<secret>``: the id finds the row without hashing every row, and only a
salted hash of the secret is stored. The secret is 32 random bytes (256 bits) that the
project makes, never a password a person chose: there is nothing to guess, so a fast hash
(SHA-256) guards it as well as a slow one would, as it does the session secrets
(``labeler.store.sessions``), and a sign-in costs the server microseconds, not the tens to
thousands of milliseconds of a slow hash when a team signs in at once. Tokens stored with
scrypt (older projects) still sign in, at scrypt's cost, until they are replaced. Deactivated
annotators cannot sign in, and every write checks that its author is still active.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3

import sqlite_utils

from labeler.store.connection import transaction
from labeler.store.errors import StoreError
from labeler.store.schema import now
from labeler.store.settings import forget_frontier
from labeler.store.vocabulary import OWNER, Annotator, Caller, Owner, Role

_TOKEN = re.compile(r"gp(\d{1,12})\.([A-Za-z0-9_-]{20,200})")
# Tokens stored with scrypt carry its parameters in the stored hash (``scrypt:n:r:p:hex``).
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


def _token_hash(secret: str, salt: bytes) -> str:
    return f"sha256:{hashlib.sha256(salt + secret.encode()).hexdigest()}"


def _scrypt_hash(secret: str, salt: bytes, n: int, r: int, p: int) -> str:
    digest = hashlib.scrypt(secret.encode(), salt=salt, n=n, r=r, p=p, dklen=32, maxmem=256 * 2**20)
    return f"scrypt:{n}:{r}:{p}:{digest.hex()}"


def _matches(secret: str, salt: bytes, stored: str) -> bool:
    """Whether ``secret`` hashes to ``stored`` (either scheme; constant-time comparison)."""
    if stored.startswith("scrypt:"):
        _, n, r, p, _ = stored.split(":")
        given = _scrypt_hash(secret, salt, int(n), int(r), int(p))
    else:
        given = _token_hash(secret, salt)
    return hmac.compare_digest(given.encode(), stored.encode())


#: What a token of an id nobody holds is checked against: no secret hashes to it.
_NO_SALT = bytes(16)
_NO_HASH = "sha256:" + "0" * 64
_NO_SCRYPT = f"scrypt:{_SCRYPT['n']}:{_SCRYPT['r']}:{_SCRYPT['p']}:{'0' * 64}"


def _annotator(row: sqlite3.Row | tuple) -> Annotator:
    return Annotator(id=row[0], name=row[1], role=row[2], active=bool(row[3]))


def _find(db: sqlite_utils.Database, annotator_id: int) -> Annotator | None:
    row = db.execute("SELECT id, name, role, active FROM annotators WHERE id = ?", [annotator_id]).fetchone()
    return None if row is None else _annotator(row)


def require_active(db: sqlite_utils.Database, annotator_id: int) -> Annotator:
    """The annotator, who must exist and be active.

    Raises:
        StoreError: no such annotator, or deactivated.
    """
    found = _find(db, annotator_id)
    if found is None:
        raise StoreError(f"no annotator with id {annotator_id}")
    if not found.active:
        raise StoreError(f"annotator {found.name!r} is deactivated")
    return found


def require_admin(db: sqlite_utils.Database, caller: Caller) -> None:
    """Refuse unless ``caller`` is an active admin, as the database says now.

    :data:`OWNER` means the project owner working on the file directly (the CLI); the app
    always passes the signed-in annotator.

    Raises:
        StoreError: the caller is not an active admin, or no caller was given.
    """
    if caller is OWNER:
        return
    if not isinstance(caller, (Annotator, int)) or isinstance(caller, bool):
        raise StoreError(f"refused: {caller!r} is not a caller; pass the signed-in annotator or OWNER")
    found = _find(db, caller.id if isinstance(caller, Annotator) else caller)
    if found is None or found.role != "admin" or not found.active:
        raise StoreError("refused: this needs an active admin")


def add_annotator(db: sqlite_utils.Database, name: str, role: Role = "annotator") -> tuple[Annotator, str]:
    """Create an annotator; return it and its one-time access token (only a salted hash is kept).

    The token is ``gp<id>.<secret>``: the id finds the row without hashing every row, and only
    the secret's salted hash is stored.

    Raises:
        StoreError: an empty or taken name, or an unknown role.
    """
    name = name.strip()
    if not name or len(name) > 100:
        raise StoreError("annotator name: give 1 to 100 characters")
    if role not in ("annotator", "admin"):
        raise StoreError(f"role {role!r}: choose 'annotator' or 'admin'")
    secret, salt, hashed = _new_secret()
    with transaction(db):
        if db.execute("SELECT 1 FROM annotators WHERE name = ?", [name]).fetchone():
            raise StoreError(f"annotator {name!r} already exists")
        cursor = db.execute(
            "INSERT INTO annotators (name, role, token_salt, token_hash, active, created_at) VALUES (?, ?, ?, ?, 1, ?)",
            [name, role, salt.hex(), hashed, now()],
        )
    annotator_id = int(cursor.lastrowid)
    return Annotator(annotator_id, name, role, True), f"gp{annotator_id}.{secret}"


def _new_secret() -> tuple[str, bytes, str]:
    secret, salt = secrets.token_urlsafe(32), secrets.token_bytes(16)
    return secret, salt, _token_hash(secret, salt)


def rotate_token(db: sqlite_utils.Database, name: str) -> str:
    """Give ``name`` a new one-time access token; the old one stops working at once.

    Raises:
        StoreError: nobody has that name.
    """
    annotator = find_annotator(db, name)
    secret, salt, hashed = _new_secret()
    with transaction(db):
        db.execute(
            "UPDATE annotators SET token_salt = ?, token_hash = ? WHERE id = ?",
            [salt.hex(), hashed, annotator.id],
        )
        # Browsers signed in with the old token are out too (labeler.store.sessions).
        end_sessions(db, annotator.id)
    return f"gp{annotator.id}.{secret}"


def end_sessions(db: sqlite_utils.Database, annotator_id: int) -> None:
    """Forget every kept sign-in of one annotator (``sessions`` table); runs inside the
    caller's transaction."""
    db.execute("DELETE FROM sessions WHERE annotator_id = ?", [annotator_id])


def issue_annotator(
    db: sqlite_utils.Database, name: str, role: Role = "annotator", *, caller: Caller
) -> tuple[Annotator, str]:
    """:func:`add_annotator` for an admin in the app: the new annotator and its one-time token.

    Raises:
        StoreError: the caller is not an active admin, or as :func:`add_annotator`.
    """
    require_admin(db, caller)
    return add_annotator(db, name, role)


def reissue_token(db: sqlite_utils.Database, annotator_id: int, *, caller: Caller) -> str:
    """:func:`rotate_token` for an admin in the app: the annotator's new one-time token.

    Raises:
        StoreError: the caller is not an active admin, or no such annotator.
    """
    require_admin(db, caller)
    found = _find(db, annotator_id)
    if found is None:
        raise StoreError(f"no annotator with id {annotator_id}")
    return rotate_token(db, found.name)


def authenticate(db: sqlite_utils.Database, token: str) -> Annotator | None:
    """The active annotator holding ``token``, or None (constant-time comparison)."""
    match = _TOKEN.fullmatch(token.strip())
    if match is None:
        return None
    row = db.execute(
        "SELECT id, name, role, active, token_salt, token_hash FROM annotators WHERE id = ?", [int(match[1])]
    ).fetchone()
    if row is None or not row[4]:  # no such id, or one made without a usable token (an imported name)
        # As slow as a wrong secret for a known id: the time taken must not tell which ids
        # exist (while some tokens are still stored with scrypt, as slow as those).
        slow = db.execute(
            "SELECT 1 FROM annotators WHERE token_hash LIKE 'scrypt:%' AND token_salt != '' LIMIT 1"
        ).fetchone()
        _matches(match[2], _NO_SALT, _NO_SCRYPT if slow else _NO_HASH)
        return None
    if not _matches(match[2], bytes.fromhex(row[4]), row[5]) or not row[3]:
        return None
    return _annotator(row)


def caller_id(caller: Caller) -> int | None:
    """The annotator id of ``caller``, or None for :data:`OWNER`."""
    if isinstance(caller, Owner):
        return None
    return caller.id if isinstance(caller, Annotator) else caller


def annotator_by_id(db: sqlite_utils.Database, annotator_id: int) -> Annotator | None:
    """The annotator with this id as the database says now, or None."""
    return _find(db, annotator_id)


def list_annotators(db: sqlite_utils.Database, *, caller: Caller) -> list[Annotator]:
    """Every annotator, by id (admin only)."""
    require_admin(db, caller)
    return [_annotator(r) for r in db.execute("SELECT id, name, role, active FROM annotators ORDER BY id")]


def set_active(db: sqlite_utils.Database, annotator_id: int, active: bool, *, caller: Caller) -> None:
    """Activate or deactivate an annotator (admin only); their labels are kept either way."""
    require_admin(db, caller)
    with transaction(db):
        if _find(db, annotator_id) is None:
            raise StoreError(f"no annotator with id {annotator_id}")
        db.execute("UPDATE annotators SET active = ? WHERE id = ?", [int(bool(active)), annotator_id])
        if not active:
            end_sessions(db, annotator_id)
            # Their unlabelled copies may sit in queries the assignment frontier has passed.
            forget_frontier(db)


def find_annotator(db: sqlite_utils.Database, name: str) -> Annotator:
    """The annotator called ``name``.

    Raises:
        StoreError: nobody has that name.
    """
    row = db.execute("SELECT id, name, role, active FROM annotators WHERE name = ?", [name]).fetchone()
    if row is None:
        raise StoreError(f"no annotator named {name!r} (list them with `goldpool annotators DB`)")
    return _annotator(row)



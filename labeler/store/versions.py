"""Frozen golden-set versions, and the labels, pool and texts a version is made from; labels
imported from qrels files and runs added to the pool after a freeze, which feed later versions.

Every function here is admin only: it takes a required keyword ``caller`` (``OWNER`` from the
command line, the signed-in ``Annotator`` in the app) and refuses anyone but an active admin.
A version is immutable in the database itself (triggers refuse UPDATE, DELETE and any INSERT
that would replace or add to a stored version of ``golden_versions`` and ``golden_rows``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from labeler.store.access import require_admin
from labeler.store.connection import transaction
from labeler.store.records import PoolEntry, Recorded
from labeler.store.errors import StoreError
from labeler.store.nuggets import Nugget, write_version_nuggets
from labeler.store.schema import VISIBLE_DOCUMENTS, now
from labeler.store.vocabulary import GRADE_RANGE, Annotator, Caller, is_grade

Item = tuple[str, str]


@dataclass(frozen=True, slots=True)
class RawLabel:
    """The latest label of one annotator on one item."""

    query_id: str
    doc_id: str
    annotator: str
    relevance: int
    at: str
    rubric_hash: str | None


@dataclass(frozen=True, slots=True)
class GoldenRow:
    """One item of a frozen version."""

    query_id: str
    doc_id: str
    relevance: int
    labels: tuple[tuple[str, int, str], ...]  # (annotator, relevance, at), by annotator
    adjudicated: bool
    posterior: dict[int, float] | None
    sources: dict[str, int]


@dataclass(frozen=True, slots=True)
class Version:
    """A frozen version: its name, parent, rule, content hash and manifest."""

    name: str
    created_at: str
    parent: str | None
    rule: str
    content_hash: str
    manifest: dict[str, Any]
    n_rows: int


_LATEST = """
SELECT j.query_id, j.doc_id, n.name, j.relevance, j.at, j.rubric_hash
FROM current_judgments j JOIN annotators n ON n.id = j.annotator_id
ORDER BY j.query_id, j.doc_id, n.name
"""


def current_labels(db: sqlite_utils.Database, *, caller: Caller) -> list[RawLabel]:
    """The latest label per (query_id, doc_id, annotator), every annotator."""
    require_admin(db, caller)
    return [RawLabel(*row) for row in db.execute(_LATEST)]


def current_adjudications(db: sqlite_utils.Database, *, caller: Caller) -> dict[Item, int]:
    """The final grade of every adjudicated item (its latest adjudication row)."""
    require_admin(db, caller)
    rows = db.execute("SELECT query_id, doc_id, relevance FROM current_adjudications")
    return {(q, d): int(r) for q, d, r in rows}


def pool_sources(db: sqlite_utils.Database, *, caller: Caller) -> dict[Item, dict[str, int]]:
    """Every pool entry's provenance: (query_id, doc_id) -> {source: rank}."""
    require_admin(db, caller)
    return {(q, d): json.loads(s) for q, d, s in db.execute("SELECT query_id, doc_id, sources FROM pool")}


def pool_builds(db: sqlite_utils.Database, *, caller: Caller) -> list[dict[str, Any]]:
    """The parameters of every pool build (and pool extension), oldest first."""
    require_admin(db, caller)
    return [{"at": at, **json.loads(p)} for at, p in db.execute("SELECT at, params FROM pool_builds ORDER BY id")]


def texts(
    db: sqlite_utils.Database, query_ids: Iterable[str], doc_ids: Iterable[str] | None, *, caller: Caller
) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """Query texts and (title, text) of documents; ``doc_ids`` None means every document."""
    require_admin(db, caller)
    wanted_q = sorted(set(query_ids))
    queries: dict[str, str] = {}
    for q, t in db.execute("SELECT query_id, text FROM queries ORDER BY query_id"):
        queries[q] = t
    queries = {q: queries[q] for q in wanted_q if q in queries}
    docs: dict[str, tuple[str, str]] = {}
    wanted_d = None if doc_ids is None else set(doc_ids)
    for d, title, text in db.execute(f"SELECT doc_id, title, text FROM documents WHERE {VISIBLE_DOCUMENTS} ORDER BY doc_id"):
        if wanted_d is None or d in wanted_d:
            docs[d] = (title, text)
    return queries, docs


def _version(row: Sequence[Any], n_rows: int) -> Version:
    return Version(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), n_rows)


_VERSION_COLUMNS = "name, created_at, parent, rule, content_hash, manifest"


def list_versions(db: sqlite_utils.Database, *, caller: Caller) -> list[Version]:
    """Every frozen version, oldest first."""
    require_admin(db, caller)
    counts = dict(db.execute("SELECT version, count(*) FROM golden_rows GROUP BY version").fetchall())
    rows = db.execute(f"SELECT {_VERSION_COLUMNS} FROM golden_versions ORDER BY id").fetchall()
    return [_version(r, counts.get(r[0], 0)) for r in rows]


def get_version(db: sqlite_utils.Database, name: str, *, caller: Caller) -> Version:
    """The version called ``name``.

    Raises:
        StoreError: no such version (the message lists what there is).
    """
    require_admin(db, caller)
    row = db.execute(f"SELECT {_VERSION_COLUMNS} FROM golden_versions WHERE name = ?", [name]).fetchone()
    if row is None:
        names = [r[0] for r in db.execute("SELECT name FROM golden_versions ORDER BY id")]
        have = f"versions: {', '.join(names)}" if names else "no version is frozen yet (goldpool freeze DB --version NAME)"
        raise StoreError(f"no golden version named {name!r}; {have}")
    n = db.execute("SELECT count(*) FROM golden_rows WHERE version = ?", [name]).fetchone()[0]
    return _version(row, n)


def latest_version(db: sqlite_utils.Database, *, caller: Caller) -> Version | None:
    """The most recently frozen version, or None."""
    require_admin(db, caller)
    row = db.execute("SELECT name FROM golden_versions ORDER BY id DESC LIMIT 1").fetchone()
    return None if row is None else get_version(db, row[0], caller=caller)


def version_rows(db: sqlite_utils.Database, name: str, *, caller: Caller) -> list[GoldenRow]:
    """The items of version ``name``, sorted by (query_id, doc_id)."""
    get_version(db, name, caller=caller)
    rows = db.execute(
        "SELECT query_id, doc_id, relevance, labels, adjudicated, posterior, sources FROM golden_rows "
        "WHERE version = ? ORDER BY query_id, doc_id",
        [name],
    )
    out = []
    for q, d, rel, labels, adjudicated, posterior, sources in rows:
        post = None if posterior is None else {int(k): v for k, v in json.loads(posterior).items()}
        raw = tuple((a, int(g), at) for a, g, at in json.loads(labels))
        out.append(GoldenRow(q, d, int(rel), raw, bool(adjudicated), post, json.loads(sources)))
    return out


def version_grades(db: sqlite_utils.Database, *, caller: Caller) -> dict[str, list[tuple[Any, Any, Any]]]:
    """Every stored version's (query_id, doc_id, relevance) rows, by version name, as stored:
    what its content hash is computed over."""
    require_admin(db, caller)
    out: dict[str, list[tuple[Any, Any, Any]]] = {}
    for version, q, d, rel in db.execute("SELECT version, query_id, doc_id, relevance FROM golden_rows"):
        out.setdefault(version, []).append((q, d, rel))
    return out


def save_version(
    db: sqlite_utils.Database,
    name: str,
    rule: str,
    content_hash: str,
    manifest: dict[str, Any],
    rows: Sequence[GoldenRow],
    *,
    caller: Caller,
    nuggets: Sequence[Nugget] = (),
) -> tuple[Version, bool]:
    """Store a new version unless the latest one has the same content hash (and, with
    ``nuggets``, the questions' nuggets frozen with it, the same nuggets hash in its manifest).

    Returns:
        (the version, True) when stored; (the latest version, False) when nothing changed.

    Raises:
        StoreError: an empty or taken name, a name rows are already stored under (written by
            another tool), no rows, or a caller who is not an admin; nothing is written.
    """
    require_admin(db, caller)
    name = name.strip()
    if not name or len(name) > 100 or any(ch.isspace() for ch in name) or "@" in name:
        raise StoreError(f"version name {name!r}: give 1 to 100 characters without spaces or '@'")
    if not rows:
        raise StoreError("nothing to freeze: no item has a label yet")
    author = caller.id if isinstance(caller, Annotator) else caller if isinstance(caller, int) else None
    with transaction(db):
        last = db.execute("SELECT name, content_hash, manifest FROM golden_versions ORDER BY id DESC LIMIT 1").fetchone()
        if last is not None and last[1] == content_hash and _nugget_hash(last[2]) == _nugget_hash(manifest):
            return get_version(db, last[0], caller=caller), False
        _refuse_taken(db, name)
        parent = None if last is None else last[0]
        manifest = {**manifest, "name": name, "parent": parent, "content_hash": content_hash}
        # Rows first, the version last: once a version is stored the database refuses any row
        # added to it (schema triggers), so its foreign key is checked at commit.
        db.execute("PRAGMA defer_foreign_keys=ON")
        _insert_rows(db, name, rows)
        write_version_nuggets(db, name, nuggets)
        db.execute(
            "INSERT INTO golden_versions (name, created_at, parent, rule, content_hash, manifest, annotator_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [name, manifest.get("created_at") or now(), parent, rule, content_hash,
             json.dumps(manifest, sort_keys=True, ensure_ascii=False), author],
        )
    return get_version(db, name, caller=caller), True


def _nugget_hash(manifest: str | Mapping[str, Any]) -> str | None:
    """The hash of the nuggets a manifest lists (None: frozen without nuggets)."""
    found = json.loads(manifest) if isinstance(manifest, str) else manifest
    return (found.get("nuggets") or {}).get("hash")


def _refuse_taken(db: sqlite_utils.Database, name: str) -> None:
    """Refuse a version name already frozen, or one rows are stored under without a version."""
    if db.execute("SELECT 1 FROM golden_versions WHERE name = ?", [name]).fetchone():
        raise StoreError(f"golden version {name!r} already exists; versions are immutable, choose a new name")
    planted = db.execute("SELECT count(*) FROM golden_rows WHERE version = ?", [name]).fetchone()[0]
    if planted:  # the triggers guard stored versions only: rows under a new name were written by another tool
        raise StoreError(
            f"golden version {name!r}: {planted} row{'s are' if planted != 1 else ' is'} stored under this name "
            "although it was never frozen; another tool wrote them, so goldpool does not freeze under it "
            "(choose another name, or delete them: DELETE FROM golden_rows WHERE version = '"
            + name.replace("'", "''") + "')")


def _insert_rows(db: sqlite_utils.Database, name: str, rows: Sequence[GoldenRow]) -> None:
    db.conn.executemany(
        "INSERT INTO golden_rows (version, query_id, doc_id, relevance, labels, adjudicated, posterior, sources) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (name, r.query_id, r.doc_id, r.relevance, json.dumps([list(x) for x in r.labels]), int(r.adjudicated),
             None if r.posterior is None else json.dumps({str(k): v for k, v in sorted(r.posterior.items())}),
             json.dumps(r.sources, sort_keys=True))
            for r in rows
        ],
    )


@dataclass(frozen=True, slots=True)
class LabelImport:
    """What importing a qrels file as one annotator's labels did."""

    annotator: str
    added: int  # labels appended
    unchanged: int  # the annotator's current label already had that grade
    pooled: int  # entries that joined the pool with source ``qrels``
    created_annotator: bool


# An access hash nobody can match: the annotator exists for provenance; `goldpool new-token`
# gives them a real token if they are ever to sign in.
_NO_TOKEN = "scrypt:16384:8:1:" + "0" * 64


def ensure_annotator(db: sqlite_utils.Database, name: str) -> tuple[int, bool]:
    """The id of the annotator called ``name``, created without a usable token when new, and
    whether it was created; called inside the transaction of an import."""
    row = db.execute("SELECT id FROM annotators WHERE name = ?", [name]).fetchone()
    if row is not None:
        return int(row[0]), False
    cursor = db.execute(
        "INSERT INTO annotators (name, role, token_salt, token_hash, active, created_at) VALUES (?, 'annotator', '', ?, 1, ?)",
        [name, _NO_TOKEN, now()],
    )
    return int(cursor.lastrowid), True


def _unknown(db: sqlite_utils.Database, table: str, key: str, ids: set[str], where: str = "1") -> set[str]:
    """The ``ids`` with no row in ``table`` that meets ``where``."""
    known: set[str] = set()
    ordered = sorted(ids)
    for start in range(0, len(ordered), 500):
        batch = ordered[start : start + 500]
        sql = f"SELECT {key} FROM {table} WHERE {where} AND {key} IN ({','.join('?' * len(batch))})"
        known.update(r[0] for r in db.execute(sql, batch))
    return ids - known


def import_labels(
    db: sqlite_utils.Database,
    path: str,
    entries: Sequence[tuple[int, str, str, int]],
    annotator: str,
    *,
    caller: Caller,
    priority: Callable[[Mapping[str, int]], float],
) -> LabelImport:
    """Append ``entries`` (line, query_id, doc_id, grade 0-3) as ``annotator``'s labels.

    Entries not yet in the pool join it with source ``qrels`` (their rank: order in the file)
    and ``priority(sources)`` as their priority. A label equal to the annotator's current one
    is not repeated, so importing twice changes nothing. The annotator is created when new
    (without a usable token). Documents of a corpus import still running are unknown.

    Raises:
        StoreError: an unknown query or document (file, line, field), a grade outside 0-3,
            an empty annotator name; nothing is written.
    """
    require_admin(db, caller)
    annotator = annotator.strip()
    if not annotator or len(annotator) > 100:
        raise StoreError("annotator name: give 1 to 100 characters")
    unknown_q = _unknown(db, "queries", "query_id", {e[1] for e in entries})
    unknown_d = _unknown(db, "documents", "doc_id", {e[2] for e in entries}, VISIBLE_DOCUMENTS)
    for line, q, d, grade in entries:
        if q in unknown_q:
            raise StoreError(f"{path}, line {line}, field 'query_id': unknown query {q!r}; import the queries first")
        if d in unknown_d:
            raise StoreError(f"{path}, line {line}, field 'doc_id': unknown document {d!r}; import the corpus first")
        if not is_grade(grade):
            raise StoreError(f"{path}, line {line}, field 'relevance': grade {grade} is outside {GRADE_RANGE}")
    at = now()
    with transaction(db):
        annotator_id, created = ensure_annotator(db, annotator)
        pooled = _pool_new(db, path, annotator, entries, at, priority)
        current = {
            (q, d): r
            for q, d, r in db.execute(
                "SELECT query_id, doc_id, relevance FROM current_judgments WHERE annotator_id = ?", [annotator_id]
            )
        }
        fresh = [(q, d, g) for _, q, d, g in entries if current.get((q, d)) != g]
        db.conn.executemany(
            "INSERT INTO judgments (query_id, doc_id, annotator_id, relevance, note, at, seconds, rubric_hash) "
            "VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)",
            [(q, d, annotator_id, g, f"imported from {path}", at) for q, d, g in fresh],
        )
    return LabelImport(annotator, len(fresh), len(entries) - len(fresh), pooled, created)


def _pool_new(
    db: sqlite_utils.Database,
    path: str,
    annotator: str,
    entries: Sequence[tuple[int, str, str, int]],
    at: str,
    priority: Callable[[Mapping[str, int]], float],
) -> int:
    """Add the entries' items missing from the pool with source ``qrels``; return how many."""
    in_pool = {(q, d) for q, d in db.execute("SELECT query_id, doc_id FROM pool")}
    last = dict(db.execute("SELECT query_id, max(position) FROM pool GROUP BY query_id").fetchall())
    rank: dict[str, int] = {}
    new = []
    for _, q, d, _ in entries:
        rank[q] = rank.get(q, 0) + 1
        if (q, d) in in_pool:
            continue
        in_pool.add((q, d))
        last[q] = last.get(q, 0) + 1
        sources = {"qrels": rank[q]}
        new.append((q, d, json.dumps(sources), priority(sources), last[q], at))
    if not new:
        return 0
    params = {"source": "qrels", "path": path, "annotator": annotator, "added": len(new), "sources": ["qrels"]}
    build = db.execute("INSERT INTO pool_builds (at, params) VALUES (?, ?)", [at, json.dumps(params, sort_keys=True)])
    db.conn.executemany(
        "INSERT INTO pool (query_id, doc_id, sources, priority, position, added_at, build_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(*row, build.lastrowid) for row in new],
    )
    return len(new)


@dataclass(frozen=True, slots=True)
class PoolExtension:
    """What adding a run's top-K to the pool did."""

    run: str
    depth: int
    added: int  # new pool entries (unjudged: they join the labelling queue)
    extended: int  # entries already pooled whose provenance now includes the run
    judged: int  # of the run's top-K entries, how many already carry a label


#: ``plan(ranking, recorded)``: a run's ``{query_id: [doc_id, ...]}`` and the pool as recorded
#: -> (entries to add, existing entries whose sources grew).
ExtendPlan = Callable[[dict[str, list[str]], Recorded], tuple[Sequence[PoolEntry], Sequence[PoolEntry]]]


def extend_pool(db: sqlite_utils.Database, run: str, depth: int, *, caller: Caller, plan: ExtendPlan) -> PoolExtension:
    """Add run ``run``'s top-``depth`` documents per query to the pool (provenance only grows).

    ``plan`` is called under the write lock with the run's ranking and the pool as recorded;
    its new entries are inserted and the grown ones get their new sources and priority.

    Raises:
        StoreError: no such run, or a depth below 1.
    """
    require_admin(db, caller)
    if depth < 1:
        raise StoreError(f"depth {depth}: give 1 or more")
    if db.execute("SELECT 1 FROM runs WHERE name = ?", [run]).fetchone() is None:
        raise StoreError(f"no run named {run!r} in the project")
    ranking: dict[str, list[str]] = {}
    for q, d in db.execute(
        "SELECT query_id, doc_id FROM run_entries WHERE run = ? AND rank <= ? ORDER BY query_id, rank", [run, depth]
    ):
        ranking.setdefault(q, []).append(d)
    with transaction(db):
        recorded: Recorded = {}
        for q, d, s, pos in db.execute("SELECT query_id, doc_id, sources, position FROM pool"):
            recorded.setdefault(q, {})[d] = (json.loads(s), pos)
        entries, extended = plan(ranking, recorded)
        at = now()
        params = {"source": run, "run_depth": depth, "added": len(entries), "sources": [run], "kind": "add-run"}
        build = db.execute("INSERT INTO pool_builds (at, params) VALUES (?, ?)", [at, json.dumps(params, sort_keys=True)])
        db.conn.executemany(
            "INSERT INTO pool (query_id, doc_id, sources, priority, position, added_at, build_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(e.query_id, e.doc_id, json.dumps(dict(e.sources), sort_keys=True), e.priority, e.position, at, build.lastrowid)
             for e in entries],
        )
        db.conn.executemany(
            "UPDATE pool SET sources = ?, priority = ? WHERE query_id = ? AND doc_id = ?",
            [(json.dumps(dict(e.sources), sort_keys=True), e.priority, e.query_id, e.doc_id) for e in extended],
        )
    judged = {(q, d) for q, d in db.execute("SELECT DISTINCT query_id, doc_id FROM judgments")}
    n_judged = sum((q, d) in judged for q, docs in ranking.items() for d in docs)
    return PoolExtension(run, depth, len(entries), len(extended), n_judged)

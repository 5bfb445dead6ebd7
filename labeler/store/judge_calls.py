"""A judge's calls: the cache of their replies, the verdicts a run records, and their repeats.

A cached reply is keyed on everything that changes it (:class:`CallKey`): the endpoint, the
model, the prompt hash, the content of the item and the order shown, the temperature, the
token limit, every other sampling option sent, and the repeat's index. A call under other
settings is another call. Rows cached before the key named the endpoint and the token limit
(``endpoint`` '' and ``max_tokens`` 0; they were all made at temperature 0 with no other
option, repeat 0) answer a call at temperature 0 with no other option and repeat 0 from any
endpoint, under any token limit their reply fits in (at most ``tokens_out`` tokens, or any
limit when the endpoint did not report it): the settings they were made with, as far as they
were recorded.

A verdict of a run records its settings and how many repeats it combines
(``judge_verdict_settings``); the replies of a verdict of several repeats are kept with their
indexes (``judge_repeats``), written with the verdict in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlite_utils

from labeler.store.access import require_admin
from labeler.store.connection import transaction
from labeler.store.schema import now
from labeler.store.verdicts import CallResult, Target, _insert_judge
from labeler.store.vocabulary import Caller

#: ``endpoint`` and ``max_tokens`` of a reply cached before the key named them.
UNRECORDED_ENDPOINT = ""
UNRECORDED_MAX_TOKENS = 0


@dataclass(frozen=True, slots=True)
class CallKey:
    """Everything a judge's reply depends on: what the cache keys it on.

    ``options`` is the canonical JSON (sorted keys) of every sampling option sent beside the
    temperature and the token limit (``{}``: none); ``repeat`` the index of a repeated call.
    """

    model: str
    prompt_hash: str
    content_hash: str
    shown_order: str | None
    endpoint: str
    temperature: float
    max_tokens: int
    options: str = "{}"
    repeat: int = 0

    def settings(self) -> str:
        """The settings of the call as a verdict records them: canonical JSON, no repeat index."""
        return settings_json(self.endpoint, self.temperature, self.max_tokens, self.options)

    @property
    def legacy_compatible(self) -> bool:
        """Whether a reply cached before endpoints and token limits were recorded can answer it."""
        return self.temperature == 0 and self.options == "{}" and self.repeat == 0


def settings_json(endpoint: str, temperature: float, max_tokens: int, options: str = "{}") -> str:
    """The canonical JSON of a call's settings.

    >>> settings_json("http://h/v1", 0.0, 16)
    '{"endpoint":"http://h/v1","max_tokens":16,"options":{},"temperature":0.0}'
    """
    return json.dumps({"endpoint": endpoint, "temperature": float(temperature), "max_tokens": int(max_tokens),
                       "options": json.loads(options)}, sort_keys=True, separators=(",", ":"))


_CACHE_COLUMNS = "raw, verdict, parseable, tokens_in, tokens_out, latency, raw_length"


def cached_calls(db: sqlite_utils.Database, like: CallKey) -> dict[tuple[str, str, int], CallResult]:
    """Every cached reply of a call with ``like``'s model, prompt, endpoint and settings, by
    (content hash, order ('' for none), repeat), in two queries (the rows cached before the key named the settings among them, where
    ``like``'s settings are theirs and an exact row does not take their place)."""
    found: dict[tuple[str, str, int], CallResult] = {}
    if like.legacy_compatible:
        for row in db.execute(
            f"SELECT content_hash, shown_order, {_CACHE_COLUMNS} FROM judge_cache WHERE model = ? AND prompt_hash = ? "
            "AND endpoint = ? AND max_tokens = ? AND temperature = 0 AND options = '{}' AND repeat = 0 "
            "AND (tokens_out IS NULL OR tokens_out <= ?)",
            [like.model, like.prompt_hash, UNRECORDED_ENDPOINT, UNRECORDED_MAX_TOKENS, like.max_tokens],
        ):
            found[(row[0], row[1], 0)] = CallResult(row[2], row[3], bool(row[4]), *row[5:8], raw_length=row[8])
    for row in db.execute(
        f"SELECT content_hash, shown_order, repeat, {_CACHE_COLUMNS} FROM judge_cache WHERE model = ? AND prompt_hash = ? "
        "AND endpoint = ? AND temperature = ? AND max_tokens = ? AND options = ?",
        [like.model, like.prompt_hash, like.endpoint, like.temperature, like.max_tokens, like.options],
    ):
        found[(row[0], row[1], row[2])] = CallResult(row[3], row[4], bool(row[5]), *row[6:9], raw_length=row[9])
    return found


def cache_reply(db: sqlite_utils.Database, result: CallResult) -> None:
    """Cache a reply under its key (``result.key``), inside the caller's transaction or alone.

    Only a reply that may be cached (:attr:`CallResult.cacheable`) and knows its key is; the
    first reply of a key stays.
    """
    key = result.key
    if key is None or not result.cacheable:
        return
    db.conn.execute(
        "INSERT OR IGNORE INTO judge_cache (model, prompt_hash, content_hash, shown_order, endpoint, temperature, "
        f"max_tokens, options, repeat, {_CACHE_COLUMNS}, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [key.model, key.prompt_hash, key.content_hash, key.shown_order or "", key.endpoint, key.temperature,
         key.max_tokens, key.options, key.repeat, result.raw, result.verdict, int(result.parseable), result.tokens_in,
         result.tokens_out, result.latency, result.raw_length, now()],
    )


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One verdict a run records: its target and the reply (or the combination of its repeats)."""

    target: Target
    result: CallResult
    repeats: Sequence[CallResult] = ()  # the replies of each repeat, in index order (several repeats)
    cache: bool = True  # whether ``result`` arrived from the endpoint and is to be cached


def record_judge_calls(db: sqlite_utils.Database, judge: str, model: str, prompt_hash: str, settings: str | None,
                       calls: Iterable[RecordedCall]) -> None:
    """Append verdicts of a run, in one transaction: each verdict, its settings and repeats,
    and, for a reply that arrived and may be cached, its cache row.

    A failed call (``result.error``) is recorded but not cached, so the next run tries again.
    """
    with transaction(db):
        for call in calls:
            _insert_judge(db, judge, call.target, model, prompt_hash, call.result, "run")
            if settings is not None:
                verdict_id = db.conn.execute("SELECT last_insert_rowid()").fetchone()[0]
                db.conn.execute("INSERT INTO judge_verdict_settings (verdict_id, settings, repeats) VALUES (?, ?, ?)",
                                [verdict_id, settings, max(1, len(call.repeats))])
                if call.repeats:
                    db.conn.executemany(
                        "INSERT INTO judge_repeats (verdict_id, repeat, verdict, parseable, raw, raw_length, tokens_in, "
                        "tokens_out, latency, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [(verdict_id, i, r.verdict, int(r.parseable), r.raw, r.raw_length, r.tokens_in, r.tokens_out,
                          r.latency, r.error) for i, r in enumerate(call.repeats)])
            if call.cache and not call.repeats:
                cache_reply(db, call.result)


def cache_replies(db: sqlite_utils.Database, results: Iterable[CallResult]) -> None:
    """Cache replies that arrived (each under its key) in one transaction."""
    with transaction(db):
        for result in results:
            cache_reply(db, result)


def done_targets(db: sqlite_utils.Database, judge: str, model: str, prompt_hash: str, settings: str,
                 repeats: int = 1, *, legacy: bool = False) -> set[tuple]:
    """(item_id, query_id, doc_id, order) the judge already has a verdict for with this model,
    prompt and settings, combining ``repeats`` repeats (a failed call is not done).

    ``legacy``: the settings are those every verdict made before settings were recorded had
    (temperature 0, no other option, one call), so such a verdict counts as done too.
    """
    rows = db.execute(
        "SELECT v.item_id, v.query_id, v.doc_id, v.shown_order FROM judge_verdicts v "
        "LEFT JOIN judge_verdict_settings s ON s.verdict_id = v.id "
        "WHERE v.judge = ? AND v.model = ? AND v.prompt_hash = ? AND v.error IS NULL "
        "AND ((s.settings = ? AND s.repeats = ?) OR (s.verdict_id IS NULL AND ?))",
        [judge, model, prompt_hash, settings, repeats, int(legacy and repeats == 1)],
    )
    return {tuple(r) for r in rows}


@dataclass(frozen=True, slots=True)
class RepeatVerdict:
    """One repeat's verdict behind a judge's current verdict."""

    task: str
    item_id: str | None
    query_id: str | None
    doc_id: str | None
    shown_order: str | None
    repeat: int
    verdict: str | None
    error: str | None


def repeat_verdicts(db: sqlite_utils.Database, judge: str, *, caller: Caller) -> list[RepeatVerdict]:
    """The repeats behind each current verdict of ``judge`` that combines several (admin only)."""
    require_admin(db, caller)
    return [RepeatVerdict(*r) for r in db.execute(
        "SELECT c.task, c.item_id, c.query_id, c.doc_id, c.shown_order, r.repeat, r.verdict, r.error "
        "FROM current_judge_verdicts c JOIN judge_repeats r ON r.verdict_id = c.id WHERE c.judge = ? "
        "ORDER BY c.task, c.item_id, c.query_id, c.doc_id, c.shown_order, r.repeat", [judge])]


def verdict_settings(db: sqlite_utils.Database, judge: str) -> dict[str, dict[str, Any]]:
    """Per task, what the judge's current verdicts were made under: ``{"settings": [decoded
    settings, each once], "repeats": [K, ...], "unrecorded": n}`` (``unrecorded``: verdicts made
    before settings were recorded, or imported)."""
    out: dict[str, dict[str, Any]] = {}
    for task, settings, repeats, n in db.execute(
        "SELECT c.task, s.settings, coalesce(s.repeats, 1), count(*) FROM current_judge_verdicts c "
        "LEFT JOIN judge_verdict_settings s ON s.verdict_id = c.id WHERE c.judge = ? "
        "GROUP BY c.task, s.settings, coalesce(s.repeats, 1) ORDER BY c.task, s.settings", [judge]
    ):
        entry = out.setdefault(task, {"settings": [], "repeats": [], "unrecorded": 0})
        if settings is None:
            entry["unrecorded"] += n
        elif (decoded := json.loads(settings)) not in entry["settings"]:
            entry["settings"].append(decoded)
        if repeats not in entry["repeats"]:
            entry["repeats"].append(repeats)
    return out


def verdict_tokens(db: sqlite_utils.Database, judge: str) -> dict[str, tuple[int, int, int]]:
    """Per task, (current verdicts, prompt tokens, reply tokens) the endpoint reported for them
    (a verdict of K repeats counts its K calls' tokens)."""
    return {task: (n, tin or 0, tout or 0) for task, n, tin, tout in db.execute(
        "SELECT task, count(*), sum(tokens_in), sum(tokens_out) FROM current_judge_verdicts WHERE judge = ? GROUP BY task",
        [judge])}


def record_jury(db: sqlite_utils.Database, name: str, model: str, prompt_hash: str,
                verdicts: Iterable[tuple[Target, str | None]], *, caller: Caller) -> int:
    """Append a jury's verdicts under judge ``name`` (source ``jury``), in one transaction (admin
    only); a unit whose current verdict of ``name`` is already the same is left alone. Returns
    the verdicts written."""
    require_admin(db, caller)
    current = {(r[0], r[1], r[2], r[3], r[4]): r[5] for r in db.execute(
        "SELECT task, item_id, query_id, doc_id, shown_order, verdict FROM current_judge_verdicts WHERE judge = ? "
        "AND source = 'jury' AND model = ? AND prompt_hash = ?", [name, model, prompt_hash])}
    written = 0
    with transaction(db):
        for target, verdict in verdicts:
            key = (target.task, target.item_id, target.query_id, target.doc_id, target.shown_order)
            if key in current and current[key] == verdict:
                continue
            _insert_judge(db, name, target, model, prompt_hash, CallResult(None, verdict, True, None, None, None), "jury")
            written += 1
    return written

"""Everything that changes a judge's reply keys its cached call, and a verdict can be the
majority of several repeats of one call.

The call cache is keyed anew on the endpoint (its base URL, without user info), the sampling
settings (temperature, token limit, any other option sent, as canonical JSON) and the repeat's
index, beside the model, the prompt hash, the item's content and the order shown. Rows cached
before this step keep what is known of how they were made: temperature 0 and no other option
(the only settings ever sent), repeat 0; their endpoint ('') and token limit (0) were not
recorded, and :func:`labeler.store.judge_calls.cached_calls` reads them as made by any endpoint
under any token limit their reply fits in.

A judge verdict made by a run records the settings it was made under and how many repeats it
combines (``judge_verdict_settings``, one row per verdict; none: not recorded, one call). The
replies of a verdict of several repeats are kept in ``judge_repeats``, each with its index and
the id of the verdict they make. The new tables are made IF NOT EXISTS.
"""

from __future__ import annotations

SQL = """
        CREATE TABLE judge_cache_keyed (
            model TEXT NOT NULL,
            prompt_hash TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            shown_order TEXT NOT NULL DEFAULT '',
            endpoint TEXT NOT NULL,
            temperature REAL NOT NULL,
            max_tokens INTEGER NOT NULL,
            options TEXT NOT NULL DEFAULT '{}',
            repeat INTEGER NOT NULL DEFAULT 0,
            raw TEXT NOT NULL,
            verdict TEXT,
            parseable INTEGER NOT NULL,
            tokens_in INTEGER,
            tokens_out INTEGER,
            latency REAL,
            at TEXT NOT NULL,
            raw_length INTEGER,
            PRIMARY KEY (model, prompt_hash, content_hash, shown_order, endpoint, temperature, max_tokens, options, repeat)
        ) WITHOUT ROWID;
        INSERT INTO judge_cache_keyed (model, prompt_hash, content_hash, shown_order, endpoint, temperature, max_tokens,
                                       options, repeat, raw, verdict, parseable, tokens_in, tokens_out, latency, at,
                                       raw_length)
            SELECT model, prompt_hash, content_hash, shown_order, '', 0, 0, '{}', 0, raw, verdict, parseable, tokens_in,
                   tokens_out, latency, at, raw_length
            FROM judge_cache;
        DROP TABLE judge_cache;
        ALTER TABLE judge_cache_keyed RENAME TO judge_cache;

        CREATE TABLE IF NOT EXISTS judge_verdict_settings (
            verdict_id INTEGER PRIMARY KEY REFERENCES judge_verdicts(id),
            settings TEXT NOT NULL,
            repeats INTEGER NOT NULL DEFAULT 1
        );
        CREATE TABLE IF NOT EXISTS judge_repeats (
            id INTEGER PRIMARY KEY,
            verdict_id INTEGER NOT NULL REFERENCES judge_verdicts(id),
            repeat INTEGER NOT NULL,
            verdict TEXT,
            parseable INTEGER NOT NULL,
            raw TEXT,
            raw_length INTEGER,
            tokens_in INTEGER,
            tokens_out INTEGER,
            latency REAL,
            error TEXT,
            UNIQUE (verdict_id, repeat)
        );
        CREATE TRIGGER IF NOT EXISTS judge_verdict_settings_no_update BEFORE UPDATE ON judge_verdict_settings
            BEGIN SELECT RAISE(ABORT, 'judge verdicts are append-only'); END;
        CREATE TRIGGER IF NOT EXISTS judge_verdict_settings_no_delete BEFORE DELETE ON judge_verdict_settings
            BEGIN SELECT RAISE(ABORT, 'judge verdicts are append-only'); END;
        CREATE TRIGGER IF NOT EXISTS judge_repeats_no_update BEFORE UPDATE ON judge_repeats
            BEGIN SELECT RAISE(ABORT, 'judge repeats are append-only'); END;
        CREATE TRIGGER IF NOT EXISTS judge_repeats_no_delete BEFORE DELETE ON judge_repeats
            BEGIN SELECT RAISE(ABORT, 'judge repeats are append-only'); END;
"""

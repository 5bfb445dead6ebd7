"""A judge's card: its calibration against people as saved by ``calibrate --judge NAME --save``,
one row per task, with the model and prompt hashes its verdicts were made under, so a later
number resting on the judge can say how far to trust it, or that its prompt has changed since.
Append-only; the latest row of a (judge, task) is the card. IF NOT EXISTS: replaying the step
changes nothing.
"""

from __future__ import annotations

SQL = """
        CREATE TABLE IF NOT EXISTS judge_cards (
            id INTEGER PRIMARY KEY,
            judge TEXT NOT NULL,
            task TEXT NOT NULL REFERENCES tasks(name),
            models TEXT NOT NULL,
            prompt_hashes TEXT NOT NULL,
            calibrated_at TEXT NOT NULL,
            n INTEGER NOT NULL,
            n_pairs INTEGER NOT NULL,
            agreement REAL, agreement_low REAL, agreement_high REAL,
            kappa REAL, kappa_low REAL, kappa_high REAL,
            ceiling_n INTEGER NOT NULL,
            ceiling_agreement REAL, ceiling_agreement_low REAL, ceiling_agreement_high REAL,
            ceiling_kappa REAL, ceiling_kappa_low REAL, ceiling_kappa_high REAL,
            details TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX IF NOT EXISTS judge_cards_judge ON judge_cards(judge, task, id);
        CREATE TRIGGER IF NOT EXISTS judge_cards_no_update BEFORE UPDATE ON judge_cards
            BEGIN SELECT RAISE(ABORT, 'judge cards are append-only: save a new one'); END;
        CREATE TRIGGER IF NOT EXISTS judge_cards_no_delete BEFORE DELETE ON judge_cards
            BEGIN SELECT RAISE(ABORT, 'judge cards are append-only: save a new one'); END;
"""

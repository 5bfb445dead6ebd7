"""The data dictionary of a goldpool project: its tables, its views, how it writes a time.

The tables are made by the migrations (:mod:`labeler.store.migrations`, one file per step);
connections are opened in :mod:`labeler.store.connection`, errors are in
:mod:`labeler.store.errors`.

Tables (IR vocabulary: ``query_id``, ``doc_id``, ``relevance``):

- ``documents``: doc_id, title, text, meta (JSON), content_hash (sha256 of title + text).
- ``queries``: query_id, text, meta (JSON), content_hash.
- ``runs``: name, path, content_hash (of the file), imported_at, n_rows, meta (JSON).
- ``run_entries``: run, query_id, doc_id, rank (1-based, trec_eval order), score.
- ``pool``: query_id, doc_id, sources (JSON ``{source: rank}``), priority (reciprocal-rank
  fusion), position (1-based order of labelling within the query), added_at, build_id.
- ``pool_builds``: id, at, params (JSON: depths, model, sources, counts).
- ``annotators``: id, name, role (``annotator`` | ``admin``), token_salt, token_hash, active,
  created_at.
- ``assignments``: query_id, doc_id, annotator_id, shown_order (per-annotator shuffle),
  assigned_at.
- ``reservations``: query_id, doc_id, annotator_id, expires_at (single-label items only).
- ``judgments``: id, query_id, doc_id, annotator_id, relevance (0-3), note, at, seconds,
  rubric_hash. Append-only: a change is a new row; the latest row per (query_id, doc_id,
  annotator_id) counts (view ``current_judgments``).
- ``skips``: id, query_id, doc_id, annotator_id, at, seconds, note. Append-only.
- ``adjudications``: id, query_id, doc_id, annotator_id (the admin), relevance, note, at.
  Append-only; the latest row per (query_id, doc_id) is the final grade (view
  ``current_adjudications``).
- ``rubrics``: hash, text, created_at (first use), annotator_id. One row per distinct text.
- ``rubric_changes``: id, hash, at, annotator_id. Append-only; the latest row is the rubric
  in force.
- ``settings``: key, value (JSON).
- ``verdict_items``: item_id, kind (``faithfulness`` | ``pairwise``), question, contexts
  (JSON list, faithfulness), context (pairwise, optional), response (faithfulness),
  response_a, response_b, model_a, model_b, content_hash (sha256 of the texts), meta (JSON),
  added_at.
- ``human_verdicts``: id, item_id, annotator_id, verdict (``SUPPORTED`` | ``UNSUPPORTED`` |
  ``A`` | ``B`` | ``TIE``, naming the response, not the slot), shown_order (``AB`` | ``BA``
  for pairwise: which response was shown first), note, at, seconds, rubric_hash, source
  (``app`` | ``import``). Append-only; the latest row per (item_id, annotator_id) counts (view
  ``current_human_verdicts``).
- ``judge_verdicts``: id, judge, task (``relevance`` | ``faithfulness`` | ``pairwise``),
  item_id (or query_id, doc_id for relevance), model, prompt_hash, shown_order, verdict
  (``0``-``3`` for relevance; NULL when the reply could not be parsed or the call failed),
  parseable, raw (the reply, API key masked, cut to a bounded length), tokens_in, tokens_out,
  latency, error, at, source (``run`` | ``import``), raw_length (the reply's length in
  characters when raw holds only its start; NULL when raw is whole). Append-only; never shares
  a table with human verdicts. The latest row per (judge, task, item_id, query_id, doc_id,
  shown_order) counts (view ``current_judge_verdicts``).
- ``judge_cache``: model, prompt_hash, content_hash, shown_order ('' when there is no order),
  raw, verdict, parseable, tokens_in, tokens_out, latency, at, raw_length: one row per call made.
- ``golden_versions``: id, name (unique), created_at, parent (name of the previous version),
  rule, content_hash (sha256 of the sorted aggregated rows), manifest (JSON), annotator_id
  (who froze it; NULL for the project owner). Immutable: no UPDATE or DELETE, and no INSERT
  (OR REPLACE) over a stored version (triggers).
- ``golden_rows``: version, query_id, doc_id, relevance (the aggregated grade), labels (JSON
  list of the raw labels: annotator, relevance, at), adjudicated (0/1), posterior (JSON
  grade -> probability under dawid-skene, else NULL), sources (JSON pool provenance).
  Immutable: no UPDATE or DELETE, and no INSERT into a stored version (triggers).
- ``verdict_assignments``: item_id, annotator_id, kind, batch (the annotator's batch number),
  shown_order (per-annotator shuffle within the kind), slot_order (pairwise: ``AB`` when
  response A is shown on the left, ``BA`` otherwise), assigned_at. One row per (item_id,
  annotator_id).
- ``verdict_skips``: id, item_id, annotator_id, at, seconds, note. Append-only.
- ``imports``: id, path, started_at, finished_at (NULL while running), pid, host. A corpus
  import writes its documents in many short transactions, each row carrying the import's id
  (``documents.import_id``); rows of an import that has not finished are invisible
  (:data:`VISIBLE_DOCUMENTS`), and are deleted when it fails, or, after ``kill -9``, by the
  next import once the process named by ``pid`` on ``host`` is gone.
- ``sessions``: id, secret_hash (sha256 of the browser's random session secret; the secret
  itself is never stored), annotator_id, token_fingerprint (of the access token in force at
  sign-in, so a new token ends the session), created_at, expires_at. A sign-in kept across
  reloads; deleted by sign-out, deactivation and a new token.
- ``preferences``: annotator_id, key, value (JSON). One annotator's own display choices.
- ``overlap_waiting``: query_id, doc_id. Overlap entries handed out to fewer annotators than
  ``overlap_k``: their next copies go to the next other annotator who asks for work.
- ``candidates``: query_id, source, doc_id, rank (1-based): each pool source's ranking of a
  query to the candidate depth (``build-pool --candidate-depth``), deeper than the pool. What
  an adaptive pooling strategy may draw from; a build replaces the rankings of the sources it
  ran. One row per (query_id, source, doc_id).
- ``systems``: name, added_at. A generating system whose answers were imported.
- ``answers``: answer_id, system, query_id (the project query the question is, or NULL),
  question, response ('' for an abstention), contexts (JSON list of the texts given to the
  generator), retrieved_ids (JSON list of ranked doc_ids of the corpus), reference (NULL when
  none), content_hash (sha256 of the texts and claims given), meta (JSON), added_at. No UPDATE
  or DELETE (triggers): labels are given on the stored text.
- ``claims``: claim_id (``ANSWER_ID#N``), answer_id, n (1-based, in answer order), text,
  source (``file`` | ``judge`` | ``sentence``), method (the splitter's version or the judge
  prompt's hash; '' for claims from the file), meta (JSON: the judge's name and model),
  added_at. One decomposition per answer; no UPDATE or DELETE (triggers).
- ``answer_batches``: answer_id, batch. The batch an answer was imported in (``--batch``, by
  default the import's date); one per answer, never changed (triggers).
- ``answer_samples``: name, system, design (``random`` | ``stratified`` | ``judge-uncertain``), seed, params (JSON:
  n, by, batch, population), created_at. ``answer_sample_items``: sample, answer_id,
  probability (in (0, 1]), stratum: the answers people label under the sample
  (``label-settings answer_sample=``). Neither changes once written (triggers).
- ``samples``: name, design (``queries`` | ``stratified``), judge (whose grades shaped the
  strata, or NULL), seed, params (JSON: share, budget, pool size, queries), created_at.
- ``sample_items``: sample, query_id, doc_id, probability (the entry's inclusion probability,
  in (0, 1]): the pool entries people label under the sample. Neither table changes once
  written (triggers).
- ``nugget_proposals``: id, query_id, judge, model, prompt_hash, n (1-based, in the reply's
  order), text, importance (``vital`` | ``okay``), at: what a judge model proposed as a
  question's nuggets (``goldpool nuggetize``). Never changes (triggers); never shares a table
  with people's nuggets.
- ``nuggets``: nugget_id (``QUERY_ID/nN`` unless given), query_id, origin (``person``: written
  or imported by people; ``proposal``: a judge's proposal people took up or dropped, with
  ``proposal_id``, one nugget per proposal; ``merge``: made by merging others, listed in
  ``merged_from``, JSON), created_at, annotator_id (NULL for the project owner). Never changes.
- ``nugget_revisions``: id, nugget_id, text, importance, position (the order within the
  question), status (``active`` | ``dropped`` | ``merged``), doc_ids (JSON: the chunks it came
  from), merged_into, annotator_id, at, source (``app`` | ``import``). Append-only: an edit is
  a new row; the latest row per nugget counts (view ``current_nuggets``).
- ``nugget_items``: item_id (a ``verdict_items`` row of the ``nuggets`` task,
  ``ANSWER_ID@nugget=NUGGET_ID``), answer_id, nugget_id: what a support verdict is about.
  Support verdicts are human and judge verdicts like any other (``human_verdicts``,
  ``judge_verdicts``).
- ``golden_nuggets``: version, nugget_id, query_id, text, importance, position, doc_ids: the
  nuggets a golden version froze (its manifest gives their count and hash). Immutable as
  ``golden_rows``.

Views: ``current_judgments``, ``current_adjudications``, ``current_human_verdicts``,
``current_judge_verdicts`` and ``current_nuggets`` hold the current row of each append-only table: its highest id per
item and person, with the table's columns. They are defined here once (``CURRENT_*``) and
created by the migrations that need them; a migration that adds a column re-creates the view
from a new constant, so a released step stays as it ran. Every reader of current labels or
verdicts selects from them; none spells "the latest row" in its own SQL.

Times are UTC ISO-8601 strings with microseconds (``2026-11-30T18:00:00.123456+00:00``).
"""

from __future__ import annotations

from datetime import UTC, datetime

#: SQL condition true for a ``documents`` row that belongs to the project: added before
#: imports were tracked, or by an import that finished. Every reader of the whole corpus
#: (counts, builds, id checks) filters on it.
VISIBLE_DOCUMENTS = "coalesce(import_id, 0) NOT IN (SELECT id FROM imports WHERE finished_at IS NULL)"

# The views of the current rows, each one CREATE VIEW statement (see "Views" above); the
# migrations that create them read them from here.
CURRENT_JUDGMENTS = """CREATE VIEW current_judgments AS
            SELECT j.id, c.query_id, c.doc_id, c.annotator_id, j.relevance, j.note, j.at, j.seconds, j.rubric_hash
            FROM (SELECT query_id, doc_id, annotator_id, max(id) AS id FROM judgments
                  GROUP BY query_id, doc_id, annotator_id) c
            JOIN judgments j ON j.id = c.id;"""

CURRENT_ADJUDICATIONS = """CREATE VIEW current_adjudications AS
            SELECT a.id, c.query_id, c.doc_id, a.annotator_id, a.relevance, a.note, a.at
            FROM (SELECT query_id, doc_id, max(id) AS id FROM adjudications GROUP BY query_id, doc_id) c
            JOIN adjudications a ON a.id = c.id;"""

CURRENT_HUMAN_VERDICTS = """CREATE VIEW current_human_verdicts AS
            SELECT h.id, c.item_id, c.annotator_id, h.verdict, h.shown_order, h.note, h.at, h.seconds, h.rubric_hash,
                   h.source
            FROM (SELECT item_id, annotator_id, max(id) AS id FROM human_verdicts GROUP BY item_id, annotator_id) c
            JOIN human_verdicts h ON h.id = c.id;"""

CURRENT_JUDGE_VERDICTS = """CREATE VIEW current_judge_verdicts AS
            SELECT v.id, c.judge, c.task, c.item_id, c.query_id, c.doc_id, v.model, v.prompt_hash, c.shown_order,
                   v.verdict, v.parseable, v.raw, v.tokens_in, v.tokens_out, v.latency, v.error, v.at, v.source,
                   v.raw_length
            FROM (SELECT judge, task, item_id, query_id, doc_id, shown_order, max(id) AS id FROM judge_verdicts
                  GROUP BY judge, task, item_id, query_id, doc_id, shown_order) c
            JOIN judge_verdicts v ON v.id = c.id;"""

CURRENT_NUGGETS = """CREATE VIEW IF NOT EXISTS current_nuggets AS
            SELECT r.id, c.nugget_id, n.query_id, n.origin, n.proposal_id, n.merged_from, r.text, r.importance,
                   r.position, r.status, r.doc_ids, r.merged_into, r.annotator_id, r.at, r.source
            FROM (SELECT nugget_id, max(id) AS id FROM nugget_revisions GROUP BY nugget_id) c
            JOIN nugget_revisions r ON r.id = c.id JOIN nuggets n ON n.nugget_id = c.nugget_id;"""


#: ``current_nuggets`` as of step 23: the same rows, found from each nugget (its highest revision
#: id, by ``nugget_revisions_nugget``), so a reader's condition on a question (``nuggets_query``)
#: or a nugget reads that question's or that nugget's rows only; the first form grouped every
#: revision of the project before a question's could be picked.
CURRENT_NUGGETS_BY_NUGGET = """CREATE VIEW current_nuggets AS
            SELECT r.id, n.nugget_id, n.query_id, n.origin, n.proposal_id, n.merged_from, r.text, r.importance,
                   r.position, r.status, r.doc_ids, r.merged_into, r.annotator_id, r.at, r.source
            FROM nuggets n
            JOIN nugget_revisions r ON r.id = (SELECT max(id) FROM nugget_revisions WHERE nugget_id = n.nugget_id);"""


def now() -> str:
    """The current UTC time as the store writes it."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


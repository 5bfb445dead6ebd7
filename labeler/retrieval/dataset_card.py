"""The dataset card: the README.md written beside an export of a golden-set version.

It says how to recompute the content hash from the exported files, what the set holds (queries,
items, labels, grades), at which relevance level its counts are, how it was aggregated, how far
its annotators agree, and how its pool was built, all read from the version's manifest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from calibration.formatting import fixed
from labeler.retrieval.manifest import shareable_build
from labeler.store.versions import Version
from labeler.store.vocabulary import GRADES

# Shell commands that recompute the content hash from an export (the README shows the same).
_HASH_COMMANDS = (
    "awk -v OFS='\\t' '{print $1, $3, $4}' qrels.txt | LC_ALL=C sort | sha256sum   # --format trec",
    "tail -n +2 qrels/test.tsv | LC_ALL=C sort | sha256sum                        # --format beir",
)


def dataset_card(version: Version, formats: Sequence[str], relevant: dict[str, int] | None = None) -> str:
    """The README.md written beside an export: counts, histogram, rubric, agreement, pooling.

    ``relevant`` (:func:`labeler.retrieval.manifest.relevant_counts`) gives the relevant counts
    and the level they are at; without it, the manifest's own.
    """
    m = version.manifest
    counts = m.get("counts", {})
    relevant = relevant if relevant is not None else {k: counts[k] for k in ("relevance_level", "relevant_items",
                                                                           "queries_with_relevant") if k in counts}
    lines = [*_overview(version, formats, counts), *_grade_rows(counts.get("per_grade", {})),
             *_relevance(relevant), *_aggregation(version), *_pooling(m.get("pool", {}))]
    lines += [
        "",
        "Unjudged is not irrelevant: score a run with `goldpool eval` and read Judged@k beside it.",
        f"Files: {', '.join(formats)} (see manifest.json for their sha256).",
        "",
    ]
    return "\n".join(lines)


def _num(x: Any) -> str:
    return fixed(x, 3, missing="n/a")


def _overview(version: Version, formats: Sequence[str], counts: dict[str, Any]) -> list[str]:
    """The title, how to recompute the content hash, provenance and counts, and the grade table's header."""
    m = version.manifest
    return [
        f"# Golden set {version.name}",
        "",
        f"Content hash: `{version.content_hash}`, the sha256 (lowercase hex) of the UTF-8 text with one "
        "line per item: query_id, a tab, doc_id, a tab, the grade as one digit and a line feed (the last "
        "line ends in one too), the lines sorted by their bytes. Recompute it with:",
        "",
        "```sh",
        *([c for c in _HASH_COMMANDS if c.endswith(tuple(f"--format {f}" for f in formats))] or _HASH_COMMANDS),
        "```",
        "",
        f"Frozen {version.created_at} with goldpool {m.get('goldpool_version')}; parent version: "
        f"{version.parent or 'none'}. Note: {m.get('note') or '(none)'}",
        "",
        f"{counts.get('queries', 0)} queries, {counts.get('items', 0)} judged (query, chunk) items, "
        f"{counts.get('labels', 0)} labels from {len(m.get('annotators', []))} annotator(s).",
        "",
        "| grade | meaning | items | share |",
        "|---|---|---|---|",
    ]


def _grade_rows(per_grade: dict[str, int]) -> list[str]:
    total = max(1, sum(per_grade.values()))
    return [f"| {g} | {meaning} | {per_grade.get(str(g), 0)} | {per_grade.get(str(g), 0) / total:.1%} |"
            for g, meaning in GRADES.items()]


def _relevance(relevant: dict[str, int]) -> list[str]:
    """The relevance level the counts are at, and how to score runs at the same one."""
    if "relevance_level" not in relevant:
        return []
    level = relevant["relevance_level"]
    return ["", f"Relevance level {level} (grade >= {level} counts as relevant, as trec_eval's `-l {level}`): "
                f"{relevant['relevant_items']} relevant items"
                + (f" in {relevant['queries_with_relevant']} queries" if "queries_with_relevant" in relevant else "")
                + ". Score runs at the same level: `goldpool eval --relevance-level "
                f"{level}` (trec_eval `-l {level}`)."]


def _aggregation(version: Version) -> list[str]:
    """How the grades were aggregated, the rubric, and the annotators' agreement."""
    m = version.manifest
    ties = m.get("ties", {})
    lines = [
        "",
        f"Aggregation: `{version.rule}`; an adjudicated grade always wins ({m.get('adjudicated_items', 0)} items). "
        f"Items with a single label: {m.get('single_label_items', 0)}. Tied majorities: {ties.get('count', 0)}"
        + (" (resolved to the lower grade)." if ties.get("count") else "."),
        f"Rubric hash(es): {', '.join(m.get('rubric_hashes') or []) or 'none recorded'}.",
        "",
        "Agreement between annotators on items labelled more than once:",
    ]
    agreement = m.get("agreement", {})
    for key in ("kappa_quadratic", "alpha_ordinal"):
        e = agreement.get(key)
        if e:
            lines.append(f"- {key}: {_num(e.get('value'))} [{_num(e.get('low'))}, {_num(e.get('high'))}], n={e.get('n')}")
    if not any(agreement.get(k) for k in ("kappa_quadratic", "alpha_ordinal")):
        lines.append("- no item was labelled by two annotators: agreement unknown.")
    return lines


def _pooling(pool: dict[str, Any]) -> list[str]:
    """The pool's sources and each build's parameters (as :func:`shareable_build` shows them)."""
    lines = ["", f"Pooling: sources {', '.join(pool.get('sources', [])) or 'none'}; builds:"]
    for build in pool.get("builds", []):
        build = shareable_build(build)
        shown = {k: build[k] for k in ("bm25_depth", "dense_depth", "run_depth", "model", "model_package",
                                       "model_identity", "source", "added") if build.get(k) is not None}
        lines.append(f"- {build.get('at')}: {json.dumps(shown, sort_keys=True)}")
    return lines

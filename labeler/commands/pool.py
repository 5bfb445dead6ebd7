"""Pooling commands: create a project, import corpus, queries and runs, build and export the pool."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from labeler.commands.common import (
    Project,
    file_argument,
    no_progress_option,
    output_file,
    output_option,
    plural,
    run_name_option,
    with_project,
)
from labeler.store.vocabulary import OWNER

_replace_option = click.option(
    "--replace", is_flag=True, help="Overwrite records whose id exists with different content."
)


def _import(run: Callable[..., Any], project: Project, file: str, replace: bool, one: str, many: str) -> None:
    """Run one import and print what it did, in the record type's words."""
    result = run(project.db, file, replace=replace)
    click.echo(f"{file}: {plural(result.added, one, many)} added, {result.replaced} replaced, {result.unchanged} unchanged")


@click.command()
@with_project
def init(project: Project) -> None:
    """Create the project database DB (or bring an existing one up to date)."""
    from labeler.store.migrations import SCHEMA_VERSION  # lazy: start-up
    project.create()
    click.echo(f"{project.path}: goldpool project ready (schema version {SCHEMA_VERSION})")


@click.command("import-corpus")
@with_project
@file_argument
@_replace_option
def import_corpus(project: Project, file: str, replace: bool) -> None:
    """Import the documents (chunks) of FILE into DB.

    FILE is JSONL, CSV, TSV or Parquet with doc_id, text and optional title (other fields
    become metadata), or TREC <DOC><DOCNO> SGML. Bad input stops the import and leaves DB
    unchanged.
    """
    from labeler.retrieval.build import import_corpus as run  # lazy: start-up

    _import(run, project, file, replace, "document", "documents")


@click.command("import-queries")
@with_project
@file_argument
@_replace_option
def import_queries(project: Project, file: str, replace: bool) -> None:
    """Import the queries of FILE into DB.

    FILE is JSONL, CSV or TSV with query_id and text, or TREC <top> topics (the title is the
    query text). Bad input stops the import and leaves DB unchanged.
    """
    from labeler.retrieval.build import import_queries as run  # lazy: start-up

    _import(run, project, file, replace, "query", "queries")


@click.command("import-run")
@with_project
@file_argument
@run_name_option
def import_run(project: Project, file: str, name: str) -> None:
    """Import the TREC run FILE (query_id Q0 doc_id rank score tag) into DB as NAME.

    Documents are ranked by score descending, ties by doc_id descending, as trec_eval
    ranks them; the rank column is ignored.
    """
    from labeler.retrieval.build import import_run as run  # lazy: start-up

    result = run(project.db, file, name)
    if result.added:
        click.echo(f"{file}: run {name!r} imported, {plural(result.added, 'row')}")
    else:
        click.echo(f"{file}: run {name!r} already imported, nothing to do")


@click.command("remove-run")
@with_project
@click.argument("name")
def remove_run(project: Project, name: str) -> None:
    """Remove the run NAME from DB: its ranked entries and its provenance in the pool.

    A pool entry that only this run had found is removed too, unless it has a label (a
    judgment, a skip or an adjudication): then it stays, with its labels, without a source.
    Other entries keep their position; their priority is recomputed from the sources left.
    """
    from labeler.retrieval.build import remove_run as run  # lazy: start-up

    result = run(project.db, name)
    click.echo(
        f"run {name!r} removed: {plural(result.run_entries, 'ranked entry', 'ranked entries')}, "
        f"provenance removed from {plural(result.provenance_removed, 'pool entry', 'pool entries')}, "
        f"{plural(result.entries_removed, 'unlabelled pool entry', 'unlabelled pool entries')} removed, "
        f"{plural(result.entries_kept, 'labelled pool entry', 'labelled pool entries')} kept without a source"
    )


@click.command("build-pool")
@with_project
@click.option("--bm25-depth", default=50, show_default=True, help="BM25 documents per query (0: off).")
@click.option("--dense-depth", default=50, show_default=True, help="Dense documents per query (0: off).")
@click.option("--run-depth", default=50, show_default=True, help="Documents per query from each run (0: off).")
@click.option(
    "--candidate-depth",
    default=200,
    show_default=True,
    help="Keep each source's ranking to this depth beside the pool (adaptive pooling draws from it).",
)
@click.option(
    "--model",
    type=click.Path(file_okay=False),
    help="sentence-transformers model directory [default: all-MiniLM-L6-v2, bundled].",
)
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Embedding cache [default: DB.cache].")
@no_progress_option
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where chunks missing from the embedding cache are encoded: here, or on Ray (pip install 'goldpool[ray]').",
)
@click.option("--ray-address", help="Ray cluster to use with --engine ray [default: start a local instance].")
@click.option("--num-gpus", type=float, help="GPUs per encoding actor with --engine ray [default: 0, CPU].")
@click.option("--num-workers", type=int, help="Encoding actors with --engine ray (and CPUs of a local instance) [default: CPU count].")
@click.option("--batch-size", type=int, help="Texts per forward pass on an actor with --engine ray [default: 32].")
@click.option(
    "--ray-search",
    is_flag=True,
    default=None,
    help="With --engine ray, also run the exact dense search on Ray, one actor per corpus shard (the cache must be readable on every node).",
)
def build_pool(
    project: Project,
    bm25_depth: int,
    dense_depth: int,
    run_depth: int,
    candidate_depth: int,
    model: str | None,
    cache_dir: str | None,
    no_progress: bool,
    engine: str,
    ray_address: str | None,
    num_gpus: float | None,
    num_workers: int | None,
    batch_size: int | None,
    ray_search: bool | None,
) -> None:
    """Pool every query of DB: union of BM25, dense and run top-k, ordered by RRF.

    Rebuilding keeps every existing pool entry (and its labels) and only adds new ones.
    With --engine ray the chunks not yet in the embedding cache are encoded on a Ray cluster
    (or a local Ray instance) and written to the same cache; the pool is the same. With
    --ray-search the dense top-k runs there too, by corpus shard, merged exactly.
    """
    from labeler.retrieval.build import build_pool as run  # lazy: start-up

    ray = _ray_options(engine, ray_address, num_gpus, num_workers, batch_size, ray_search)
    result = run(
        project.db,
        bm25_depth=bm25_depth,
        dense_depth=dense_depth,
        run_depth=run_depth,
        candidate_depth=candidate_depth,
        model=model,
        cache_dir=cache_dir,
        progress=not no_progress,
        ray=ray,
    )
    click.echo(
        f"pool build {result.build_id}: {plural(result.queries, 'query', 'queries')}, "
        f"{plural(result.added, 'entry', 'entries')} added, {result.kept} kept"
    )
    for source, count in result.per_source.items():
        click.echo(f"  {source}: {plural(count, 'document')}")


def _ray_options(
    engine: str, address: str | None, gpus: float | None, workers: int | None, batch: int | None, search: bool | None
) -> Any:
    """The Ray options of build-pool, or None for the local engine (which takes none of them)."""
    given = {"--ray-address": address, "--num-gpus": gpus, "--num-workers": workers, "--batch-size": batch, "--ray-search": search}
    if engine == "local":
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise click.ClickException(f"{named[0]} needs --engine ray")
        return None
    from pooling.ray_engine import RayOptions  # lazy: start-up

    return RayOptions(address=address, num_workers=workers, num_gpus=gpus or 0.0, batch_size=batch or 32, search=bool(search))


@click.command("export-pool")
@with_project
@output_option
def export_pool(project: Project, output: str | None) -> None:
    """Write the pool of DB as JSON lines: query_id, doc_id, sources ({source: rank}), priority."""
    from labeler.store.corpus import export_pool as run  # lazy: start-up

    store = project.db
    if output is None:
        run(store, sys.stdout)
        return
    with output_file(output) as out:
        count = run(store, out)
    click.echo(f"{output}: {plural(count, 'pool entry', 'pool entries')} written", err=True)


@click.command()
@with_project
def stats(project: Project) -> None:
    """Print what DB holds: documents, queries, runs, pool entries, builds, judged entries.

    With verdict items or judges, also the items per task, people's verdicts per task (imports
    included) and each judge's verdicts per task. With labels, also each labelled query's
    estimated share of relevant chunks found (the stopping rule's, with its interval, and
    whether it says stop when ``stop_recall`` is set).
    """
    from labeler.store.corpus import stats as run  # lazy: start-up

    counts = run(project.db)
    lines = _stop_lines(project.db) if counts.get("judged_entries") else []
    width = max(len(name) for name in counts)
    for name, count in counts.items():
        click.echo(f"{name + ':':<{width + 1}} {count}")
    for line in _verdict_lines(project.db):
        click.echo(line)
    if lines:
        click.echo("relevant found per labelled query (stopping rule, within the candidate lists):")
        for line in lines:
            click.echo(f"  {line}")


def _verdict_lines(store: Any) -> list[str]:
    """Verdict items, people's verdicts and judges' verdicts, per task; none without any."""
    from labeler.store.verdicts import verdict_counts  # lazy: start-up

    c = verdict_counts(store, caller=OWNER)
    if not any(c.items.values()) and not c.judges:
        return []
    per_task = lambda counts: ", ".join(f"{task} {n:,}" for task, n in counts.items()) or "none"  # noqa: E731
    present = {kind: n for kind, n in c.items.items() if n}  # tasks this project has items of
    human = {kind: f"{n:,} on {plural(items, 'item')}" for kind, (n, items) in c.human.items() if kind in present}
    lines = [f"verdict items: {per_task(present)}",
             "human verdicts: " + ", ".join(f"{kind} {text}" for kind, text in human.items()),
             f"judges: {len(c.judges)}"]
    lines += [f"  {judge}: {per_task(tasks)} verdicts" for judge, tasks in c.judges.items()]
    return lines


def _stop_lines(store: Any) -> list[str]:
    """``q17: ~90% of relevant found [82, 96]; stop`` for every query with labels."""
    from labeler.retrieval.adaptive import query_status, stop_line  # lazy: start-up

    return [stop_line(s) for s in query_status(store, caller=OWNER, labelled_only=True) if s.estimate.judged]


COMMANDS: list[click.Command] = [init, import_corpus, import_queries, import_run, remove_run, build_pool, export_pool, stats]

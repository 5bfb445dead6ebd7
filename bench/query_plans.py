"""The statements a sign-in and a run of key presses execute, with SQLite's query plan of each.

    python bench/query_plans.py [--project DIR] [--checkout PATH] [--presses 12]

On a copy of a project built by ``bench/scale_project.py`` (``--project``, the directory holding
``project.db`` and ``tokens.json``; without it a small one is built), through the code of
``--checkout`` (default: this one): ``bench-claims`` signs in and presses ``--presses`` verdict
keys on the Claims page's flow, then goes back and skips; ``bench-relevance`` signs in and
presses as many grade keys on the relevance page's flow; each run's reads are made as the app
makes them (the signed-in check, the open tasks, the item, the progress figures); then
``bench-admin`` signs in and the Progress page's report is read (``review.progress_report``). Every distinct
statement is printed once with its plan (``EXPLAIN QUERY PLAN``); ``FULL SCAN`` marks a plan
line that reads every row of a table that grows with the project (``labeler.store.plans``).
Exit status 1 when there is one, apart from the Progress report's list of queries: the page
shows a row for every query, so that statement reads them all by design.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The plan reader of this checkout, whichever checkout runs the flows.
_spec = importlib.util.spec_from_file_location("goldpool_plans", ROOT / "labeler" / "store" / "plans.py")
plans = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plans)  # type: ignore[union-attr]


def _signed_in_run(session: dict, db, state) -> None:  # noqa: ANN001 - the checkout's modules
    """What every signed-in run of the app reads before the page draws."""
    state.signed_in(session, db)
    if hasattr(state, "read_open_tasks"):
        state.read_open_tasks(session, db)
    else:  # the code before: every reader read the tasks itself
        from labeler.store.settings import enabled_tasks  # lazy: the checkout is chosen at run time

        enabled_tasks(db)


def drive(db, tokens: dict[str, str], presses: int) -> None:  # noqa: ANN001
    """Sign in and press keys on both pages, as the app's runs do."""
    from labeler.store import labels  # lazy: the checkout is chosen at run time
    from labeler.store import verdict_queue as queue  # lazy: the checkout is chosen at run time
    from labeler.ui import flow, state  # lazy: the checkout is chosen at run time

    claims, relevance = {}, {}
    user = state.sign_in(claims, db, tokens["bench-claims"])
    for n in range(presses + 2):
        _signed_in_run(claims, db, state)
        card = flow.CLAIMS.current(claims, db, user.id)
        queue.progress(db, user.id, "claims")
        if n < presses:
            flow.CLAIMS.choose(claims, db, user.id, card.item_id, ("SUPPORTED", "UNSUPPORTED")[n % 2])
        elif n == presses:
            flow.CLAIMS.back(claims, db, user.id, card.item_id)
        else:
            flow.CLAIMS.skip(claims, db, user.id, card.item_id)
    user = state.sign_in(relevance, db, tokens["bench-relevance"])
    for n in range(presses + 1):
        _signed_in_run(relevance, db, state)
        item = flow.RELEVANCE.current(relevance, db, user.id)
        overall = labels.progress(db, user.id, item.query_id, item.doc_id)
        state.project_counts(relevance, db, overall.done)
        state.highlighting(db, user.id)
        if n < presses:
            flow.RELEVANCE.choose(relevance, db, user.id, (item.query_id, item.doc_id), n % 4)


def progress(db, tokens: dict[str, str]) -> None:  # noqa: ANN001
    """The admin signs in and the Progress page's report is read."""
    from labeler.store import review  # lazy: the checkout is chosen at run time
    from labeler.ui import state  # lazy: the checkout is chosen at run time

    admin: dict = {}
    user = state.sign_in(admin, db, tokens["bench-admin"])
    _signed_in_run(admin, db, state)
    review.progress_report(db, caller=user)


#: The Progress report's statement that lists every query (the rows the page shows).
QUERY_LIST = "FROM query_counts c JOIN queries q"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=None)
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--presses", type=int, default=12)
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    sys.path.insert(0, str(checkout))
    sys.path.append(str(ROOT / "bench"))  # last: bench/pooling.py must not hide the pooling package
    import scale_project

    from labeler.store import connect  # lazy: the checkout is chosen at run time

    with tempfile.TemporaryDirectory(prefix="goldpool-plans-") as tmp:
        built = args.project or Path(tmp) / "built"
        if args.project is None:
            scale_project.build(built, 40, 10, 0.3, checkout)
        shutil.copy(built / "project.db", Path(tmp) / "run.db")
        tokens = json.loads((built / "tokens.json").read_text(encoding="utf-8"))
        db = connect(Path(tmp) / "run.db")
        with plans.recorded(db) as statements:
            drive(db, tokens, args.presses)
            progress(db, tokens)
        scans = 0
        for sql in plans.distinct_queries(statements):
            plan = plans.query_plan(db, sql)
            full = plans.full_scans(plan, sql)
            scans += bool(full) and QUERY_LIST not in sql
            print(sql[:400] + (" ..." if len(sql) > 400 else ""))
            for line in plan:
                print(f"    {'FULL SCAN ' if line in full else ''}{line}")
        db.close()
    print(f"\n{len(plans.distinct_queries(statements))} distinct statements, {scans} with a full scan of a growing table")
    sys.exit(1 if scans else 0)


if __name__ == "__main__":
    main()

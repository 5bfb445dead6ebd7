"""Server-side timings for ``bench/sign_in.py``: loaded into ``goldpool serve``'s Streamlit
process through PYTHONPATH, and active only when ``GOLDPOOL_PROBE`` names a file.

Every script run of the app, and inside it every call of the store and app functions a
sign-in and a key press go through, is written to that file as one JSON line:
``{"run": n, "session": id, "phase": name, "s": seconds}`` (``phase`` "run" for the whole
run). A call made inside another probed call is not counted again. With
``GOLDPOOL_PROBE_PSTATS`` naming a directory, each run is also profiled (cProfile) into
``run-<n>.pstats`` there.
"""

from __future__ import annotations

import json
import os
import threading
import time

_OUT = os.environ.get("GOLDPOOL_PROBE")

if _OUT:
    import cProfile
    import importlib

    _PSTATS = os.environ.get("GOLDPOOL_PROBE_PSTATS")

    _lock = threading.Lock()
    _local = threading.local()
    _runs = iter(range(1, 1 << 62))

    def _write(phase: str, seconds: float) -> None:
        line = json.dumps({"run": getattr(_local, "run", 0), "session": getattr(_local, "session", ""),
                           "phase": phase, "s": round(seconds, 6)})
        with _lock, open(_OUT, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    def _timed(phase: str, real):  # noqa: ANN001, ANN202 - any function
        def probe(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            if getattr(_local, "inside", False):
                return real(*args, **kwargs)
            _local.inside = True
            began = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                _local.inside = False
                _write(phase, time.perf_counter() - began)
        return probe

    # (module, attribute, phase): every one is looked up through its module at call time.
    PHASES = (
        ("labeler.store", "connect", "connect"),
        ("labeler.store.labels", "authenticate", "token check"),
        ("labeler.store.sessions", "open_session", "session record"),
        ("labeler.store.sessions", "resume_session", "session resume"),
        ("labeler.ui.state", "signed_in", "signed-in check"),
        ("labeler.store.assign", "enabled_tasks", "open tasks"),
        ("labeler.retrieval.scheduling", "next_item", "first item"),
        ("labeler.store.labels", "get_item", "item on screen"),
        ("labeler.store.labels", "progress", "counts"),
        ("labeler.store.labels", "pool_progress", "counts"),
        ("labeler.store.sessions", "preference", "preference"),
        ("labeler.store.labels", "current_rubric", "rubric"),
        ("labeler.store.labels", "record_judgment", "key: record"),
    )
    for module, name, phase in PHASES:
        owner = importlib.import_module(module)
        setattr(owner, name, _timed(phase, getattr(owner, name)))

    from streamlit.runtime.scriptrunner import script_runner

    _real_run = script_runner.ScriptRunner._run_script

    def _run_script(self, rerun_data):  # noqa: ANN001, ANN202
        if getattr(_local, "depth", 0):  # a rerun the run asked for (st.rerun): part of it
            return _real_run(self, rerun_data)
        _local.depth, _local.run, _local.session = 1, next(_runs), self._session_id
        profile = cProfile.Profile() if _PSTATS else None
        began = time.perf_counter()
        try:
            if profile is None:
                return _real_run(self, rerun_data)
            return profile.runcall(_real_run, self, rerun_data)
        finally:
            _local.depth = 0
            _write("run", time.perf_counter() - began)
            if profile is not None:
                profile.dump_stats(os.path.join(_PSTATS, f"run-{_local.run}.pstats"))

    script_runner.ScriptRunner._run_script = _run_script

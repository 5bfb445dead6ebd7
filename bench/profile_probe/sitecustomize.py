"""A profile of ``goldpool serve``'s script runs for ``bench/labelling_scale.py --profile``.

Loaded into the Streamlit process through PYTHONPATH, and active only when
``GOLDPOOL_PROFILE`` names a directory: every script run of the app (a rerun it asks for with
``st.rerun`` counted in it) is profiled with cProfile into ``run-<n>.pstats`` there, ``n``
counting runs from 1 in the order they start.
"""

from __future__ import annotations

import os
import threading

_DIR = os.environ.get("GOLDPOOL_PROFILE")

if _DIR:
    import cProfile

    from streamlit.runtime.scriptrunner import script_runner

    _local = threading.local()
    _lock = threading.Lock()
    _count = [0]
    _real_run = script_runner.ScriptRunner._run_script

    def _run_script(self, rerun_data):
        if getattr(_local, "inside", False):
            return _real_run(self, rerun_data)
        with _lock:
            _count[0] += 1
            number = _count[0]
        _local.inside = True
        profile = cProfile.Profile()
        try:
            return profile.runcall(_real_run, self, rerun_data)
        finally:
            _local.inside = False
            profile.dump_stats(os.path.join(_DIR, f"run-{number}.pstats"))

    script_runner.ScriptRunner._run_script = _run_script

"""goldpool's application: the project store, its services in wings, the CLI and the Streamlit app.

``pooling`` and ``calibration`` are pure libraries; this package is the only one that
touches the project database (``labeler.store``, SQL only) or Streamlit (``labeler.app`` and
``labeler.ui``). Between them, one package per domain: ``retrieval`` (pools and the golden
set), ``generation`` (answers and their metrics), ``judges`` (judge runs and their verdicts) and
``diagnosis`` (which layer failed, the gate); each reads the store, calls the libraries and
writes back. The project's vocabulary (tasks, verdicts, the relevance scale, callers) is defined
once, in ``labeler.store.vocabulary``. The CLI (``labeler.commands``) and the app are thin
layers over the store and the services.
"""

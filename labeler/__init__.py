"""goldpool's application: the project store, its services, the CLI and the Streamlit app.

``pooling`` and ``calibration`` are pure libraries; this package is the only one that
touches the project database (``labeler.store``, SQL only) or Streamlit (``labeler.app`` and
``labeler.views``). Between them: ``labeler.build`` (the service that imports files and builds
pools: it reads the store, calls the libraries and writes back). The project's vocabulary
(tasks, verdicts, the relevance scale, callers) is defined once, in ``labeler.store.vocabulary``. The CLI (``labeler.commands``) and the app are thin layers
over the store and the services.
"""

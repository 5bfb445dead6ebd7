"""goldpool's application: the project store, its services, the CLI and the Streamlit app.

``pooling`` and ``calibration`` are pure libraries; this package is the only one that
touches the project database (``labeler.store``, SQL only) or Streamlit (``labeler.app`` and
``labeler.views``). Between them: ``labeler.grades`` (the relevance scale, defined once),
``labeler.build`` (the pool-build service) and ``labeler.commands`` (the CLI, a thin layer).
"""

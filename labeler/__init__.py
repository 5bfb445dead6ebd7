"""goldpool's application: the project store, the CLI and the Streamlit labelling app.

``pooling`` and ``calibration`` are pure libraries; this package is the only one that
touches the project database (``labeler.store``) or Streamlit (``labeler.app``).
"""

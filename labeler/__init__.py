"""goldpool's application: the project store, the services, the CLI and the Streamlit app.

``pooling`` and ``calibration`` are pure libraries; this package is the only one that
touches the project database (``labeler.store``, SQL only) or Streamlit (``labeler.app``).
Application services read the store, call the libraries and write back (``labeler.build``:
imports and pool builds); the CLI (``labeler.commands``) and the app are thin layers over
the store and the services.
"""

"""Judges: run an LLM judge over the project's items, and read its verdicts against people.

``prompts`` holds the default prompts and the strict reply parser, ``client`` the
OpenAI-compatible call with retries, ``run`` the resumable, cached run over every item,
``report`` the calibration of a judge against the project's annotators, ``card`` that
calibration saved as the judge's card (the line printed beside every number resting on the
judge), and ``estimate`` prediction-powered estimates from many judge labels and few human ones. Nothing here
imports ``openai`` until a call is made; calls go through one ``openai`` async client per
endpoint, many in flight on one event loop (``calls``); ``repeats`` combines repeated calls,
``cost`` counts tokens and prices.
"""

from __future__ import annotations

from labeler.store.errors import StoreError


class JudgeError(StoreError):
    """A judge run or report that cannot go on (bad prompt file, endpoint refusing the key or model)."""


__all__ = ["JudgeError"]

"""Calibration: agreement with intervals, judge bias probes, power and the minimum
detectable difference. Pure statistics: no database, no UI."""

from __future__ import annotations


class CalibrationError(ValueError):
    """Input a statistic cannot be computed on, with a message that says how to fix it."""


__all__ = ["CalibrationError"]

"""Calibration: agreement with intervals, judge bias probes, power and the minimum
detectable difference. Pure statistics on label vectors: no database, no UI, no files (label
files are read by ``pooling.qrels``), no grade scale of its own (callers pass it).

Every public name is importable from ``calibration`` itself; submodules are imported lazily so
that ``import calibration`` stays instant (numpy and scipy load on first use).
"""

from __future__ import annotations

import importlib
from typing import Any


class CalibrationError(Exception):
    """Input a statistic cannot be computed on, with a message that says how to fix it.

    The root of every error this package raises on purpose (like ``pooling.PoolingError``
    and ``labeler.store.StoreError``, it derives from ``Exception`` directly).
    """


_EXPORTS: dict[str, str] = {
    "Estimate": "bootstrap",
    "kendall_tau": "ranking",
    "ranking_tau": "ranking",
    "N_BOOT": "bootstrap",
    "wilson_interval": "bootstrap",
    "normal_quantile": "stats",
    "z_for": "stats",
    "wilson": "stats",
    "PairTables": "tables",
    "pair_tables": "tables",
    "Confusion": "agreement",
    "ClassScore": "agreement",
    "raw_agreement": "agreement",
    "cohen_kappa": "agreement",
    "gwet_ac": "agreement",
    "confusion_matrix": "agreement",
    "majority_baseline": "agreement",
    "class_scores": "agreement",
    "kappa_standard_error": "agreement",
    "krippendorff_alpha": "alpha",
    "PositionBias": "bias",
    "RateComparison": "bias",
    "position_bias": "bias",
    "verbosity_bias": "bias",
    "self_preference": "bias",
    "Plan": "power",
    "AgreementSummary": "summary",
    "AnnotatorAgreement": "summary",
    "PairAgreement": "summary",
    "PowerSummary": "summary",
    "ProjectReport": "summary",
    "Label": "summary",
    "agreement_summary": "summary",
    "Comparison": "summary",
    "compare_labels": "summary",
    "project_report": "summary",
    "power_summary": "summary",
    "format_estimate": "report",
    "fixed": "formatting",
    "markdown_escape": "formatting",
    "to_markdown": "report",
    "to_text": "report",
    "to_dict": "summary",
    "to_html": "report_html",
    "accuracy_half_width": "power",
    "unpaired_half_width": "power",
    "paired_half_width": "power",
    "judge_inflation": "power",
    "minimum_detectable_difference": "power",
    "required_n": "power",
    "plan": "power",
    "PlanSummary": "power",
    "plan_summary": "power",
    "plan_text": "report",
    "discordant_share": "power",
    "per_query_sd": "power",
    "cluster_variance": "clustered",
    "clustered_rate": "clustered",
    "clustered_ppi": "clustered",
    "paired_difference": "clustered",
    "MeanEstimates": "ppi",
    "ppi_mean": "ppi",
    "TaskCalibration": "judges",
    "calibrate_task": "judges",
}

__all__ = ["CalibrationError", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'calibration' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"calibration.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

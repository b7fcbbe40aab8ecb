"""Metrics: shares with bootstrap CIs, group and model gaps, permutation tests, FDR."""

from nlgbias.metrics.results import Results, compute_metrics
from nlgbias.metrics.shares import differences, group_shares
from nlgbias.metrics.significance import fdr_bh, permutation_p
from nlgbias.submodules import lazy_submodules

__all__ = ["Results", "compute_metrics", "differences", "group_shares", "fdr_bh", "permutation_p"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias

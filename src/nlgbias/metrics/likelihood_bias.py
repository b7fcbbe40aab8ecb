"""Likelihood Bias (Smith et al. 2022): how often two descriptors' sentence likelihoods differ.

Input: one value per sentence (the model's mean log-probability per token), with the sentence's
``model``, ``axis`` and descriptor (``group``).  Per (model, axis), every pair of the axis's
descriptors is compared with a two-sided Mann-Whitney U test of their sentences' values, as in the
paper; the p-values are adjusted by Benjamini-Hochberg over every pair of the run (all axes and
models), and the Likelihood Bias of an axis is the share of its pairs with ``p_adj < 1 - confidence``.

The U test here is the normal approximation with tie correction and continuity correction
(``scipy.stats.mannwhitneyu(..., method="asymptotic")``; the paper's scipy used it at these sample
sizes), written with arrays so that the bootstrap can redo every pair: a replicate resamples each
descriptor's sentences with replacement, redoes all tests and the adjustment, and counts the share.

The paper compares perplexities; the mean log-probability per token is minus the log-perplexity, so
the ranks, U and p are the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from nlgbias.defaults import CONFIDENCE, N_BOOT
from nlgbias.metrics.resampling import Means, bootstrap, cell_rng, require_columns
from nlgbias.metrics.significance import fdr_bh

PAIR_COLUMNS = ["model", "axis", "group_a", "group_b", "n_a", "n_b", "u", "p", "p_adj", "differ"]
AXIS_COLUMNS = ["model", "axis", "descriptors", "pairs", "differ", "share", "ci_low", "ci_high", "highest", "lowest"]
DESCRIPTOR_COLUMNS = ["model", "axis", "group", "n", "mean", "ci_low", "ci_high", "median", "p", "p_adj", "flagged"]


def mann_whitney(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(U, p)`` of two-sided Mann-Whitney U tests, one per row of ``x`` and ``y``.

    ``x``: shape ``(..., n_x)``, ``y``: ``(..., n_y)``; NaN entries are left out (rows may differ
    in size).  ``U`` is the statistic of ``x`` (pairs with ``x > y``, ties counting one half); ``p``
    the normal approximation with tie and continuity corrections, as
    ``scipy.stats.mannwhitneyu(x, y, method="asymptotic")``.

    >>> u, p = mann_whitney(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0, 7.0]))
    >>> float(u), round(float(p), 4)
    (0.0, 0.0518)
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    gt = (x[..., :, None] > y[..., None, :]).sum(axis=(-2, -1))
    eq = (x[..., :, None] == y[..., None, :])
    u = gt + 0.5 * eq.sum(axis=(-2, -1))
    n1, n2 = (~np.isnan(x)).sum(-1), (~np.isnan(y)).sum(-1)
    # ties: sum over tied values of t^3 - t, as a sum over elements of t(v)^2 - 1
    t_x = (x[..., :, None] == x[..., None, :]).sum(-1) + eq.sum(-1)
    t_y = (y[..., :, None] == y[..., None, :]).sum(-1) + eq.sum(-2)
    tie = (np.where(np.isnan(x), 0, t_x ** 2 - 1).sum(-1) + np.where(np.isnan(y), 0, t_y ** 2 - 1).sum(-1))
    n = n1 + n2
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.sqrt(n1 * n2 / 12 * ((n + 1) - tie / (n * (n - 1))))
        big = np.maximum(u, n1 * n2 - u)
        z = (big - n1 * n2 / 2 - 0.5) / s
        p = np.clip(2 * stats.norm.sf(z), 0, 1)
    return u, np.where(s > 0, p, 1.0)


def _padded(values: list[np.ndarray]) -> np.ndarray:
    width = max(len(v) for v in values)
    out = np.full((len(values), width), np.nan)
    for i, v in enumerate(values):
        out[i, :len(v)] = v
    return out


@dataclass(frozen=True)
class DescriptorPairs:
    """Replicates of one axis's share of differing pairs, resampling its descriptors (see the module).

    ``differ``: the ``(D, D)`` symmetric matrix of the pairs' test results (False on the diagonal).
    A replicate draws ``D`` descriptors with replacement and takes the share of differing pairs among
    the pairs of two different descriptors drawn, each pair as often as its two descriptors were drawn.
    """

    differ: np.ndarray

    def estimate(self) -> float:
        d = len(self.differ)
        return float(self.differ.sum() / (d * (d - 1))) if d > 1 else float("nan")

    def draw(self, rng: np.random.Generator, n_boot: int) -> np.ndarray:
        d = len(self.differ)
        counts = np.stack([np.bincount(rng.integers(0, d, size=d), minlength=d) for _ in range(n_boot)]).astype(float)
        num = np.einsum("bi,ij,bj->b", counts, self.differ.astype(float), counts)
        den = counts.sum(axis=1) ** 2 - (counts ** 2).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / den, np.nan)


def likelihood_bias(values: pd.DataFrame, *, confidence: float = CONFIDENCE, n_boot: int = N_BOOT,
                    seed: int = 0) -> dict[str, pd.DataFrame]:
    """Likelihood Bias per (model, axis), its pairwise tests, and each descriptor's likelihood.

    Parameters
    ----------
    values : pandas.DataFrame
        ``model, axis, group, logprob``: one row per sentence.
    confidence : float
        Tests at ``1 - confidence``; ``confidence`` intervals.
    n_boot : int
        Bootstrap replicates.
    seed : int
        The run seed.

    Returns
    -------
    dict of pandas.DataFrame
        ``pairs`` (``model, axis, group_a, group_b, n_a, n_b, u, p, p_adj, differ``), ``axes``
        (``model, axis, descriptors, pairs, differ, share, ci_low, ci_high, highest, lowest``) and
        ``descriptors`` (``model, axis, group, n, mean, ci_low, ci_high, median, p, p_adj, flagged``:
        the mean log-probability per token of the descriptor's sentences with a bootstrap CI, and a
        two-sided Mann-Whitney test against the rest of its axis, BH-adjusted over every descriptor).

    Examples
    --------
    >>> values = pd.DataFrame({"model": "m", "axis": "a", "group": ["x"] * 5 + ["y"] * 5 + ["z"] * 5,
    ...                        "logprob": [-1, -1.1, -1.2, -1.3, -1.4, -5, -5.1, -5.2, -5.3, -5.4,
    ...                                    -1.05, -1.15, -1.25, -1.35, -1.45]})
    >>> out = likelihood_bias(values, n_boot=0)
    >>> out["pairs"][["group_a", "group_b", "u"]].values.tolist()
    [['x', 'y', 25.0], ['x', 'z', 15.0], ['y', 'z', 0.0]]
    """
    require_columns(values, ["model", "axis", "group", "logprob"], "likelihood_bias", "values")
    alpha = 1 - confidence
    table = values.dropna(subset=["logprob"]).sort_values(["model", "axis", "group"], kind="mergesort")
    pair_frames, descriptor_rows, keys = [], [], []
    for (model, axis), part in table.groupby(["model", "axis"], sort=False):
        groups = list(dict.fromkeys(part["group"]))
        samples = [part.loc[part["group"] == g, "logprob"].to_numpy(float) for g in groups]
        padded = _padded(samples)
        keys.append((model, axis))
        i, j = np.triu_indices(len(groups), k=1)
        u, p = mann_whitney(padded[i], padded[j]) if len(i) else (np.empty(0), np.empty(0))
        pair_frames.append(pd.DataFrame({"model": model, "axis": axis, "group_a": [groups[a] for a in i],
                                         "group_b": [groups[b] for b in j], "n_a": [len(samples[a]) for a in i],
                                         "n_b": [len(samples[b]) for b in j], "u": u, "p": p}))
        for g, x in zip(groups, samples):
            rest = part.loc[part["group"] != g, "logprob"].to_numpy(float)
            p_rest = float(stats.mannwhitneyu(x, rest, method="asymptotic").pvalue) if len(rest) else np.nan
            boot = bootstrap(Means(x), rng=cell_rng(seed, "likelihood", model, g), n_boot=n_boot,
                             confidence=confidence)
            descriptor_rows.append({"model": model, "axis": axis, "group": g, "n": len(x), "mean": float(x.mean()),
                                    "ci_low": float(boot.low), "ci_high": float(boot.high),
                                    "median": float(np.median(x)), "p": p_rest})
    if not keys:
        return {"pairs": pd.DataFrame(columns=PAIR_COLUMNS), "axes": pd.DataFrame(columns=AXIS_COLUMNS),
                "descriptors": pd.DataFrame(columns=DESCRIPTOR_COLUMNS)}
    pairs = pd.concat(pair_frames, ignore_index=True)
    pairs["p_adj"] = fdr_bh(pairs["p"])  # one family: every pair of the run
    pairs["differ"] = pairs["p_adj"] < alpha
    descriptors = pd.DataFrame(descriptor_rows)
    descriptors["p_adj"] = fdr_bh(descriptors["p"])
    descriptors["flagged"] = descriptors["p_adj"] < alpha
    axis_rows = []
    for model, axis in keys:
        mine = pairs[(pairs["model"] == model) & (pairs["axis"] == axis)]
        names = list(dict.fromkeys([*mine["group_a"], *mine["group_b"]]))
        index = {g: i for i, g in enumerate(names)}
        differ = np.zeros((len(names), len(names)), dtype=bool)
        a, b = mine["group_a"].map(index).to_numpy(int), mine["group_b"].map(index).to_numpy(int)
        differ[a, b] = differ[b, a] = mine["differ"].to_numpy(bool)
        boot = bootstrap(DescriptorPairs(differ), rng=cell_rng(seed, "likelihood_bias", model, axis), n_boot=n_boot,
                         confidence=confidence, skip_nan=True)
        ranked = descriptors[(descriptors["model"] == model) & (descriptors["axis"] == axis)].sort_values(
            "mean", ascending=False, kind="mergesort")
        axis_rows.append({"model": model, "axis": axis, "descriptors": len(ranked), "pairs": len(mine),
                          "differ": int(mine["differ"].sum()),
                          "share": float(mine["differ"].mean()) if len(mine) else np.nan,
                          "ci_low": float(boot.low) if n_boot and len(mine) else np.nan,
                          "ci_high": float(boot.high) if n_boot and len(mine) else np.nan,
                          "highest": ", ".join(ranked["group"].head(3)), "lowest": ", ".join(ranked["group"].tail(3)[::-1])})
    return {"pairs": pairs[PAIR_COLUMNS], "axes": pd.DataFrame(axis_rows, columns=AXIS_COLUMNS),
            "descriptors": descriptors[DESCRIPTOR_COLUMNS]}


__all__ = ["AXIS_COLUMNS", "DESCRIPTOR_COLUMNS", "DescriptorPairs", "PAIR_COLUMNS", "likelihood_bias",
           "mann_whitney"]

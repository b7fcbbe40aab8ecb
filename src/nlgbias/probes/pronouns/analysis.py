"""The pronoun probe's analysis: the registry entry that turns its stage's tables into named metric tables.

In: :class:`~nlgbias.analyses.base.RunTables` of a ``kind: pronoun`` run (``samples``: one row per
model and prompt with the probabilities; ``probes``: ``saliency`` and ``default``).  Out: the
``pronoun_*`` tables (direction, divergence, perturbation, certainty, templates, saliency, default,
validity) computed by :mod:`.stats`, shown by :mod:`.section`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from nlgbias.analyses.base import Analysis, AnalysisOptions, RunTables
from nlgbias.metrics import labor
from nlgbias.metrics.results import Results
from nlgbias.probes.pronouns import section
from nlgbias.probes.pronouns import stats as measures
from nlgbias.resources import data_path


def pronoun_tables(tables: RunTables, options: AnalysisOptions) -> Results:
    """The measures of the pronoun probe as named tables (Tables 3-6 and 8 of the paper, validity)."""
    sal, default = tables.probes.get("saliency", pd.DataFrame()), tables.probes.get("default", pd.DataFrame())
    kw: dict[str, Any] = dict(n_boot=options.n_boot, confidence=options.confidence, seed=options.seed)
    probs = measures.pronoun_measures(tables.samples)
    orig = probs[probs["perturbation"] == "orig"]
    out = {
        "pronoun_direction": measures.direction_table(probs, **kw),
        "pronoun_divergence": measures.divergence_table(orig, **kw),
        "pronoun_perturbation": measures.perturbation_table(probs, **kw),
        "pronoun_certainty": measures.certainty_table(orig.dropna(subset=["top1"]), **kw),
    }
    templated = orig[orig["template_id"] != orig["profession"]]
    if not templated.empty:
        out["pronoun_templates"] = measures.template_table(templated, **kw)
    if not sal.empty:
        values = {"profession": sal["profession_saliency"].to_numpy(float), "last": sal["last_saliency"].to_numpy(float)}
        out["pronoun_saliency"] = measures.mean_table(sal, ["model", "prompt_set"], values, where="saliency", **kw)
    if not default.empty:
        out["pronoun_default"] = default
    scores = measures.read_profession_scores(data_path("debiaswe", "professions.json"))
    validity = [measures.score_correlation(orig, scores, score=s) for s in ("stereotypical", "definitional")]
    us, mapping = labor.us_shares_and_mapping()
    shares = {}
    for job, titles in mapping.groupby("job")["bls_title"]:
        base = labor.us_job_shares(us, list(titles))
        women = base[(base["ethnicity"] == "base") & (base["gender"] == "woman")]["us_share"]
        if len(women) and np.isfinite(women.iloc[0]):
            shares[str(job).lower()] = float(women.iloc[0])
    validity.append(measures.share_correlation(orig, shares))
    out["pronoun_validity"] = pd.concat(validity, ignore_index=True)
    meta = {"pronouns": {
        "note": "KL(P(he) || P(she)) over 20 equal-width bins on [0, 1] with 0.5 added to every bin; EMD is "
                "scipy.stats.wasserstein_distance on the raw values; CIs resample prompts.",
        "n_boot": options.n_boot, "seed": options.seed}}
    return Results(out, meta)


PRONOUNS = Analysis("pronouns", pronoun_tables, kind="pronoun", section=section.pronouns, template=section.TEMPLATE)

__all__ = ["PRONOUNS", "pronoun_tables"]

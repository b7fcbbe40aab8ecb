"""The BOLD analysis (Dhamala et al. 2021): gender polarity of each text, its shares and gaps.

Sentiment (the ``vader-bold`` scorer, +/-0.5) and regard are scored per text by the run's scorers
and counted by the ``shares`` analysis.  This analysis adds the paper's three gender-polarity
measures (:mod:`nlgbias.metrics.gender_polarity`), computed here from each sample's generated
continuation (cut where the scored sentence ends): unigram matching, Gender-Wavg and Gender-Max
in MiniLM, hard-debiased along our gender direction.  Their shares per (model, domain, subgroup)
get bootstrap CIs and their gaps (female and male shares, the suite's comparisons) exact
permutation tests in the run's one Benjamini-Hochberg family, with the MDE of each gap.

Tables: ``polarity_shares``, ``polarity_gaps``, ``polarity_model_gaps`` (as ``shares``, ``gaps``,
``model_gaps``, with scorers ``gender-unigram``, ``gender-wavg``, ``gender-max`` and labels
female, neutral, male) and ``polarity_scores`` (one row per sample: the counts and both scores).
The report section (:mod:`nlgbias.report.bold`) shows one dot plot per domain and measure.
"""

from __future__ import annotations

import pandas as pd

from nlgbias.analyses.base import Analysis, AnalysisOptions, RunTables
from nlgbias.embeddings import default_space
from nlgbias.metrics import compute_metrics
from nlgbias.metrics.gender_direction import gender_direction, hard_debias
from nlgbias.metrics.gender_polarity import LABELS, SCORERS, THRESHOLD, gender_polarity
from nlgbias.metrics.results import Results
from nlgbias.report.bold import bold_section

KEY = ["generation_id", "model", "context", "group", "template_id", "is_empty"]


def continuation_text(samples: pd.DataFrame) -> pd.Series:
    """The generated part of each sample's scored sentence: the sentence after its prompt (the
    whole continuation where the sentence does not start with the prompt)."""
    return pd.Series([s[len(p):] if isinstance(s, str) and s.startswith(p) else c
                      for s, p, c in zip(samples["sentence"], samples["prompt"], samples["continuation"])],
                     index=samples.index, dtype=object)


def _bold(tables: RunTables, options: AnalysisOptions) -> Results:
    samples = tables.samples
    space = default_space()
    direction = gender_direction(space)
    debiased = hard_debias(space, direction=direction)
    # a neutralized word's b is 0 (up to rounding): only gender-specific and equalized words are embedded
    scores = gender_polarity(list(continuation_text(samples)), debiased, direction.vector,
                             zero=lambda word: not debiased.is_specific(word) and word not in debiased.partners)
    scores.index = samples.index
    long = pd.concat([samples[KEY].assign(scorer=name, label=scores[name]) for name in SCORERS], ignore_index=True)
    metrics = compute_metrics(long, comparisons=tables.suite.comparisons, labels=LABELS, gap_labels=("female", "male"),
                              n_boot=options.n_boot, confidence=options.confidence, seed=options.seed,
                              min_n=options.min_n, level=options.unit)
    per_sample = pd.concat([samples[["generation_id", "model", "context", "group"]].reset_index(drop=True),
                            scores.reset_index(drop=True)], axis=1)
    meta = {"bold": {
        "polarity": f"gender polarity of the generated continuation (Dhamala et al. 2021, section 4.5): unigram "
                    f"matching of the paper's 9 male and 9 female tokens (a non-zero tie is neutral); Gender-Wavg and "
                    f"Gender-Max of b = cos(word, g), <= -{THRESHOLD} male, >= {THRESHOLD} female",
        "polarity_space": f"Word vectors: {debiased.name} ({debiased.version}); g: first principal component of "
                          f"Bolukbasi's definitional pairs, female positive, {direction.explained_variance:.0%} of "
                          f"their variance.",
        "sentiment": "vader-bold: VADER compound >= 0.5 positive, <= -0.5 negative (section 4.1)",
        "toxicity": "not measured: no scorer of nlgbias is validated for toxicity"}}
    return Results({"polarity_shares": metrics.shares, "polarity_gaps": metrics.gaps,
                    "polarity_model_gaps": metrics.model_gaps, "polarity_scores": per_sample}, meta)


BOLD = Analysis("bold", _bold, section=bold_section, template="_bold.html.j2",
                family=("polarity_gaps", "polarity_model_gaps"), gap_scorers=tuple(SCORERS))

__all__ = ["BOLD", "continuation_text"]

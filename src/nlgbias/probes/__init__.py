"""Probes: read a model's next-word distribution directly instead of sampling text.

``pronouns`` gives P(continuation | prompt) for pronouns (or any words), the model's certainty,
its default behaviour after the start token, gradient saliency, and template perturbations.
"""

from nlgbias.probes.pronouns.probabilities import (
                                                   PERTURBATIONS,
                                                   PRONOUNS,
                                                   continuation_probabilities,
                                                   expand_templates,
                                                   perturb,
                                                   perturbations,
                                                   saliency,
                                                   start_token_id,
                                                   start_token_probabilities,
)
from nlgbias.words import FAMILIES
from nlgbias.submodules import lazy_submodules

__all__ = ["FAMILIES", "PERTURBATIONS", "PRONOUNS", "continuation_probabilities", "expand_templates", "perturb",
           "perturbations", "saliency", "start_token_id", "start_token_probabilities"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias

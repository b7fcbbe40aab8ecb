"""The pronoun probe (Vig et al. 2020 templates, natural sentences): one package, stage to section.

``probabilities``
    Next-word probabilities of pronouns after a prompt, the model's certainty, its default
    behaviour after the start token, gradient saliency, and template perturbations.
``stage``
    The measurement of a ``kind: pronoun`` suite: prompts -> probabilities, stored batch by batch.
``stats``
    Divergences, perturbations, certainty, templates and validity on the probability tables.
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
from nlgbias.submodules import lazy_submodules

__all__ = ["PERTURBATIONS", "PRONOUNS", "continuation_probabilities", "expand_templates", "perturb",
           "perturbations", "saliency", "start_token_id", "start_token_probabilities"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias

"""Gumbel-max token picking: the coupled sampler of the counterfactual-pairing experiment.

Not used by runs (they pick tokens by inverse CDF, :func:`nlgbias.models.hf.pick_tokens`); it is
the instrument of ``scripts/pairing_experiment.py`` (results in ``docs/statistics.md``), which sets
``HFBackend.token_picker = gumbel_pick``.  The experiment decided against shipping it, so it lives
here, outside the package.

At step *t* of a sample with seed *s*, every token id *v* of the vocabulary gets its own uniform
``U[s, t, v]`` (the ``v``-th draw of ``numpy.random.default_rng([s, t])``) and Gumbel noise
``g = -log(-log U)``.  The token is ``argmax(logits / temperature + g)`` over the same support as
today's sampler (top-k, then top-p).  That argmax is an exact draw from the softmax over the
support (the Gumbel-max trick), so a sample keeps the distribution of today's sampler; and two
rows with the same seed whose logits are close pick the same token, unlike the inverse CDF,
where a one-place change in the ranking shifts every later token.
"""

from __future__ import annotations

import numpy as np

from nlgbias.sampling import SamplingParams


def token_uniforms(seed: int, step: int, vocab: int) -> np.ndarray:
    """The uniforms ``U[seed, step, 0..vocab-1]`` in [0, 1), one per token id (float64)."""
    return np.random.default_rng([int(seed), int(step)]).random(vocab)


def support(logits, params: SamplingParams):
    """``(values, indices, keep)``: the top-k of ``logits / temperature``, sorted, and the top-p mask.

    The same support as :func:`nlgbias.models.hf.pick_tokens`: top-k keeps the k largest;
    top-p keeps the smallest prefix of the sorted distribution whose mass reaches p.
    """
    import torch

    k = params.top_k if 0 < params.top_k < logits.shape[-1] else logits.shape[-1]
    values, indices = torch.topk(logits / params.temperature, k, dim=-1, sorted=True)
    keep = torch.ones_like(values, dtype=torch.bool)
    if params.top_p < 1.0:
        probs = torch.softmax(values.double(), dim=-1)
        keep = (probs.cumsum(dim=-1) - probs) < params.top_p
    return values, indices, keep


def gumbel_pick(logits, seeds, step: int, params: SamplingParams):
    """One token per row of ``logits`` (rows x vocabulary) by Gumbel-max with each row's seed.

    ``temperature == 0`` is greedy, as in today's sampler.
    """
    import torch

    if params.temperature == 0:
        return logits.argmax(dim=-1)
    values, indices, keep = support(logits, params)
    vocab = logits.shape[-1]
    ids = indices.cpu().numpy()
    uniforms = np.stack([token_uniforms(s, step, vocab)[row] for s, row in zip(seeds, ids)])
    with np.errstate(divide="ignore"):
        noise = -np.log(-np.log(uniforms))  # U = 0 gives -inf: never picked
    scores = values.double() + torch.as_tensor(noise, dtype=torch.float64, device=values.device)
    scores = torch.where(keep, scores, torch.full_like(scores, -torch.inf))
    return indices.gather(-1, scores.argmax(dim=-1, keepdim=True)).squeeze(-1)


__all__ = ["gumbel_pick", "support", "token_uniforms"]

"""The interface every model backend implements.

Like lm-evaluation-harness's ``LM``: a batch of requests goes in, a list in the same order
comes out, and callers never see tokens.  Retries, batching into store transactions and
resume live outside the backends (see :mod:`nlgbias.pipeline.generate`).

Probes that need the tokenizer or gradients ask for :class:`TokenBackend` (like
lm-evaluation-harness's ``TemplateLM``), which the transformers backend implements; they never
guess from attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from nlgbias.sampling import SamplingParams


@dataclass(frozen=True)
class GenerationRequest:
    """One sample to generate: the prompt, how to sample, and the sample's own seed."""

    prompt: str
    params: SamplingParams = field(default_factory=SamplingParams)
    seed: int = 0


@runtime_checkable
class Backend(Protocol):
    """A language model that can sample continuations and score given ones.

    Attributes
    ----------
    model_id : str
        The name the user gave (alias, path or hub id); part of every sample's seed.
    info : dict
        What the manifest records: backend kind, source, weight-file SHA-256 or revision,
        dtype, device.  Never a secret.
    """

    model_id: str
    info: dict[str, Any]

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        """Sample one continuation per request, in request order (prompt not included).

        Empty strings are valid results (the model ended at once) and are kept.
        """
        ...

    def next_token_logprobs(self, contexts: Sequence[str], targets: Sequence[str]) -> list[float]:
        """Natural-log probability of each ``targets[i]`` directly after ``contexts[i]``.

        A target of several tokens is scored by the chain rule (sum of token log-probs).
        The word-boundary space belongs to the target: ``("The nurse said that", " she")``.
        """
        ...

    def close(self) -> None:
        """Release resources (threads, memory)."""
        ...


@runtime_checkable
class TokenBackend(Backend, Protocol):
    """A :class:`Backend` with token-level access, for probes (next-word probabilities, saliency).

    Attributes
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
    model : torch.nn.Module
        The causal language model, in eval mode.
    device : torch.device
        Where ``model`` runs; inputs go there.
    """

    tokenizer: Any
    model: Any
    device: Any

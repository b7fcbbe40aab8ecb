"""What the measurements that read a model's probabilities, instead of sampling text, share.

:class:`ForwardOnly` is the base of the ``pronoun`` and ``likelihood`` measurements
(:mod:`nlgbias.pipeline.measurements`): neither samples nor scores text, both run in this process,
and both batch their prompts ``--batch-size`` to a store transaction, at most :data:`FORWARD_BATCH`
to a forward pass.
"""

from __future__ import annotations

from nlgbias.models.batching import AUTO, CPU_BATCH
from nlgbias.suites import Suite

FORWARD_BATCH = 32  # prompts or sentences per forward pass


class ForwardOnly:
    """A measurement made of forward passes: nothing sampled, nothing scored, not distributed."""

    distributed = False

    def configure(self, suite: Suite, **options) -> dict:  # noqa: ARG002 (the Measurement protocol)
        """Nothing to resolve: the suite neither samples nor scores text."""
        return {}

    def batch_size(self, suite: Suite, requested: int | str, *, refs, options, samples: int,  # noqa: ARG002 (the Measurement protocol)
                   params) -> tuple[int, dict | None]:  # noqa: ARG002 (the Measurement protocol)
        """``--batch-size``: prompts per store transaction, a number as given; ``auto`` is 120.

        Returns ``(batch size, None)`` for a number, ``(120, {"requested": "auto", "rule": ...})``
        for ``auto``.
        """
        if requested != AUTO:
            return int(requested), None
        return CPU_BATCH, {"requested": AUTO, "rule": f"{CPU_BATCH}: a forward pass takes at most {FORWARD_BATCH}"}


__all__ = ["FORWARD_BATCH", "ForwardOnly"]

"""The statistics defaults, declared once: every function of the package that takes one of these
settings defaults to the constant here, and so do ``nlgbias run`` and :func:`nlgbias.run`
(through :class:`nlgbias.pipeline.options.RunOptions`).

Nothing goes in; each name is a plain value.
"""

N_BOOT = 2000  # bootstrap replicates per interval (--n-boot)
CONFIDENCE = 0.95  # confidence level of every interval
MIN_N = 30  # cells with fewer samples are flagged (--min-n)
INFERENCE_UNIT = "prompt"  # the unit of inference (--unit): prompt (samples nested in prompts) or sample

__all__ = ["N_BOOT", "CONFIDENCE", "MIN_N", "INFERENCE_UNIT"]

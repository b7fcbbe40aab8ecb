"""nlgbias: measure social bias in what language models write.

The pipeline is suites -> models -> scorers -> metrics -> report, with a run store underneath.
The Python API mirrors the command line:

>>> import nlgbias
>>> suite = nlgbias.load_suite("sheng2019")
>>> len(nlgbias.expand_suite(suite))
60
"""

from nlgbias.defaults import N_BOOT
from nlgbias.errors import NlgbiasError
from nlgbias.metrics.compare import probability_difference
from nlgbias.pipeline.audit import run
from nlgbias.pipeline.combine import report_runs
from nlgbias.pipeline.distributed import RayOptions
from nlgbias.pipeline.planning import plan
from nlgbias.resources import package_version
from nlgbias.scorers import get_scorer, score
from nlgbias.suites import expand_suite, list_suites, load_suite
from nlgbias.submodules import lazy_submodules

__version__ = package_version()


def compare_regard(texts_a, texts_b, *, n_boot: int = N_BOOT, seed: int = 0):
    """Mean regard probabilities of two lists of (masked) texts, A minus B, with CIs and p-values.

    Returns a DataFrame ``label, n_a, mean_a, n_b, mean_b, diff, ci_low, ci_high, p, note`` (one text on a
    side: the difference only, ``note`` says why); see
    :func:`nlgbias.metrics.compare.probability_difference`.
    """
    scorer = get_scorer("regard")
    a = scorer.score(list(texts_a))
    b = scorer.score(list(texts_b))
    details_a = [d for d, label in zip(a["details"], a["label"]) if label is not None]
    details_b = [d for d, label in zip(b["details"], b["label"]) if label is not None]
    return probability_difference(details_a, details_b, labels=list(scorer.labels), n_boot=n_boot, seed=seed)


__all__ = ["__version__", "NlgbiasError", "load_suite", "expand_suite", "list_suites", "score", "run", "plan",
           "compare_regard", "report_runs", "RayOptions"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias

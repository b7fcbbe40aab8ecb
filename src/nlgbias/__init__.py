"""nlgbias: measure social bias in what language models write.

The pipeline is suites -> models -> scorers -> metrics -> report, with a run store underneath.
The Python API mirrors the command line:

>>> import nlgbias
>>> suite = nlgbias.load_suite("sheng2019")
>>> len(nlgbias.expand_suite(suite))
60
"""

__version__ = "0.1.0"

from nlgbias.errors import NlgbiasError  # noqa: E402
from nlgbias.suites import expand_suite, load_suite, list_suites  # noqa: E402
from nlgbias.scorers import score  # noqa: E402
from nlgbias.audit import run  # noqa: E402

__all__ = ["__version__", "NlgbiasError", "load_suite", "expand_suite", "list_suites", "score", "run"]

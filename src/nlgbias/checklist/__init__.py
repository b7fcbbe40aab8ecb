"""A behavioural test suite for regard scorers (CheckList: Ribeiro et al. 2020).

Hand-written lexicons (illegal and explicit occupations, ordinary jobs, admired roles, traits,
events, positive framings, negations) are put into Sheng et al.'s ten templates to make test
cases of three kinds: MFT (one sentence, one expected label), INV (a change that must not move
the label) and DIR (a change that must move it one way, or not the other).  Every case type is
settled first in the annotation guidelines (``nlgbias/annotation/worked_examples.yaml``).  Each
lexicon is split in a train and a test half; figures are reported on the test half.

>>> from nlgbias.checklist import check_scorer
>>> result = check_scorer("vader", half="test", max_per_type=5)
>>> result.rates.loc[result.rates["case_type"] == "mft_illegal_job", ["n", "passed"]].values.tolist()
[[5, 0]]

References
----------
Marco Tulio Ribeiro, Tongshuang Wu, Carlos Guestrin, Sameer Singh. 2020. Beyond Accuracy:
Behavioral Testing of NLP Models with CheckList. ACL.
"""

from nlgbias.checklist.cases import build_cases, case_types, count_cases, templates
from nlgbias.checklist.check import CheckResult, check_scorer, resolve_scorer
from nlgbias.checklist.lexicons import MINIMUM_SIZES, lexicon_halves, lexicon_sizes, load_lexicons
from nlgbias.checklist.results import comparison_markdown, judge, pass_rates, passes, summary_markdown
from nlgbias.submodules import lazy_submodules

__all__ = ["CheckResult", "MINIMUM_SIZES", "build_cases", "case_types", "check_scorer", "comparison_markdown",
           "count_cases", "judge", "lexicon_halves", "lexicon_sizes", "load_lexicons", "pass_rates", "passes",
           "resolve_scorer", "summary_markdown", "templates"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias

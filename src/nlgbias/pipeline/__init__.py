"""The run that drives suites -> models -> scorers -> metrics -> report, with the store underneath.

The stage packages (:mod:`nlgbias.suites`, :mod:`nlgbias.models`, :mod:`nlgbias.scorers`,
:mod:`nlgbias.metrics`, :mod:`nlgbias.analyses`, :mod:`nlgbias.report`) each turn a table into a
table and know nothing of one another's order; this package is where they are put in order:

``audit``
    :func:`~nlgbias.pipeline.audit.run`: check the options, measure what the store lacks, run the
    suite's analyses, write the outputs (``nlgbias run``).
``options``
    :class:`~nlgbias.pipeline.options.RunOptions`: every option of a run, declared once (its
    keyword, default, flag, help and choices), for ``run()`` and ``nlgbias run`` alike.
``measurements``
    The measurement stage, one registered entry per suite kind (generate and score, token
    probabilities): what the run does differently for a kind lives there.
``generation``
    The ``generation`` measurement: plan, generate, cut, mask and score what the store lacks.
``generate``
    Fill the generations the store lacks, batch by batch.
``precision``
    ``--until-mde``: sample in rounds until every comparison is precise enough.
``distributed``
    Generate and score on a pool of Ray actors (``--ray``).
``planning``
    How many samples a design needs, before anything runs (``nlgbias plan``).
``combine``
    One report over several run folders (``nlgbias report A B --out``).
``ablation``
    The same suite under a grid of decoding settings (``nlgbias ablate``).

The layers, from the bottom up (``tests/test_layers.py`` checks that imports only point down and
never form a cycle): the small utilities every layer uses, which stay at the package root
(``errors``, ``keys``, ``words``, ``text``, ``sampling``, ``progress``, ``inputs``, ``resources``, ``defaults``,
``validate``, ``registry``, ``submodules``); ``store``; ``suites``; ``models``; ``scorers`` and ``embeddings``;
``metrics``; ``training``; ``annotation``; ``report``; ``analyses``; ``probes``; this package; the
command line and the package's public names (``nlgbias.run`` and the rest).
"""

from nlgbias.submodules import lazy_submodules

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias

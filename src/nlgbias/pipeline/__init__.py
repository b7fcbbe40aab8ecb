"""The run that drives suites -> models -> scorers -> metrics -> report, with the store underneath.

The stage packages (:mod:`nlgbias.suites`, :mod:`nlgbias.models`, :mod:`nlgbias.scorers`,
:mod:`nlgbias.metrics`, :mod:`nlgbias.analyses`, :mod:`nlgbias.report`) each turn a table into a
table and know nothing of one another's order; this package is where they are put in order:

``audit``
    :func:`~nlgbias.pipeline.audit.run`: check the options, measure what the store lacks, run the
    suite's analyses, write the outputs (``nlgbias run``).
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

Small utilities that every layer uses (errors, keys, words, text, sampling, progress, inputs,
resources, validate) stay at the package root.
"""

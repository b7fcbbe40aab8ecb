"""``--prompts-per-group N``: a seeded sample of N prompts per group, stratified by group.

A suite with many prompts per group (HolisticBias: every template with each of a descriptor's noun
phrases) runs on a sample: for each group, N of its prompts drawn without replacement (all of them where
it has no more than N).  The sample is *paired* (:func:`pick_paired`): every group gets the same
templates (an order of the templates drawn by the run seed alone), each with one of its own noun
phrases, so a comparison of two groups compares them on the same templates.  A group's noun phrases
are drawn by the run seed and the group id alone (:func:`nlgbias.keys.cell_seed`), so a group's
prompts do not depend on which other groups the suite has.
The sample is part of the suite's resolved content (its ``sample`` entry: ``prompts_per_group``,
``seed``), so it is recorded in the manifest and changes the run id.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from nlgbias.errors import InputError, option
from nlgbias.keys import cell_seed
from nlgbias.suites.loader import MAX_PROMPTS, Suite, hashed
from nlgbias.suites.prompt_files import with_prompt_sample


def pick(total: int, n: int | str | None, *, seed: int, key: str) -> np.ndarray:
    """Sorted indices of the prompts a group keeps: ``n`` of ``range(total)`` drawn by the seed and the
    group's ``key``; all of them where ``n`` is None, ``all`` or at least ``total``.

    >>> pick(10, 3, seed=0, key="Deaf").tolist() == pick(10, 3, seed=0, key="Deaf").tolist()
    True
    >>> pick(4, 9, seed=0, key="Deaf").tolist()
    [0, 1, 2, 3]
    """
    if n is None or isinstance(n, str) or n >= total:  # a str is ALL
        return np.arange(total)
    rng = np.random.default_rng(cell_seed(seed, "prompts_per_group", key))
    return np.sort(rng.choice(total, size=n, replace=False))


def pick_paired(cells: list[tuple[int, int]], n: int | str | None, *, templates: int, seed: int,
                key: str) -> list[int]:
    """Sorted indices of the ``cells`` (template index, variant) a group keeps: ``n`` of them, the
    same templates for every group.

    The templates are ranked by one order drawn from ``seed`` alone; each group shuffles its
    variants of each template by ``seed`` and its ``key``.  The group keeps its cells in the order
    (round, template rank): first one variant of each template in the shared order, then a second
    variant of each, and so on.  So with ``n`` at most the templates every group has, every group gets
    the first ``n`` templates of the shared order.  All cells where ``n`` is None, ``all`` or at least
    their number.

    >>> a = pick_paired([(t, 0) for t in range(6)], 2, templates=6, seed=0, key="a")
    >>> b = pick_paired([(t, k) for t in range(6) for k in range(3)], 2, templates=6, seed=0, key="b")
    >>> sorted(t for t, _ in ([(t, 0) for t in range(6)][i] for i in a)) == sorted(
    ...     t for t, _ in ([(t, k) for t in range(6) for k in range(3)][i] for i in b))
    True
    """
    if n is None or isinstance(n, str) or n >= len(cells):  # a str is ALL
        return list(range(len(cells)))
    rank = np.random.default_rng(cell_seed(seed, "templates")).permutation(templates)
    shuffle = np.random.default_rng(cell_seed(seed, "prompts_per_group", key)).permutation(len(cells))
    seen: dict[int, int] = {}
    rounds = np.empty(len(cells), dtype=int)
    for i in np.argsort(shuffle, kind="stable"):  # the group's variants of each template, in a random order
        t = cells[i][0]
        rounds[i] = seen.get(t, 0)
        seen[t] = rounds[i] + 1
    order = sorted(range(len(cells)), key=lambda i: (rounds[i], rank[cells[i][0]]))
    return sorted(order[:n])


ALL = "all"


def per_group(value: int | str) -> int | str:
    """``--prompts-per-group``: a whole number of at least 1, or ``all``.

    >>> per_group("12"), per_group("all")
    (12, 'all')
    """
    if isinstance(value, str) and value.strip().lower() == ALL:
        return ALL
    try:
        number = value if isinstance(value, int) and not isinstance(value, bool) else int(str(value).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise InputError(f"{option('--prompts-per-group', value)}: must be a whole number of at least 1, or all")
    return number


def with_sample(suite: Suite, prompts_per_group: int | str | None, seed: int) -> Suite:
    """``suite`` sampled to ``prompts_per_group`` prompts per group by ``seed`` (the suite's own
    ``prompts_per_group`` where None; the suite unchanged where it has none either; ``all``: every
    prompt, recorded as such).  A suite with a ``prompt_file`` (BOLD) is sampled by
    :func:`nlgbias.suites.prompt_files.with_prompt_sample`, stratified per group."""
    if "prompt_file" in suite.probe:  # a prompt-file suite (BOLD) samples each group's prompts from its file
        return with_prompt_sample(suite, prompts_per_group, seed)
    n = suite.sample.get("prompts_per_group") if prompts_per_group is None else per_group(prompts_per_group)
    if n is None:
        return suite
    sampled = hashed(replace(suite, sample={"prompts_per_group": ALL} if n == ALL else
                             {"prompts_per_group": n, "seed": int(seed)}))
    if suite.groups:
        sizes = [len(suite.templates) * len(g.texts) for g in suite.groups]
        count = sum(sizes) if isinstance(n, str) else sum(min(n, size) for size in sizes)
        if count > MAX_PROMPTS:
            raise InputError(f"{option('--prompts-per-group', n)}: {count:,} prompts; the limit is {MAX_PROMPTS:,}")
    return sampled


__all__ = ["ALL", "per_group", "pick", "pick_paired", "with_sample"]

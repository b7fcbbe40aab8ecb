"""Expand a suite into its prompts table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nlgbias.suites.loader import Suite, load_suite
from nlgbias.suites.prompt_files import file_prompts
from nlgbias.suites.sample import pick_paired

PROMPT_COLUMNS = ["prompt_id", "suite", "suite_version", "template_id", "template", "context",
                  "group", "axis", "prompt"]


def attribute_names(suite: Suite) -> list[str]:
    """Group attribute names other than ``axis``, in order of first appearance."""
    names: list[str] = []
    for group in suite.groups:
        for key in group.attributes:
            if key != "axis" and key not in names:
                names.append(key)
    return names


def expand_suite(suite: Suite | str | Path) -> pd.DataFrame:
    """One row per (template, group): the prompts a run sends to each model.

    Parameters
    ----------
    suite : Suite, str or path
        A loaded suite (see :func:`nlgbias.suites.load_suite`), or what ``load_suite`` takes: a
        built-in suite name or a YAML file.

    Returns
    -------
    pandas.DataFrame
        Columns ``prompt_id, suite, suite_version, template_id, template, context, group,
        axis, prompt`` and one column per group attribute (empty where a group lacks it).
        ``prompt_id`` is ``"<template_id>|<group>"``; rows are in template order, then group order.
        Groups with variants (:attr:`~nlgbias.suites.Group.variants`) give one prompt per (template,
        variant), ``prompt_id`` ``"<template_id>|<group>|<variant index>"``, and a ``mention`` column (the
        variant in the prompt).  With a sample (``prompts_per_group``, :mod:`nlgbias.suites.sample`) each
        group keeps that many of its prompts.
        A suite with a ``prompt_file`` (BOLD) gives its sampled prompts instead
        (:func:`nlgbias.suites.prompt_files.file_prompts`).

    Examples
    --------
    >>> from nlgbias.suites import load_suite
    >>> prompts = expand_suite(load_suite("sheng2019"))
    >>> prompts.loc[0, ["prompt_id", "prompt"]].tolist()
    ['known_for|man', 'The man was known for']
    >>> prompts.groupby("context").size().to_dict()
    {'occupation': 30, 'respect': 30}
    >>> len(expand_suite("sheng2019"))
    60
    """
    suite = loaded_suite(suite)
    if "prompt_file" in suite.probe:  # prompts from a file (BOLD): the run's sample of it
        return file_prompts(suite)[PROMPT_COLUMNS]
    names = attribute_names(suite)
    n = suite.sample.get("prompts_per_group")
    variants = any(g.variants for g in suite.groups)
    cells = [(t, k) for t in range(len(suite.templates)) for k in range(max(len(g.texts) for g in suite.groups))] \
        if suite.groups else []
    kept: dict[str, set] = {}
    for group in suite.groups:
        mine = [(t, k) for t, k in cells if k < len(group.texts)]
        kept[group.id] = {mine[i] for i in pick_paired(mine, n, templates=len(suite.templates),
                                                        seed=suite.sample.get("seed", 0), key=group.id)}
    rows = []
    for t, template in enumerate(suite.templates):
        for group in suite.groups:
            for k, text in enumerate(group.texts):
                if (t, k) not in kept[group.id]:
                    continue
                row = {
                    "prompt_id": f"{template.id}|{group.id}" + (f"|{k}" if variants else ""),
                    "suite": suite.name,
                    "suite_version": suite.version,
                    "template_id": template.id,
                    "template": template.text,
                    "context": template.context,
                    "group": group.id,
                    "axis": group.axis,
                    "prompt": template.text.replace("{group}", text),
                }
                row.update({name: group.attributes.get(name) for name in names})
                if variants:
                    row["mention"] = text
                rows.append(row)
    return pd.DataFrame(rows, columns=PROMPT_COLUMNS + names + (["mention"] if variants else []))


def loaded_suite(suite: Suite | str | Path) -> Suite:
    """``suite`` itself, or the suite :func:`~nlgbias.suites.load_suite` reads for a name or path."""
    return suite if isinstance(suite, Suite) else load_suite(suite)

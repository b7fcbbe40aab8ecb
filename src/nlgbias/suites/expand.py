"""Expand a suite into its prompts table."""

from __future__ import annotations

import pandas as pd

from nlgbias.suites.loader import Suite
from nlgbias.suites.prompt_files import file_prompts

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


def expand_suite(suite: Suite) -> pd.DataFrame:
    """One row per (template, group): the prompts a run sends to each model.

    Parameters
    ----------
    suite : Suite
        A loaded suite (see :func:`nlgbias.suites.load_suite`).

    Returns
    -------
    pandas.DataFrame
        Columns ``prompt_id, suite, suite_version, template_id, template, context, group,
        axis, prompt`` and one column per group attribute (empty where a group lacks it).
        ``prompt_id`` is ``"<template_id>|<group>"``; rows are in template order, then group order.
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
    """
    if "prompt_file" in suite.probe:  # prompts from a file (BOLD): the run's sample of it
        return file_prompts(suite)[PROMPT_COLUMNS]
    names = attribute_names(suite)
    rows = []
    for template in suite.templates:
        for group in suite.groups:
            row = {
                "prompt_id": f"{template.id}|{group.id}",
                "suite": suite.name,
                "suite_version": suite.version,
                "template_id": template.id,
                "template": template.text,
                "context": template.context,
                "group": group.id,
                "axis": group.axis,
                "prompt": template.text.replace("{group}", group.text),
            }
            row.update({name: group.attributes.get(name) for name in names})
            rows.append(row)
    return pd.DataFrame(rows, columns=PROMPT_COLUMNS + names)

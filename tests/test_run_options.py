"""Run options are declared once (:class:`nlgbias.pipeline.options.RunOptions`): ``nlgbias.run()``,
``RunConfig.create`` and ``nlgbias run`` take the same options with the same defaults."""

from __future__ import annotations

import inspect
from dataclasses import fields

import click

import nlgbias
from nlgbias import defaults
from nlgbias.analyses import AnalysisOptions
from nlgbias.cli import RUN_FIELDS, cli
from nlgbias.pipeline.audit import RunConfig
from nlgbias.pipeline.options import OPTION_NAMES, RUN_DEFAULTS, STATISTICS, RunOptions, flags


def _defaults(function) -> dict:
    return {name: p.default for name, p in inspect.signature(function).parameters.items()}


def test_python_signatures_list_every_option_with_its_default():
    declared = {f.name: getattr(RUN_DEFAULTS, f.name) for f in fields(RunOptions)}
    assert {name: _defaults(RunConfig.create)[name] for name in declared} == declared
    assert {name: _defaults(nlgbias.run)[name] for name in declared} == declared
    assert set(_defaults(RunConfig.create)) == set(OPTION_NAMES)
    assert _defaults(nlgbias.run)["n_boot"] == 2000 and _defaults(nlgbias.run)["confidence"] == 0.95
    assert _defaults(nlgbias.run)["min_n"] == 30 and _defaults(nlgbias.run)["unit"] == "prompt"


def test_the_command_line_takes_the_declared_options_and_defaults():
    params = {p.name: p for p in cli.commands["run"].params}
    assert set(RUN_FIELDS) <= set(OPTION_NAMES)
    for name, flag in flags().items():
        param = params[name]
        assert param.opts[0] == flag.flag
        if not flag.multiple:
            assert param.default == getattr(RUN_DEFAULTS, name), name
    assert params["suite"].default == RUN_DEFAULTS.suite
    assert isinstance(params["unit"].type, click.Choice) and tuple(params["unit"].type.choices) == ("prompt", "sample")


def test_statistics_defaults_come_from_one_place():
    analysis = AnalysisOptions()
    for name, value in (("n_boot", defaults.N_BOOT), ("confidence", defaults.CONFIDENCE), ("min_n", defaults.MIN_N),
                        ("unit", defaults.INFERENCE_UNIT)):
        assert name in STATISTICS
        assert getattr(RUN_DEFAULTS, name) == getattr(analysis, name) == value

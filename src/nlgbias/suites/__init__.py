"""Suites: probe definitions as YAML data, and their expansion into a prompts table."""

from nlgbias.suites.expand import PROMPT_COLUMNS, attribute_names, expand_suite
from nlgbias.suites.loader import Group, Suite, Template, data_file, list_suites, load_suite
from nlgbias.submodules import lazy_submodules

__all__ = ["Group", "Suite", "Template", "PROMPT_COLUMNS", "attribute_names", "expand_suite",
           "list_suites", "load_suite", "data_file"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias

"""Annotation toolkit: sample generations, mask, export sheets, import, agree, adjudicate.

The protocol is Sheng et al.'s (2019): per cell k positive and k negative samples by VADER,
group mention masked as XYZ, six regard and six sentiment categories, majority vote.
"""

from nlgbias.annotation.agreement import adjudicate, agreement, amiaa, apiaa, correlation_table
from nlgbias.annotation.categories import REGARD, SENTIMENT, to_classes
from nlgbias.annotation.sample import annotation_sample, item_id, normalise
from nlgbias.annotation.sheet_files import read_sheet
from nlgbias.annotation.sheets import export_sheets, guidelines_html, import_sheets, read_items, sheet_labels
from nlgbias.annotation.steps import import_labels, sample_run, training_table
from nlgbias.submodules import lazy_submodules

__all__ = ["REGARD", "SENTIMENT", "adjudicate", "agreement", "amiaa", "annotation_sample", "apiaa",
           "correlation_table", "export_sheets", "guidelines_html", "import_labels", "import_sheets", "item_id",
           "normalise", "read_items", "read_sheet", "sample_run", "sheet_labels", "to_classes", "training_table"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias

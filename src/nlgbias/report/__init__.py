"""Report: Results + samples + manifest + the analyses' sections -> one self-contained, escaped HTML file."""

from nlgbias.report.folder import read_run_folder, rerender_report
from nlgbias.report.html import Section, render_report, write_report
from nlgbias.submodules import lazy_submodules

__all__ = ["Section", "read_run_folder", "render_report", "rerender_report", "write_report"]

__getattr__ = lazy_submodules(__name__)  # nlgbias.<package>.<module> after a plain import nlgbias

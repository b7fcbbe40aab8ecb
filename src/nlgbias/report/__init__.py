"""Report: Results + samples + manifest -> one self-contained, escaped HTML file."""

from nlgbias.report.folder import read_run_folder, rerender_report
from nlgbias.report.html import render_report, write_report

__all__ = ["read_run_folder", "render_report", "rerender_report", "write_report"]

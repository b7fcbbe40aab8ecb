"""Report: Results + samples + manifest -> one self-contained, escaped HTML file."""

from nlgbias.report.html import render_report, rewrite_report, write_report

__all__ = ["render_report", "rewrite_report", "write_report"]

"""The report's building blocks: SVG charts (svg.py), stacked share bars (charts.py), section contexts (sections.py)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from nlgbias.metrics import Results
from nlgbias.probes.pronouns import section as pronoun_section
from nlgbias.report import charts, sections, svg


def _floats(markup: str, tag: str, attr: str) -> list[float]:
    return [float(v) for v in re.findall(rf'<{tag} [^>]*?\b{attr}="([-0-9.]+)"', markup)]


def test_bar_chart_places_bars_and_intervals_on_the_value_axis_and_escapes_labels():
    chart = svg.bar_chart([{"label": "<b>a</b>", "value": 0.5, "ci_low": 0.25, "ci_high": 0.75},
                           {"label": "b", "value": 1.0}], title="T & t", low=0.0, high=1.0, width=520)
    # label column 190 px, bar area 520 - 190 - 70 = 260 px: x(v) = 190 + 260 v
    assert _floats(chart, "rect", "x") == [190.0, 190.0]
    assert _floats(chart, "rect", "width") == [130.0, 260.0]
    assert _floats(chart, "line", "x1")[:3] == [255.0, 255.0, 385.0]  # whisker and its two caps
    assert "<b>a</b>" not in chart and "&lt;b&gt;a&lt;/b&gt;" in chart and 'aria-label="T &amp; t"' in chart
    assert "<script" not in chart


def test_bar_chart_skips_missing_values_and_draws_a_reference_line():
    chart = svg.bar_chart([{"label": "x", "value": float("nan")}, {"label": "y", "value": 2.0}],
                          title="t", reference=1.0, low=0.0, high=4.0)
    assert len(re.findall(r"<rect ", chart)) == 1
    assert 'stroke-dasharray="3 3"' in chart and 'x1="255.0"' in chart  # 190 + 260 * 1/4


def test_histogram_heights_are_shares_per_bin():
    chart = svg.histogram({"P(he)": [0.1, 0.2, 0.9, 5.0]}, title="h", x_label="p", bins=2, width=520, height=240)
    # two bins with 2 of 4 values each (5.0 is counted in the last bin): both steps at 50%,
    # the nice maximum of the y axis is 0.5, so both steps reach the top of the plot (y = 26)
    path = re.search(r'<path d="([^"]+)"', chart).group(1)
    ys = [float(y) for y in re.findall(r",([-0-9.]+)", path)]
    assert ys == [200.0, 26.0, 26.0, 26.0, 26.0, 200.0]
    assert ">50%<" in chart and "P(he)" in chart


def test_line_chart_and_scatter():
    assert "no data" in svg.line_chart({}, title="t", x_label="x", y_label="y")
    line = svg.line_chart({"s": [(1, 0.5), (100, 0.0)]}, title="t", x_label="rank", y_label="share", log_x=True,
                          width=520, height=300)
    # log10 x from 0 to 2 over 52..390 px, y from 0.5 (top, 26) to 0 (bottom, 260)
    assert 'points="52.0,26.0 390.0,260.0"' in line
    dots = svg.scatter([{"x": 0.5, "y": 1.0, "label": "<i>"}, {"x": float("nan"), "y": 0.1}], title="t",
                       x_label="x", y_label="y", limit=1.0, width=420, height=380)
    assert len(re.findall("<circle", dots)) == 1 and "&lt;i&gt;" in dots
    assert _floats(dots, "circle", "cx") == [48 + 252 * 0.5] and _floats(dots, "circle", "cy") == [26.0]


def _shares(rows):
    return pd.DataFrame(rows, columns=["model", "context", "scorer", "group", "label", "n", "k", "share", "ci_low",
                                       "ci_high", "small_n"])


def test_stacked_panels_split_each_bar_by_share_and_put_whiskers_on_the_outer_labels():
    shares = _shares([("m", "respect", "vader", "a", "negative", 10, 2, 0.2, 0.1, 0.3, True),
                      ("m", "respect", "vader", "a", "neutral", 10, 3, 0.3, 0.2, 0.4, True),
                      ("m", "respect", "vader", "a", "positive", 10, 5, 0.5, 0.4, 0.6, True)])
    (panel,) = charts.stacked_panels(shares, ["negative", "neutral", "positive"])
    (row,) = panel["rows"]
    widths = [s["w"] for s in row["segments"]]
    assert widths == pytest.approx([0.2 * charts.BAR_WIDTH, 0.3 * charts.BAR_WIDTH, 0.5 * charts.BAR_WIDTH])
    assert [s["x"] for s in row["segments"]] == pytest.approx([150, 150 + 60, 150 + 150])
    negative, positive = row["whiskers"]
    assert (negative["x1"], negative["x2"]) == pytest.approx((150 + 30, 150 + 90))
    assert (positive["x1"], positive["x2"]) == pytest.approx((150 + 300 * 0.4, 150 + 300 * 0.6))
    assert row["label"] == "a" and row["n"] == 10 and row["small_n"] and panel["title"] == "respect · vader"


def test_sections_are_none_without_their_tables():
    empty = Results({}, {})
    for section in (sections.shares, sections.occupations, sections.gender_direction, pronoun_section.pronouns):
        assert section(empty, pd.DataFrame(), {}) is None


def test_shares_section_lists_significant_gaps_largest_first():
    shares = _shares([("m", "respect", "vader", g, lab, 40, 10, 0.25, 0.1, 0.4, False)
                      for g in ("a", "b") for lab in ("negative", "neutral", "positive")])
    gaps = pd.DataFrame({"model": "m", "context": "respect", "scorer": "vader", "label": ["negative", "positive", "neutral"],
                         "group_a": "a", "group_b": "b", "diff": [0.1, -0.3, 0.5], "p_adj": [0.01, 0.02, 0.2]})
    context = sections.shares(Results({"shares": shares, "gaps": gaps}, {}), pd.DataFrame(), {"scorers": [{"name": "vader"}]})
    assert [f["label"] for f in context["findings"]] == ["positive", "negative"]
    assert context["small_cells"] == 0 and len(context["panels"]) == 1 and len(context["gaps"]) == 3


def _text_extents(markup: str) -> list[tuple[float, str]]:
    """(left edge estimated at CHAR_WIDTH px per character, text) of every right-aligned label."""
    out = []
    for x, inner in re.findall(r'<text x="([-0-9.]+)"[^>]*text-anchor="end"[^>]*>(.*?)</text>', markup):
        text = re.sub(r"<title>.*?</title>", "", inner)
        out.append((float(x) - svg.CHAR_WIDTH * len(text), text))
    return out


def test_long_model_names_fit_the_label_column_of_stacked_panels():
    long = "x" * 70
    rows = [(m, "respect", "vader", g, lab, 10, 3, 1 / 3, 0.1, 0.6, True)
            for m in ("mollm2-135m", long) for g in ("straight", "gay") for lab in ("negative", "neutral", "positive")]
    (panel,) = charts.stacked_panels(_shares(rows), ["negative", "neutral", "positive"])
    short = [r for r in panel["rows"] if r["label"] == "mollm2-135m · straight"][0]
    assert short["shown"] == short["label"]  # not cut
    assert short["label_x"] - svg.CHAR_WIDTH * len(short["shown"]) >= 0
    cut = [r for r in panel["rows"] if r["label"].startswith(long)]
    assert all(r["shown"].endswith("…") and len(r["shown"]) == svg.MAX_LABEL for r in cut)
    assert all(r["label_x"] - svg.CHAR_WIDTH * len(r["shown"]) >= 0 for r in panel["rows"])
    # the bars start right of the wider label column, and the panel grows by as much
    assert panel["label_width"] == svg.CHAR_WIDTH * svg.MAX_LABEL + 12 > charts.LABEL_WIDTH
    assert short["segments"][0]["x"] == panel["label_width"] == panel["ticks"][0]["x"]
    assert panel["width"] >= panel["label_width"] + charts.BAR_WIDTH


def test_the_shares_template_prints_cut_labels_with_the_full_label_as_tooltip():
    long = "mollm2-135m-instruct-with-a-very-long-fine-tuning-name"
    rows = [(long, "respect", "vader", "straight", lab, 10, 3, 1 / 3, 0.1, 0.6, True)
            for lab in ("negative", "neutral", "positive")] + \
           [("mollm2-135m", "respect", "vader", "straight", lab, 10, 3, 1 / 3, 0.1, 0.6, True)
            for lab in ("negative", "neutral", "positive")]
    from nlgbias.report.html import _environment

    context = sections.shares(Results({"shares": _shares(rows), "gaps": pd.DataFrame(columns=["p_adj", "diff"]),
                                       "model_gaps": pd.DataFrame()}, {}), pd.DataFrame(), {"scorers": [{"name": "vader"}]})
    meta = {"min_n": 30, "ci": "", "test": "", "correction": "", "mde": "", "n_comparisons": 0}
    page = _environment().get_template("_shares.html.j2").render(shares=context, meta=meta, alpha=0.05,
                                                                   ci_label="95% CI")
    labels = _text_extents(page)
    assert [text for _, text in labels] == [long[:svg.MAX_LABEL - 1] + "…", "mollm2-135m · straight"]
    assert all(left >= 0 for left, _ in labels)
    assert f"<title>{long} · straight</title>" in page


def test_bar_chart_widens_its_label_column_for_long_labels():
    chart = svg.bar_chart([{"label": "a" * 40, "value": 0.5}, {"label": "b", "value": 1.0}], title="t", low=0.0,
                          high=1.0, width=520)
    assert all(left >= 0 for left, _ in _text_extents(chart))
    label_width = svg.CHAR_WIDTH * 40 + 12
    assert _floats(chart, "rect", "x") == [label_width, label_width]
    assert _floats(chart, "rect", "width") == [130.0, 260.0]  # the bar area keeps its width
    assert f'<svg width="{label_width + 260 + 70}"' in chart

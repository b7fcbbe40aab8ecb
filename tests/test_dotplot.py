"""The sorted dot plot with CI whiskers (report/dotplot.py): geometry, highlighting, escaping, many rows."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from nlgbias.report.dotplot import ROW, TOP, dot_plot

NS = {"s": "http://www.w3.org/2000/svg"}


def _rows(svg: str) -> list[ET.Element]:
    return ET.fromstring(svg).findall(".//s:g", NS)


def _label(row: ET.Element) -> str:
    return row.find("s:text[@class='label']", NS).text


def _frame():
    return pd.DataFrame({"group": ["low", "high", "mid", "none"],
                         "share": [0.10, 0.60, 0.30, float("nan")],
                         "ci_low": [0.05, 0.50, 0.20, float("nan")],
                         "ci_high": [0.20, 0.70, 0.45, float("nan")],
                         "flagged": [False, True, False, False],
                         "n": [40, 50, 60, 0]})


def test_rows_are_sorted_by_value_highest_first_with_missing_values_last():
    rows = _rows(dot_plot(_frame(), title="t"))
    assert [_label(r) for r in rows] == ["high", "mid", "low", "none"]
    ys = [float(r.find("s:text[@class='label']", NS).get("y")) for r in rows]
    assert all(b - a == pytest.approx(ROW) for a, b in zip(ys, ys[1:]))
    assert rows[3].find("s:circle", NS) is None and rows[3].find("s:line", NS) is None  # no value, no whisker
    assert "n/a" in "".join(rows[3].itertext())


def test_whiskers_end_at_the_interval_on_the_dots_value_axis():
    rows = _rows(dot_plot(_frame(), title="t"))
    cx = {_label(r): float(r.find("s:circle", NS).get("cx")) for r in rows[:3]}
    # the axis is linear: recover x(v) = a + b v from two dots, then every whisker end and dot must lie on it
    b = (cx["high"] - cx["low"]) / (0.60 - 0.10)
    a = cx["low"] - b * 0.10
    assert b > 0
    assert cx["mid"] == pytest.approx(a + b * 0.30, abs=0.1)
    for row, (lo, hi) in zip(rows[:3], [(0.50, 0.70), (0.20, 0.45), (0.05, 0.20)]):
        whisker = row.find("s:line[@class='whisker']", NS)
        assert float(whisker.get("x1")) == pytest.approx(a + b * lo, abs=0.1)
        assert float(whisker.get("x2")) == pytest.approx(a + b * hi, abs=0.1)
        assert float(whisker.get("y1")) == pytest.approx(float(row.find("s:circle", NS).get("cy")))
    # shares start the axis at 0: the "0%" tick sits at x(0)
    ticks = {t.text: float(t.get("x")) for t in ET.fromstring(dot_plot(_frame(), title="t")).iter(
        "{http://www.w3.org/2000/svg}text") if (t.get("class") or "").endswith("tick")}
    assert ticks["0%"] == pytest.approx(a, abs=0.1)
    assert ticks["60%"] == pytest.approx(a + b * 0.6, abs=0.1)
    assert list(ticks) == ["0%", "20%", "40%", "60%", "80%"]  # 0 to 70% on a round axis


def test_flagged_rows_are_coloured_and_bold_and_a_reference_line_is_drawn():
    svg = dot_plot(_frame(), title="t", reference=0.25)
    rows = _rows(svg)
    high = rows[0]
    assert high.get("class") == "dot-row flagged"
    assert high.find("s:text[@class='label']", NS).get("font-weight") == "bold"
    assert high.find("s:circle", NS).get("fill") in high.find("s:text[@class='label']", NS).get("style")
    assert high.find("s:circle", NS).get("fill") != rows[1].find("s:circle", NS).get("fill")
    assert all(r.get("class") == "dot-row" for r in rows[1:])
    assert rows[1].find("s:text[@class='label']", NS).get("font-weight") is None
    cx = [float(r.find("s:circle", NS).get("cx")) for r in rows[:3]]
    ref = ET.fromstring(svg).find(".//s:line[@class='reference']", NS)
    # 0.25 lies between the dots at 0.30 and 0.10, at a quarter of the way from 0.30 down to 0.10
    assert float(ref.get("x1")) == pytest.approx(cx[1] + (cx[2] - cx[1]) * 0.25, abs=0.1)
    # the reference line's value sits under the title, not on it (12 px text)
    title, value = (float(t.get("y")) for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")
                    if t.text in ("t", "25.0%"))
    assert value - title >= 12
    no_flags = dot_plot(_frame(), title="t", flagged=None)
    assert "flagged" not in no_flags


def test_labels_and_title_are_escaped():
    evil = '<script>alert("x")</script> & \'q\''
    frame = pd.DataFrame({"group": [evil, "b"], "share": [0.5, 0.2], "ci_low": [0.4, 0.1], "ci_high": [0.6, 0.3]})
    svg = dot_plot(frame, title="<b>T</b> & co", flagged=None)
    assert "<script" not in svg and "<b>" not in svg
    root = ET.fromstring(svg)  # well-formed XML
    assert root.get("aria-label") == "<b>T</b> & co"
    assert _label(_rows(svg)[0]) == evil


def test_many_rows_grow_the_height_and_never_overlap():
    n = 600
    frame = pd.DataFrame({"group": [f"group {i} " + "x" * (i % 70) for i in range(n)],
                          "share": [(i * 37 % n) / n for i in range(n)],
                          "ci_low": [max(0.0, (i * 37 % n) / n - 0.05) for i in range(n)],
                          "ci_high": [min(1.0, (i * 37 % n) / n + 0.05) for i in range(n)],
                          "flagged": [i % 7 == 0 for i in range(n)]})
    svg = dot_plot(frame, title="many")
    root = ET.fromstring(svg)
    rows = _rows(svg)
    assert len(rows) == n
    assert float(root.get("height")) >= TOP + ROW * n
    ys = [float(r.find("s:text[@class='label']", NS).get("y")) for r in rows]
    assert min(b - a for a, b in zip(ys, ys[1:])) >= 11  # 11 px text: consecutive labels do not touch
    values = [float(r.find("s:circle", NS).get("cx")) for r in rows]
    assert values == sorted(values, reverse=True)
    # long labels are cut to 48 characters, the label column fits them: no label starts left of x = 0
    label_x = float(rows[0].find("s:text[@class='label']", NS).get("x"))
    assert label_x >= 7 * 48
    small = dot_plot(frame.head(10), title="few")
    assert float(ET.fromstring(small).get("height")) < float(root.get("height")) / 30


def test_plain_units_and_negative_values():
    frame = pd.DataFrame({"group": ["a", "b"], "score": [-0.2, 0.3], "lo": [-0.4, 0.1], "hi": [0.0, 0.5]})
    svg = dot_plot(frame, title="t", value="score", low="lo", high="hi", flagged=None, unit="", reference=0.0)
    assert [_label(r) for r in _rows(svg)] == ["b", "a"]
    assert "0.3 [0.1, 0.5]" in svg and "%" not in svg
    with pytest.raises(ValueError, match="score"):
        dot_plot(frame.drop(columns=["score"]), title="t", value="score", low="lo", high="hi")

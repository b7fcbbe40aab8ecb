"""The HolisticBias report sections' shared layout: per model, one dot per axis, then per axis one dot
per descriptor.

In: an axes table (``model, axis, share, ...``: one row per model and axis) and a descriptors table
(``model, axis, group, flagged`` and the plotted value).  Out: the ``models`` list the section
templates render (``model, summary, axes, panels``; a panel is ``axis, summary, chart, flagged, rows``).
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd
from markupsafe import Markup

from nlgbias.report.dotplot import dot_plot
from nlgbias.report.sections import records


def axis_panels(axes: pd.DataFrame, descriptors: pd.DataFrame, *, summary_title: str, value: str, chart_title: str,
                reference: Callable[[Any, pd.DataFrame], float], unit: str = "%") -> list[dict]:
    """Per model: ``summary_title`` (with ``{model}``) over a dot plot of each axis's ``share``; then per
    axis, by falling share, a dot plot of its descriptors' ``value`` titled ``"<model> · <axis>:
    <chart_title>"``, with the line at ``reference(axis row, the axis's descriptor rows)``."""
    models = []
    for model, part in axes.groupby("model", sort=False):
        summary = Markup(dot_plot(part, title=summary_title.format(model=model), label="axis", flagged=None))
        panels = []
        for row in part.sort_values("share", ascending=False, kind="mergesort").itertuples(index=False):
            mine = descriptors[(descriptors["model"] == model) & (descriptors["axis"] == row.axis)]
            mine = mine.sort_values(value, ascending=False, kind="mergesort")
            chart = Markup(dot_plot(mine, title=f"{model} · {row.axis}: {chart_title}", value=value, unit=unit,
                                    reference=reference(row, mine)))
            panels.append({"axis": row.axis, "summary": row._asdict(), "chart": chart,
                           "flagged": mine.loc[mine["flagged"], "group"].tolist(), "rows": records(mine)})
        models.append({"model": model, "summary": summary, "axes": records(part), "panels": panels})
    return models


__all__ = ["axis_panels"]

"""The label-share bars: every share is printed somewhere, and no whisker crosses printed text.

The geometry test reads the SVG the report actually contains (positions in SVG units, text
boxes estimated generously from the font size).  When Chromium is installed, a second test
lays the page out in headless Chromium and measures the real text boxes with ``getBBox``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pandas as pd
import pytest

from nlgbias.analyses import report_sections
from nlgbias.metrics import compute_metrics
from nlgbias.report import render_report

# Six groups whose negative shares are small (3-8%), as in the occupation x regard panel of the issue,
# and positive shares of 14-16%, whose CI whiskers used to cross the "14%" printed in the bar.
NEGATIVES = {"woman": 3, "man": 4, "gay person": 5, "straight person": 6, "Black person": 5, "White person": 8}
POSITIVES = {"woman": 14, "man": 16, "gay person": 15, "straight person": 14, "Black person": 16, "White person": 15}


def small_share_tables():
    rows = []
    for group in NEGATIVES:
        labels = (["negative"] * NEGATIVES[group] + ["positive"] * POSITIVES[group])
        labels += ["neutral"] * (100 - len(labels))
        for i, label in enumerate(labels):
            rows.append({"model": "m", "context": "occupation", "group": group, "template_id": "t", "sample_idx": i,
                         "prompt": f"The {group} worked as", "continuation": " a clerk.",
                         "sentence": f"The {group} worked as a clerk.", "regard_label": label, "is_empty": False})
    samples = pd.DataFrame(rows)
    scored = samples.assign(scorer="regard", label=samples["regard_label"])
    results = compute_metrics(scored, comparisons=[("woman", "man")], n_boot=200)
    manifest = {"run_id": "r-1", "nlgbias_version": "0", "started_at": "t0", "finished_at": "t1",
                "suite": {"name": "s", "version": 1, "content_hash": "abc" * 10, "citation": "c"},
                "models": [{"model": "m"}], "counts": {"prompts": 6, "samples": 600, "empty_continuations": 0},
                "sampling": {"samples_per_prompt": 100, "top_k": 40, "top_p": 1.0, "temperature": 0.7,
                             "max_new_tokens": 40, "seed": 0, "truncate": "first_sentence"},
                "scorers": [{"name": "regard", "version": "v", "citation": "c", "threshold": None}],
                "scorers_unavailable": []}
    return results, samples, manifest


def first_panel(page: str) -> str:
    start = page.index('<div class="panel">')
    return page[start:page.index("</svg>", start)]


def attrs(tag: str) -> dict:
    return dict(re.findall(r'(\w[\w-]*)="([^"]*)"', tag))


def texts(svg: str) -> list[dict]:
    """Every <text> with an estimated box: 7 px per character (generous for 11-12 px system-ui)."""
    out = []
    for tag, content in re.findall(r"(<text[^>]*>)([^<]*)</text>", svg):
        a = attrs(tag)
        x, y, width = float(a["x"]), float(a["y"]), 7 * len(content)
        left = {"start": x, "middle": x - width / 2, "end": x - width}[a.get("text-anchor", "start")]
        out.append({"text": content, "cls": a.get("class", ""), "x0": left, "x1": left + width, "y0": y - 10, "y1": y + 3})
    return out


def whiskers(svg: str) -> list[dict]:
    """Whisker bars and caps (the dark lines), as boxes."""
    out = []
    for tag in re.findall(r"<line[^>]*>", svg):
        a = attrs(tag)
        if a.get("stroke") != "#111":
            continue
        x1, x2, y1, y2 = (float(a[k]) for k in ("x1", "x2", "y1", "y2"))
        out.append({"x0": min(x1, x2), "x1": max(x1, x2), "y0": min(y1, y2) - 0.7, "y1": max(y1, y2) + 0.7})
    return out


def overlap(a: dict, b: dict) -> bool:
    return a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]


def test_every_share_is_printed_and_no_whisker_covers_text():
    results, samples, manifest = small_share_tables()
    svg = first_panel(render_report(results, samples, manifest, sections=report_sections()))
    boxes, lines = texts(svg), whiskers(svg)
    assert len(lines) == 6 * 2 * 3  # two whiskers per bar, each a bar and two caps
    crossing = [(t["text"], w) for t in boxes for w in lines if overlap(t, w)]
    assert crossing == []
    printed = " ".join(t["text"] for t in boxes)
    shares = results.shares.set_index(["group", "label"])["share"]
    for group in NEGATIVES:
        negative, positive = shares[(group, "negative")], shares[(group, "positive")]
        assert round(negative * 100) == NEGATIVES[group] and round(positive * 100) == POSITIVES[group]
        assert f"negative {negative:.0%}" in printed  # too narrow for the bar: printed beside it, named
        assert f"{positive:.0%}" in printed
    in_bar = [t["text"] for t in boxes if t["cls"].startswith("in")]
    assert len(in_bar) == 6 * 2  # neutral and positive inside each bar, negative beside it


def test_whiskers_of_neighbouring_bars_do_not_touch():
    results, samples, manifest = small_share_tables()
    svg = first_panel(render_report(results, samples, manifest, sections=report_sections()))
    bars = sorted({float(attrs(t)["y"]) for t in re.findall(r'<rect[^>]*height="22"[^>]*>', svg)})
    assert len(bars) == 6
    for upper, lower in zip(bars, bars[1:]):
        middle = (upper + 22 + lower) / 2
        centre = [(w, (w["y0"] + w["y1"]) / 2) for w in whiskers(svg)]
        below_upper = [w for w, c in centre if upper + 22 < c < middle]
        above_lower = [w for w, c in centre if middle < c < lower]
        assert len(below_upper) == len(above_lower) == 3
        assert max(w["y1"] for w in below_upper) < min(w["y0"] for w in above_lower)


MEASURE = """<script>
const svg = document.querySelector('.panel svg');
const box = e => { const b = e.getBBox(); return {x0: b.x, x1: b.x + b.width, y0: b.y, y1: b.y + b.height}; };
const lines = [...svg.querySelectorAll('line')].filter(l => l.getAttribute('stroke') === '#111')
  .map(l => { const b = box(l); return {x0: b.x0, x1: b.x1, y0: b.y0 - 0.65, y1: b.y1 + 0.65}; });
const texts = [...svg.querySelectorAll('text')].map(t => ({text: t.textContent, ...box(t)}));
const hits = [];
for (const t of texts) for (const l of lines)
  if (t.x0 < l.x1 && l.x0 < t.x1 && t.y0 < l.y1 && l.y0 < t.y1) hits.push(t.text);
const wide = texts.filter(t => t.x1 > svg.viewBox.baseVal.width).map(t => t.text);
document.body.innerHTML = '<pre id="out">' + JSON.stringify({n_text: texts.length, n_lines: lines.length,
  hits: hits, wide: wide}) + '</pre>';
</script>"""


@pytest.mark.skipif(shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
                    reason="headless Chromium not installed (the SVG geometry test above still runs)")
def test_chromium_measures_no_whisker_over_text(tmp_path):
    results, samples, manifest = small_share_tables()
    page = render_report(results, samples, manifest, sections=report_sections())
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)  # let the probe script run
    target = tmp_path / "report.html"
    target.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", target.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="out">(.*?)</pre>', done.stdout)
    assert found, done.stderr[-500:]
    measured = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert measured["n_lines"] == 36 and measured["n_text"] > 20
    assert measured["hits"] == [] and measured["wide"] == []

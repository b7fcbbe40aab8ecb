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


def small_share_tables(contexts=("occupation", "respect")):
    """Label shares of six groups in each context (two contexts: two panels of the usual width, as most runs)."""
    rows = []
    for group in NEGATIVES:
        labels = (["negative"] * NEGATIVES[group] + ["positive"] * POSITIVES[group])
        labels += ["neutral"] * (100 - len(labels))
        for i, label in enumerate(labels):
            rows += [{"model": "m", "context": context, "group": group, "template_id": "t", "sample_idx": i,
                      "prompt": f"The {group} worked as", "continuation": " a clerk.",
                      "sentence": f"The {group} worked as a clerk.", "regard_label": label, "is_empty": False}
                     for context in contexts]
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
    """Whisker bars and caps (the lines of each ``<g class="whisker">``), as boxes with their group's
    label and stroke colour."""
    out = []
    for group, body in re.findall(r'(<g class="whisker"[^>]*>)(.*?)</g>', svg, flags=re.S):
        g = attrs(group)
        for tag in re.findall(r"<line[^>]*>", body):
            a = attrs(tag)
            x1, x2, y1, y2 = (float(a[k]) for k in ("x1", "x2", "y1", "y2"))
            out.append({"x0": min(x1, x2), "x1": max(x1, x2), "y0": min(y1, y2) - 0.7, "y1": max(y1, y2) + 0.7,
                        "label": g["data-label"], "stroke": g["stroke"]})
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
    shares = results.shares[results.shares["context"] == "occupation"].set_index(["group", "label"])["share"]
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
        assert {w["label"] for w in below_upper} == {"positive"} and {w["label"] for w in above_lower} == {"negative"}
        # clear space between one bar's lower whisker and the next bar's upper one (it was 2 px), and each
        # whisker much nearer its own bar than the other
        assert min(w["y0"] for w in above_lower) - max(w["y1"] for w in below_upper) >= 12
        assert max(w["y1"] for w in below_upper) - (upper + 22) < (lower - max(w["y1"] for w in below_upper)) / 2
        assert lower - min(w["y0"] for w in above_lower) < (min(w["y0"] for w in above_lower) - upper - 22) / 2


def test_whiskers_are_drawn_in_a_dark_shade_of_their_label_colour():
    from nlgbias.report.charts import COLORS, WHISKER_COLORS

    results, samples, manifest = small_share_tables()
    lines = whiskers(first_panel(render_report(results, samples, manifest, sections=report_sections())))
    assert {(w["label"], w["stroke"]) for w in lines} == {("negative", WHISKER_COLORS["negative"]),
                                                          ("positive", WHISKER_COLORS["positive"])}
    for label in ("negative", "positive"):  # the same hue as the bar segment, darker
        bar, whisker = (int(COLORS[label][i:i + 2], 16) for i in (1, 3, 5)), \
            (int(WHISKER_COLORS[label][i:i + 2], 16) for i in (1, 3, 5))
        assert sum(whisker) < 0.7 * sum(bar)


def test_ten_and_twenty_series_never_share_a_look():
    from nlgbias.report.svg import histogram, line_chart, scatter

    for n in (10, 20):
        series = {f"s{i}": [(1, 0.1 * (i + 1)), (10, 0.05)] for i in range(n)}
        svg = str(line_chart(series, title="t", x_label="x", y_label="y", log_x=True))
        looks = re.findall(r'<polyline [^>]*stroke="([^"]+)"[^>]*?(?:stroke-dasharray="([^"]+)")?>', svg)
        assert len(looks) == n and len(set(looks)) == n
        svg = str(histogram({f"s{i}": [0.1 * (i % 10)] for i in range(n)}, title="t", x_label="x"))
        looks = re.findall(r'<path [^>]*stroke="([^"]+)"[^>]*?(?:stroke-dasharray="([^"]+)")?>', svg)
        assert len(set(looks)) == n
        svg = str(scatter([{"x": 0.1, "y": 0.2, "series": f"s{i}"} for i in range(n)], title="t", x_label="x",
                          y_label="y"))
        looks = re.findall(r'<circle [^>]*?(fill|stroke)="(#[0-9a-f]{6})"', svg)
        assert len(set(looks)) == n


MEASURE = """<script>
const svg = document.querySelector('.panel svg');
const box = e => { const b = e.getBBox(); return {x0: b.x, x1: b.x + b.width, y0: b.y, y1: b.y + b.height}; };
const lines = [...svg.querySelectorAll('g.whisker line')]
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


PAGE = """<script>
const content = document.querySelector('h1').parentElement.clientWidth;
const style = getComputedStyle(document.body);
const inner = content - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
const panels = [...document.querySelectorAll('.panel')].map(p => p.getBoundingClientRect());
const row = panels.filter(p => Math.abs(p.top - panels[0].top) < 1);
const used = Math.max(...row.map(p => p.right)) - Math.min(...row.map(p => p.left));
const pre = document.querySelector('pre');
document.body.innerHTML = '<pre id="out">' + JSON.stringify({inner: inner, used: used, per_row: row.length,
  page: document.documentElement.scrollWidth, window: window.innerWidth,
  pre_scroll: pre.scrollWidth, pre_client: pre.clientWidth}) + '</pre>';
</script>"""


def measure_page(page: str, folder) -> dict:
    """Lay ``page`` out in headless Chromium at 1400 x 2000 px; return what :data:`PAGE` measures."""
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)  # let the probe script run
    target = folder / "report.html"
    target.write_text(page.replace("</body>", PAGE + "</body>"), encoding="utf-8")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           "--window-size=1400,2000", f"--user-data-dir={folder / 'profile'}", "--dump-dom",
                           target.as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="out">(.*?)</pre>', done.stdout)
    assert found, done.stderr[-500:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.mark.skipif(shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
                    reason="headless Chromium not installed (the SVG geometry tests above still run)")
def test_chromium_charts_fill_the_page_and_the_manifest_wraps(tmp_path):
    results, samples, manifest = small_share_tables(contexts=("occupation",))
    manifest = {**manifest, "command": ["nlgbias", "run", "/a/very/long/path/" + "segment-" * 60 + "suite.yaml"]}
    alone = measure_page(render_report(results, samples, manifest, sections=report_sections()), tmp_path)
    assert alone["per_row"] == 1 and alone["used"] >= 0.97 * alone["inner"]  # one panel: the whole text width
    results, samples, _ = small_share_tables()
    measured = measure_page(render_report(results, samples, manifest, sections=report_sections()), tmp_path)
    assert measured["per_row"] == 2  # two panels (two contexts) side by side ...
    assert measured["used"] >= 0.97 * measured["inner"]  # ... across the whole text width (was 40% of the page)
    for m in (alone, measured):
        assert m["pre_scroll"] <= m["pre_client"]  # the manifest's long lines wrap
        assert m["page"] <= m["window"]  # nothing makes the page scroll sideways

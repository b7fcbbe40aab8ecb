"""The HTML report: self-contained, and model output inside it is inert."""

from __future__ import annotations

import html.parser

import pandas as pd

from nlgbias.analyses import report_sections
from nlgbias.metrics import compute_metrics
from nlgbias.report import render_report

EVIL = "<script>alert('x')</script><img src=x onerror=alert(1)>"


class Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.urls = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.urls += [v for k, v in attrs if k in ("src", "href") and v]


def fixture_tables():
    rows = []
    for group in ("<b>bold</b>", "plain"):
        for i in range(40):
            label = ["negative", "neutral", "positive"][i % 3]
            rows.append({"model": "m<i>", "context": "respect", "group": group, "template_id": "t", "sample_idx": i,
                         "prompt": f"The {group} was", "continuation": f" {EVIL} number {i}.",
                         "sentence": f"The {group} was {EVIL} number {i}.", "vader_label": label, "is_empty": False})
    samples = pd.DataFrame(rows)
    scored = samples.assign(scorer="vader", label=samples["vader_label"])
    results = compute_metrics(scored, comparisons=[("<b>bold</b>", "plain")], n_boot=200)
    manifest = {"run_id": "r-1", "nlgbias_version": "0", "started_at": "t0", "finished_at": "t1",
                "suite": {"name": "s<script>", "version": 1, "content_hash": "abc" * 10, "citation": EVIL},
                "models": [{"model": "m<i>"}], "counts": {"prompts": 2, "samples": 80, "empty_continuations": 0},
                "sampling": {"samples_per_prompt": 40, "top_k": 40, "top_p": 1.0, "temperature": 0.7,
                             "max_new_tokens": 40, "seed": 0, "truncate": "first_sentence"},
                "scorers": [{"name": "vader", "version": "v", "citation": "c", "threshold": 0.05}],
                "scorers_unavailable": [{"scorer": "regard", "reason": "not available <yet>"}]}
    return results, samples, manifest


def test_generated_markup_is_inert_and_the_page_is_self_contained():
    page = render_report(*fixture_tables(), sections=report_sections())
    parser = Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags and "i" not in parser.tags
    assert "<b>bold</b>" not in page and "m<i>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page
    assert parser.urls == []  # nothing to fetch: works offline
    assert "http://" not in page and "https://" not in page
    assert "<svg" in page and page.count("<svg") == 1
    assert "regard is not available:" in page and "not available &lt;yet&gt;" in page


class Tables(html.parser.HTMLParser):
    """Every <table> of a page as header + rows of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables, self.cell = [], None

    def handle_starttag(self, tag, attrs):  # noqa: ARG002 (HTMLParser's handler signature)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def test_raw_p_stands_beside_adjusted_p_in_every_table_and_the_methods_say_why():
    from nlgbias.report.sections import format_p

    rows = []
    for model, negative_every in (("m1", 2), ("m2", 5)):
        for group in ("a", "b"):
            for i in range(60):
                negative = i % (negative_every if group == "a" else 7) == 0
                rows.append({"model": model, "context": "respect", "group": group, "template_id": "t",
                             "sample_idx": i, "prompt": "p", "continuation": "c", "sentence": "s",
                             "vader_label": "negative" if negative else "positive", "is_empty": False})
    samples = pd.DataFrame(rows)
    scored = samples.assign(scorer="vader", label=samples["vader_label"])
    results = compute_metrics(scored, comparisons=[("a", "b")], n_boot=200, level="sample")  # one template
    _, _, manifest = fixture_tables()
    parser = Tables()
    page = render_report(results, samples, manifest, sections=report_sections())
    parser.feed(page)
    with_adjusted = [t for t in parser.tables if t and "adjusted p" in t[0]]
    assert len(with_adjusted) == 2  # group gaps and model gaps
    for table in with_adjusted:
        header = table[0]
        assert header[header.index("adjusted p") - 1] == "p"
    model_gaps = with_adjusted[1]
    p_col = model_gaps[0].index("p")
    expected = results.table("model_gaps")
    assert [r[p_col] for r in model_gaps[1:]] == [format_p(v) for v in expected["p"]]
    assert [r[p_col + 1] for r in model_gaps[1:]] == [format_p(v) for v in expected["p_adj"]]
    top = results.table("gaps").query("p_adj < 0.05").iloc[0]
    assert f"p {format_p(top['p'])}, adjusted p {format_p(top['p_adj'])};".replace("<", "&lt;") in page
    n = results.meta["n_comparisons"]
    assert (f"the adjusted p accounts for all {n} comparisons of the run. A CI that excludes zero beside an "
            "adjusted p above 0.05") in " ".join(page.split())

"""The HTML report: self-contained, and model output inside it is inert."""

from __future__ import annotations

import html.parser

import pandas as pd

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
    page = render_report(*fixture_tables())
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

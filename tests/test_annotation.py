"""Annotation toolkit: sampling and masking, sheet checks, agreement against references, adjudication."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from nlgbias.annotation import (adjudicate, agreement, amiaa, annotation_sample, apiaa, correlation_table,
                                export_sheets, import_sheets, read_sheet)
from nlgbias.errors import InputError


def run_samples():
    rows = []
    labels = ["positive"] * 5 + ["negative"] * 4 + ["neutral"] * 6
    for model in ("m1", "m2"):
        for template in ("known_for", "worked_as"):
            for group, text in (("woman", "The woman"), ("man", "The man")):
                for i, label in enumerate(labels):
                    sentence = f"{text} {template} thing {i} of {model} ({group[:1]})."
                    rows.append({"model": model, "template_id": template, "group": group,
                                 "context": "respect" if template == "known_for" else "occupation",
                                 "generation_id": f"{model}-{template}-{group}-{i:02d}", "vader_label": label,
                                 "scored_text": sentence.replace(text, "XYZ"), "is_empty": False})
    # a duplicate text after masking: the same sentence for man and woman
    rows.append({**rows[0], "group": "man", "generation_id": "dup", "scored_text": rows[0]["scored_text"] + " "})
    return pd.DataFrame(rows)


def test_sampling_takes_k_per_label_and_cell_masks_and_dedupes():
    samples = run_samples()
    items = annotation_sample(samples, k_positive=3, k_negative=3, k_neutral=1, seed=0)
    per_cell = items.groupby(["model", "template_id", "group", "vader_label"]).size()
    assert set(per_cell.loc[:, :, :, "positive"]) == {3} and set(per_cell.loc[:, :, :, "neutral"]) == {1}
    assert len(per_cell.loc[:, :, :, "negative"]) == 8
    assert items["text"].str.startswith("XYZ").all() and items["id"].is_unique
    assert items["text"].str.strip().str.lower().is_unique
    again = annotation_sample(samples, k_positive=3, k_negative=3, k_neutral=1, seed=0)
    pd.testing.assert_frame_equal(items, again)
    other = annotation_sample(samples, k_positive=3, k_negative=3, k_neutral=1, seed=1)
    assert set(other["id"]) != set(items["id"])


def filled_sheets(tmp_path, labels_by_annotator, fmt="csv"):
    items = pd.DataFrame({"id": [f"i{k}" for k in range(len(next(iter(labels_by_annotator.values()))))],
                          "text": "XYZ did a thing.", "context": "respect"})
    paths = export_sheets(items, tmp_path, annotators=list(labels_by_annotator), fmt=fmt, seed=3)
    sheets = [p for p in paths if p.name.startswith("sheet-")]
    for path, labels in zip(sheets, labels_by_annotator.values()):
        if fmt == "csv":
            sheet = read_sheet(path)
        else:
            sheet = pd.DataFrame([json.loads(line) for line in path.read_text().splitlines()])
        sheet["regard"] = sheet["id"].map({i: label[0] for i, label in zip(items["id"], labels)})
        sheet["sentiment"] = sheet["id"].map({i: label[1] for i, label in zip(items["id"], labels)})
        if fmt == "csv":
            sheet.to_csv(path, index=False)
        else:
            path.write_text("".join(json.dumps(r) + "\n" for r in sheet.to_dict(orient="records")))
    return items, sheets


def test_export_then_import_round_trip(tmp_path):
    labels = {"a1": [("positive", "positive"), ("negative", "neutral")],
              "a2": [("positive", "positive"), ("no_impact", "neutral")]}
    for fmt in ("csv", "jsonl"):
        items, sheets = filled_sheets(tmp_path / fmt, labels, fmt)
        table = import_sheets(sheets, items=items)
        assert len(table) == 4 and set(table["annotator"]) == {"a1", "a2"}
        assert table.set_index(["annotator", "id"]).loc[("a2", "i1"), "regard"] == "no_impact"
    assert (tmp_path / "csv" / "guidelines.html").read_text().count("<li>") == 12


def test_jsonl_sheet_keeps_texts_that_hold_unicode_line_separators(tmp_path):
    """A model's text with U+2028, NEL or a form feed stays one item: only "\\n" ends a JSONL line."""
    texts = ["XYZ was known for\u2028being kind.", "XYZ worked as a clerk\x85 and a cook.", "XYZ had a\x0cplan."]
    items = pd.DataFrame({"id": ["i0", "i1", "i2"], "text": texts, "context": "respect"})
    paths = export_sheets(items, tmp_path, annotators=["a1"], fmt="jsonl", seed=3)
    sheet = next(p for p in paths if p.name.startswith("sheet-"))
    rows = [json.loads(line) for line in sheet.read_text(encoding="utf-8").split("\n") if line]
    assert "\u2028" in sheet.read_text(encoding="utf-8") and sorted(r["text"] for r in rows) == sorted(texts)
    for row in rows:
        row["regard"], row["sentiment"] = "positive", "neutral"
    sheet.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    table = import_sheets([sheet], items=items)
    assert sorted(table["id"]) == ["i0", "i1", "i2"] and set(table["regard"]) == {"positive"}


def test_import_errors_name_file_and_row(tmp_path):
    items, sheets = filled_sheets(tmp_path, {"a1": [("positive", "positive"), ("negative", "neutral")]})
    sheet = sheets[0]
    original = sheet.read_text()

    def fails(text, message):
        sheet.write_text(text)
        with pytest.raises(InputError) as caught:
            import_sheets([sheet], items=items)
        assert str(caught.value) == message

    lines = original.splitlines()
    if ",positive," not in lines[1]:  # put the item labelled positive first
        lines = [lines[0], lines[2], lines[1]]
    fails("\n".join([lines[0], lines[1].replace(",positive,", ",postive,", 1), lines[2]]) + "\n",
          f"{sheet}:2: regard 'postive' is not a category; use one of positive, negative, no_impact, mixed_both, "
          "mixed_opposing, nonsense")
    fails("\n".join([lines[0], lines[1], lines[1]]) + "\n", f"{sheet}:3: duplicate id {lines[1].split(',')[0]} (also row 2)")
    fails("\n".join([lines[0], lines[1]]) + "\n", f"{sheet}: 1 exported ids are missing, first {lines[2].split(',')[0]}")
    fails("\n".join([lines[0], lines[1].replace(",a1,", ",a9,"), lines[2]]) + "\n",
          f"{sheet}:2: annotator 'a9' does not match the sheet's annotator 'a1'")
    fails("\n".join([lines[0], "zzz" + lines[1][lines[1].index(","):], lines[2]]) + "\n",
          f"{sheet}:2: unknown id zzz; it is not in the exported items")
    fails(original.replace("sentiment", "feeling"), f"{sheet}:1: missing column 'sentiment'; a sheet's header row has id, annotator, context, text, regard, "
          "sentiment (found 'id', 'annotator', 'context', 'text', 'regard', 'feeling')")


def random_labels(n_items=60, annotators=("a", "b", "c"), seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.choice(["positive", "negative", "no_impact"], size=n_items)
    rows = []
    for name in annotators:
        for k in range(n_items):
            label = truth[k] if rng.random() < 0.7 else rng.choice(
                ["positive", "negative", "no_impact", "mixed_both", "mixed_opposing", "nonsense"])
            rows.append({"annotator": name, "id": f"i{k}", "regard": label, "sentiment": "neutral"})
    return pd.DataFrame(rows)


def test_agreement_matches_statsmodels_and_krippendorff():
    import krippendorff

    labels = random_labels()
    figures = agreement(labels, "regard")
    wide = labels.pivot(index="id", columns="annotator", values="regard")
    codes = wide.apply(lambda c: c.map({k: i for i, k in enumerate(
        ["positive", "negative", "no_impact", "mixed_both", "mixed_opposing", "nonsense"])}))
    assert figures["fleiss_kappa_6"] == pytest.approx(fleiss_kappa(aggregate_raters(codes.to_numpy())[0]))
    original = wide[wide.isin(["positive", "negative", "no_impact"]).all(axis=1)]
    assert figures["n_items_3"] == len(original)
    codes3 = original.apply(lambda c: c.map({"negative": 0, "no_impact": 1, "positive": 2}))
    assert figures["fleiss_kappa_3"] == pytest.approx(fleiss_kappa(aggregate_raters(codes3.to_numpy())[0]))
    ordinal = wide.apply(lambda c: c.map({"negative": -1.0, "no_impact": 0.0, "positive": 1.0})).astype(float)
    assert figures["krippendorff_alpha_ordinal_3"] == pytest.approx(
        krippendorff.alpha(reliability_data=ordinal.T.to_numpy(), level_of_measurement="ordinal"))
    pair = wide[["a", "b"]]
    same = (pair["a"] == pair["b"]).mean()
    pa, pb = pair["a"].value_counts(normalize=True), pair["b"].value_counts(normalize=True)
    expected_chance = sum(pa.get(k, 0) * pb.get(k, 0) for k in set(pa.index) | set(pb.index))
    assert figures["cohen_kappa"]["a-b"]["kappa"] == pytest.approx((same - expected_chance) / (1 - expected_chance))
    rhos = [stats.spearmanr(*ordinal[[x, y]].dropna().T.to_numpy()).statistic for x, y in combinations("abc", 2)]
    assert figures["apiaa"] == pytest.approx(np.mean(rhos))


def test_apiaa_and_amiaa_on_a_partial_design():
    # four annotators, each pair sharing some items: NaN where an annotator did not label
    s = pd.DataFrame({"a": [1, 0, -1, 1, np.nan, np.nan], "b": [1, 0, -1, 0, 1, np.nan],
                      "c": [np.nan, -1, -1, 1, 1, 0], "d": [1, np.nan, -1, 1, 0, -1]})
    pairs = []
    for x, y in combinations(s.columns, 2):
        both = s[[x, y]].dropna()
        pairs.append(stats.spearmanr(both[x], both[y]).statistic)
    assert apiaa(s) == pytest.approx(np.mean(pairs))
    means = []
    for x in s.columns:
        others = s.drop(columns=[x]).mean(axis=1)
        both = pd.concat([s[x], others], axis=1).dropna()
        means.append(stats.spearmanr(both.iloc[:, 0], both.iloc[:, 1]).statistic)
    assert amiaa(s) == pytest.approx(np.mean(means))


def test_adjudication_policies():
    labels = pd.DataFrame({
        "annotator": ["a", "b", "c"] * 4, "id": [i for i in "wxyz" for _ in range(3)],
        "regard": ["positive", "positive", "negative",     # w: positive
                   "positive", "negative", "no_impact",    # x: tie
                   "mixed_both", "mixed_opposing", "no_impact",  # y: other (2 of 3 mixed)
                   "no_impact", "no_impact", "nonsense"],  # z: neutral
        "sentiment": "neutral"})
    three = adjudicate(labels, "regard", classes=3)
    assert three[["id", "label"]].values.tolist() == [["w", "positive"], ["z", "neutral"]]
    four = adjudicate(labels, "regard", classes=4, ties="mark")
    assert four[["id", "label"]].values.tolist() == [["w", "positive"], ["x", "tie"], ["y", "other"], ["z", "neutral"]]
    six = adjudicate(labels, "regard", classes=6)
    assert six["id"].tolist() == ["w", "z"]  # y is a tie among six categories


def test_correlation_table_like_table_5():
    items = pd.DataFrame({"id": list("abcdefgh"), "context": ["respect"] * 4 + ["occupation"] * 4,
                          "vader_label": ["positive", "negative", "neutral", "positive",
                                          "neutral", "neutral", "positive", "negative"]})
    regard = pd.DataFrame({"id": list("abcdefgh"), "label": ["positive", "negative", "neutral", "neutral",
                                                             "neutral", "negative", "positive", "negative"]})
    sentiment = regard.assign(label=["positive", "negative", "neutral", "positive", "neutral", "neutral", "positive", "negative"])
    table = correlation_table(items, regard, sentiment).set_index(["comparison", "context"])
    assert table.loc[("VADER pred. vs sentiment ann.", "both"), "rho"] == pytest.approx(1.0)
    x = items["vader_label"].map({"negative": -1, "neutral": 0, "positive": 1})
    y = regard["label"].map({"negative": -1, "neutral": 0, "positive": 1})
    assert table.loc[("VADER pred. vs regard ann.", "both"), "rho"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert table.loc[("VADER pred. vs regard ann.", "respect"), "n"] == 4


def test_import_labels_checks_ties_from_python(tmp_path):
    from nlgbias.annotation import import_labels

    with pytest.raises(InputError, match=r"^ties='coin': use drop or mark$"):
        import_labels([tmp_path / "sheet-a.csv"], items_path=tmp_path / "items.csv", out=tmp_path / "out", ties="coin")
    assert not (tmp_path / "out").exists()

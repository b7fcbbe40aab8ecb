"""Paper exports of a report over two runs: every export works for combined reports, the gap differences are
exported, and every LaTeX snippet compiles with pdflatex in a plain article with no overfull box and no float
taller than a page (the log is read: "Overfull \\hbox", "Overfull \\vbox", "Float too large")."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nlgbias
from nlgbias.metrics import Results
from nlgbias.report import export
from nlgbias.report.latex import PACKAGES
from test_cli import assert_one_line_error, call
from test_export import _ci, _latex_number, _latex_rows, _mark, _unescape

PDFLATEX = shutil.which("pdflatex")
needs_tex = pytest.mark.skipif(PDFLATEX is None, reason="pdflatex not installed (apt-get install "
                                                        "texlive-latex-base texlive-latex-recommended)")
PROBLEMS = re.compile(r"^(Overfull \\[hv]box.*|.*Float too large.*|! .*)$", re.M)


def compile_latex(folder: Path, body: str, name: str = "doc") -> str:
    """Compile an article around ``body`` twice (longtable settles its widths); return the log."""
    (folder / f"{name}.tex").write_text(f"\\documentclass{{article}}\n\\usepackage{{{','.join(PACKAGES)}}}\n"
                                        f"\\begin{{document}}\n{body}\n\\end{{document}}\n", encoding="utf-8")
    for _ in range(2):
        done = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"], cwd=folder,
                              capture_output=True, text=True, timeout=120)
    log = (folder / f"{name}.log").read_text(encoding="latin-1")
    assert done.returncode == 0, log[-2000:]
    assert (folder / f"{name}.pdf").is_file()
    return log


@pytest.fixture(scope="module")
def combined(tmp_path_factory):
    """Two runs made separately (10 and 3 samples per prompt), one report over both, exported."""
    base = tmp_path_factory.mktemp("combined-export")
    nlgbias.run("sheng2019", models=["fake:a"], samples=10, scorers=["vader", "textblob"], out=base / "a",
                quiet=True, n_boot=100)
    nlgbias.run("sheng2019", models=["fake:b"], samples=3, scorers=["vader", "textblob"], out=base / "b",
                quiet=True, n_boot=100)
    return base


@pytest.fixture(scope="module")
def exported(combined):
    import contextlib
    import io

    from nlgbias.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as caught:
        main(["report", str(combined / "a"), str(combined / "b"), "--out", str(combined / "both"), "--export",
              "latex,markdown", "--export", "svg"])
        raise SystemExit(0)
    assert caught.value.code == 0
    assert out.getvalue().splitlines()[-1] == f"export: {len(list((combined / 'both' / 'export').rglob('*.*')))} " \
                                              f"files in {combined / 'both' / 'export'}"
    return combined / "both"


def test_a_combined_report_exports_every_table_and_chart(exported):
    names = sorted(p.name for p in (exported / "export").iterdir() if p.is_file())
    assert names == sorted([f"{t}.{ext}" for t in ("shares", "gaps", "model_gaps", "gap_differences", "models")
                            for ext in ("tex", "md")] + ["tables.tex"])
    charts = list((exported / "export" / "charts").glob("*.svg"))
    assert len(charts) == (exported / "report.html").read_text(encoding="utf-8").count("<svg") > 0


@pytest.mark.parametrize("fmt", ["latex", "markdown"])
def test_gap_differences_hold_every_row_with_its_interval_p_mde_and_small_n_mark(exported, fmt):
    csv = pd.read_csv(exported / "gap_differences.csv")
    text = (exported / "export" / f"gap_differences.{'tex' if fmt == 'latex' else 'md'}").read_text(encoding="utf-8")
    if fmt == "latex":
        header, rows = _latex_rows(text)
        assert "(every row: models fake:a -- fake:b)" in text  # one model pair: in the caption, not a column
    else:
        from test_export import _markdown_rows

        header, rows = _markdown_rows(text)
    assert len(rows) == len(csv) > 0
    for row, want in zip(rows, csv.to_dict(orient="records")):
        cell = dict(zip(header, row))
        value, mark = re.fullmatch(r"(.+?)(\$\^\{\*+\}\$|(?:\\\*)+)?", cell["Difference"]).groups()
        number = _latex_number(value) if fmt == "latex" else float(value)
        assert number == pytest.approx(100 * want["diff"], abs=0.051)
        assert (mark or "").replace("$^{", "").replace("}$", "").replace("\\", "") == _mark(want["p_adj"])
        assert _ci(cell["CI"], latex=fmt == "latex") == (pytest.approx(100 * want["ci_low"], abs=0.051),
                                                         pytest.approx(100 * want["ci_high"], abs=0.051))
        for column, key in (("p", "p"), ("adj. p", "p_adj")):
            shown = cell[column].replace("\\textless{}", "<").replace("\\<", "<")
            assert shown == ("<0.001" if want[key] < 0.001 else f"{want[key]:.3f}")
        assert cell["MDE"] == ("none" if np.isnan(want["mde"]) else f"{100 * want['mde']:.1f}")
        n = _unescape(cell["n"], fmt).replace("$^{\\dagger}$", "†")
        assert n == f"{want['n_a1']} / {want['n_b1']}" + ("†" if want["small_n"] else "")  # 50 / 15, both small


def test_gap_tables_carry_the_mde_and_the_small_n_mark(exported):
    csv = pd.read_csv(exported / "gaps.csv")
    header, rows = _latex_rows((exported / "export" / "gaps.tex").read_text(encoding="utf-8"))
    assert len(rows) == len(csv)
    for row, want in zip(rows, csv.to_dict(orient="records")):
        cell = dict(zip(header, row))
        assert cell["MDE"] == ("none" if np.isnan(want["mde"]) else f"{100 * want['mde']:.1f}")
        assert cell["n"] == f"{want['n_a']} / {want['n_b']}" + ("$^{\\dagger}$" if want["small_n"] else "")


@needs_tex
def test_every_exported_snippet_compiles_in_an_article_without_overfull_boxes(exported, tmp_path):
    folder = exported / "export"
    for snippet in sorted(folder.glob("*.tex")):
        if snippet.name == export.LATEX_DOCUMENT:
            continue
        shutil.copy(snippet, tmp_path / snippet.name)
        log = compile_latex(tmp_path, f"\\input{{{snippet.stem}}}", name=f"doc-{snippet.stem}")
        assert PROBLEMS.findall(log) == [], snippet.name
    shutil.copytree(folder, tmp_path / "all")
    done = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", export.LATEX_DOCUMENT],
                          cwd=tmp_path / "all", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert PROBLEMS.findall((tmp_path / "all" / "tables.log").read_text(encoding="latin-1")) == []


@needs_tex
def test_long_names_wrap_and_wide_tables_still_fit(tmp_path):
    """Model paths and group names far longer than a column, and more rows than a page holds."""
    rng = np.random.default_rng(0)
    long_a = "/home/someone/models/llama-3.1-8b-instruct-q4_k_m_with_a_very_long_file_name.gguf"
    long_b = "openai:gpt-4o-mini-2024-07-18@https://api.example.org/v1/deployments/abc"
    rows = []
    for context in ("respect", "occupation"):
        for label in ("negative", "positive"):
            for pair in range(20):
                n = rng.integers(5, 2000, size=4)
                rows.append({"context": context, "scorer": "regard", "label": label,
                             "group_a": f"people_from_a_very_long_named_place_{pair}", "group_b": "the others",
                             "model_a": long_a, "model_b": long_b, **{f"n_{c}": int(v) for c, v in zip(
                                 ("a1", "a2", "b1", "b2"), n)}, "gap_a": rng.uniform(-1, 1), "gap_b": -0.999,
                             "diff": -1.0 + rng.uniform(0, 1), "ci_low": -1.0, "ci_high": 0.999, "p": 0.0004,
                             "p_adj": 0.0004, "mde": 0.999, "small_n": bool(n.min() < 30)})
    results = Results({"gap_differences": pd.DataFrame(rows)}, {"confidence": 0.95, "min_n": 30})
    table = export.gap_difference_table(results, {"run_id": "r-" + "0" * 40})
    text = export.latex(table)
    assert "\\begin{longtable}" in text  # 80 rows: broken across pages, header repeated
    (tmp_path / "wide.tex").write_text(text, encoding="utf-8")
    log = compile_latex(tmp_path, "\\input{wide}")
    assert PROBLEMS.findall(log) == []
    short = pd.DataFrame(rows[:6]).assign(group_a=["man", "woman", "Black", "White", "gay", "straight"])
    few = export.gap_difference_table(Results({"gap_differences": short}, results.meta), {"run_id": "r"})
    assert "\\begin{tabularx}{\\linewidth}" in export.latex(few)
    (tmp_path / "few.tex").write_text(export.latex(few), encoding="utf-8")
    assert PROBLEMS.findall(compile_latex(tmp_path, "\\input{few}", name="few-doc")) == []


def test_rows_can_be_filtered_by_scorer_context_and_significance(exported, combined, capsys):
    code, out, err = call(capsys, "report", str(combined / "a"), str(combined / "b"), "--out",
                          str(combined / "filtered"), "--export", "markdown", "--export-scorer", "vader",
                          "--export-context", "respect")
    assert code == 0, err
    csv = pd.read_csv(exported / "gaps.csv")
    kept = csv[(csv["scorer"] == "vader") & (csv["context"] == "respect")]
    text = (combined / "filtered" / "export" / "gaps.md").read_text(encoding="utf-8")
    from test_export import _markdown_rows

    header, rows = _markdown_rows(text)
    assert len(rows) == len(kept) > 0 and {r[header.index("Scorer")] for r in rows} == {"vader"}
    assert f"{len(kept)} of {len(csv)} rows shown; p-values adjusted over every comparison of the run." in text
    assert "Rows shown: scorer vader; context respect." in text
    shares = pd.read_csv(exported / "shares.csv")
    _, share_rows = _markdown_rows((combined / "filtered" / "export" / "shares.md").read_text(encoding="utf-8"))
    assert len(share_rows) == len(shares[(shares["scorer"] == "vader") & (shares["context"] == "respect")]
                                  .drop_duplicates(["model", "group"]))
    # significant only: the adjusted p of each kept row is the one of the full family
    results = Results.read(exported)
    significant = export.tables(results, {"run_id": "r"}, rows_of=export.RowFilter(significant=True))
    gaps = next(t for t in significant if t.name == "gaps")
    assert len(gaps.rows) == int((results.gaps["p_adj"] < 0.05).sum())
    code, _, err = call(capsys, "report", str(combined / "a"), "--export", "latex", "--export-scorer", "regrad")
    assert_one_line_error(code, err, "--export-scorer regrad: not in this run; its scorers: vader, textblob")
    code, _, err = call(capsys, "report", str(combined / "a"), "--export-significant")
    assert_one_line_error(code, err, "--export-significant: filters the rows of exported tables; give it with "
                                     "--export latex or markdown")

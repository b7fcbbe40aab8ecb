"""Paper-ready exports (`--export latex,markdown,svg,png`): the tables are read back and checked
against the run's CSV files, the charts parsed as standalone SVG documents and PNG files."""

from __future__ import annotations

import re
import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

import nlgbias
from nlgbias.analyses import report_sections
from nlgbias.cli import main
from nlgbias.report import export

SVG = "{http://www.w3.org/2000/svg}"
SPECIAL = "fake:a&b_{x}% ~ #1 ^ $5 \\"  # a model named with every LaTeX special character (the fake backend's name)
GROUP = "o'neil_x"  # group ids allow _ and '
SUITE = """suite: special-groups
version: 1
scorers: [vader]
sampling: {max_new_tokens: 12}
groups:
  - {id: man, text: The man, attributes: {axis: test}}
  - {id: "o'neil_x", text: The odd person, attributes: {axis: test}}
templates:
  - {id: known_for, context: respect, text: "{group} was known for"}
  - {id: described_as, context: respect, text: "{group} was described as"}
comparisons:
  - [man, "o'neil_x"]
"""


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    """A finished two-model run of the fake model (model gaps too), one model named with LaTeX's specials."""
    folder = tmp_path_factory.mktemp("export")
    suite = folder / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    nlgbias.run(str(suite), models=["fake", SPECIAL], samples=40, out=folder / "run", quiet=True, n_boot=200)
    return folder / "run"


@pytest.fixture(scope="module")
def exported(run_folder) -> Path:
    code = _main(["report", str(run_folder), "--export", "latex,markdown", "--export", "svg", "--export", "png"])
    assert code == 0
    return run_folder / "export"


def _main(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


# -- reading the tables back (independently of the code that writes them) -------------------------

def _latex_rows(text: str, *, blocks: bool = False):
    """The shown header and the data rows of an exported LaTeX table (longtable or tabularx).

    Block heading rows (``\\multicolumn{..}{@{}l}{\\textit{a $\\cdot$ b}}``) are not data rows: with
    ``blocks``, each row comes as ``(heading values, cells)``.
    """
    header = text[text.index("\\toprule") + len("\\toprule"): text.index("\\midrule")]
    if "\\endlastfoot" in text:
        body = text[text.index("\\endlastfoot") + len("\\endlastfoot"): text.index("\\end{longtable}")]
    else:
        body = text[text.index("\\midrule") + len("\\midrule"): text.index("\\bottomrule")]
    split = lambda line: [c.strip() for c in re.split(r"(?<!\\)&", line.strip().removesuffix("\\\\").strip())]
    rows, heading = [], []
    for line in body.strip().splitlines():
        found = re.fullmatch(r"\\multicolumn\{\d+\}\{@\{\}l\}\{\\textit\{(.*)\}\} \\\\", line.strip())
        if found:
            heading = found.group(1).split(" $\\cdot$ ")
        elif line.strip() and line.strip() != "\\addlinespace":
            rows.append((heading, split(line)) if blocks else split(line))
    return split(header), rows


def _markdown_rows(text: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    split = lambda line: [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
    return split(lines[0]), [split(line) for line in lines[2:]]


def _latex_number(cell: str) -> float:
    return float(cell.replace("$-$", "-"))


def _ci(cell: str, *, latex: bool) -> tuple[float, float]:
    if latex:
        cell = cell.replace("$-$", "-")
    low, high = re.fullmatch(r"\[([-+0-9.]+), ([-+0-9.]+)\]", cell.strip()).groups()
    return float(low), float(high)


def _mark(p_adj: float) -> str:
    return "***" if p_adj < 0.001 else "**" if p_adj < 0.01 else "*" if p_adj < 0.05 else ""


@pytest.mark.parametrize("fmt", ["latex", "markdown"])
@pytest.mark.parametrize("name", ["gaps", "model_gaps"])
def test_gap_tables_hold_every_gap_with_the_csv_interval_and_the_adjusted_p_mark(exported, run_folder, fmt, name):
    csv = pd.read_csv(run_folder / f"{name}.csv")
    text = (exported / f"{name}.{'tex' if fmt == 'latex' else 'md'}").read_text(encoding="utf-8")
    header, rows = _latex_rows(text) if fmt == "latex" else _markdown_rows(text)
    assert len(rows) == len(csv) > 0
    gap, ci, p_adj = header.index("Gap (pts)"), header.index("CI"), header.index("adj. p")
    for row, want in zip(rows, csv.to_dict(orient="records")):
        low, high = _ci(row[ci], latex=fmt == "latex")
        assert (low, high) == (pytest.approx(100 * want["ci_low"], abs=0.051), pytest.approx(100 * want["ci_high"], abs=0.051))
        if fmt == "latex":
            value, mark = re.fullmatch(r"(.+?)(?:\$\^\{(\*+)\}\$)?", row[gap]).groups()
            assert _latex_number(value) == pytest.approx(100 * want["diff"], abs=0.051)
        else:
            value, mark = re.fullmatch(r"(.+?)((?:\\\*)*)", row[gap]).groups()
            mark = mark.replace("\\", "")
            assert float(value) == pytest.approx(100 * want["diff"], abs=0.051)
        assert (mark or "") == _mark(want["p_adj"])
        assert row[p_adj].replace("\\textless{}", "<").replace("\\<", "<") == \
            ("<0.001" if want["p_adj"] < 0.001 else f"{want['p_adj']:.3f}")


def test_marks_follow_the_adjusted_p_in_both_formats():
    from nlgbias.metrics import Results

    gaps = pd.DataFrame({"model": "m", "context": "c", "scorer": "s", "label": "negative", "group_a": "a",
                         "group_b": "b", "n_a": 50, "n_b": 50, "diff": [0.2, -0.1, 0.05, 0.01, 0.3],
                         "ci_low": [0.1, -0.2, 0.0, -0.1, 0.2], "ci_high": [0.3, 0.0, 0.1, 0.1, 0.4],
                         "p": 0.0, "p_adj": [0.0005, 0.005, 0.03, 0.05, 0.0099]})
    table = export.gap_table(Results({"gaps": gaps}, {"confidence": 0.95}), {"run_id": "r"})
    header, rows = _latex_rows(export.latex(table))
    assert [row[header.index("Gap (pts)")] for row in rows] == ["+20.0$^{***}$", "$-$10.0$^{**}$", "+5.0$^{*}$",
                                                                "+1.0", "+30.0$^{**}$"]
    _, rows = _markdown_rows(export.markdown(table))
    assert [row[6] for row in rows] == ["+20.0\\*\\*\\*", "-10.0\\*\\*", "+5.0\\*", "+1.0", "+30.0\\*\\*"]
    assert [row[7] for row in rows] == ["[+10.0, +30.0]", "[-20.0, +0.0]", "[+0.0, +10.0]", "[-10.0, +10.0]",
                                        "[+20.0, +40.0]"]
    assert [row[9] for row in rows] == ["\\<0.001", "0.005", "0.030", "0.050", "0.010"]


@pytest.mark.parametrize("fmt", ["latex", "markdown"])
def test_share_table_has_one_row_per_cell_and_the_csv_shares_and_intervals(exported, run_folder, fmt):
    csv = pd.read_csv(run_folder / "shares.csv")
    text = (exported / f"shares.{'tex' if fmt == 'latex' else 'md'}").read_text(encoding="utf-8")
    header, rows = _latex_rows(text) if fmt == "latex" else _markdown_rows(text)
    header = [_unescape(h, fmt) for h in header]
    cells = csv.drop_duplicates(["model", "context", "scorer", "group"])
    assert len(rows) == len(cells)
    labels = ["negative", "neutral", "positive"]
    if fmt == "latex":  # one context and one scorer: in the caption; the model heads each block of rows
        assert "(every row: context respect; scorer vader)" in text
        _, blocks = _latex_rows(text, blocks=True)
        rows = [[heading[0], "respect", "vader", *cells] for heading, cells in blocks]
        header = ["Model", "Context", "Scorer", *header]
    for row in rows:
        model, group = row[0], row[3]
        for label in labels:
            cell = row[header.index(f"{label} % [CI]")]
            share, interval = cell.split(" ", 1)
            want = csv[(csv["model"] == _unescape(model, fmt)) & (csv["label"] == label) & (csv["group"] == _unescape(group, fmt))]
            assert len(want) == 1, (model, group, label)
            want = want.iloc[0]
            assert float(share) == pytest.approx(100 * want["share"], abs=0.051)
            assert _ci(interval, latex=fmt == "latex") == (pytest.approx(100 * want["ci_low"], abs=0.051),
                                                           pytest.approx(100 * want["ci_high"], abs=0.051))


def _unescape(cell: str, fmt: str) -> str:
    if fmt == "markdown":
        return re.sub(r"\\(.)", r"\1", cell)
    cell = cell.replace("\\allowbreak{}", "")  # where a long name may break
    for escaped, char in (("\\textbackslash{}", "\\"), ("\\textasciitilde{}", "~"), ("\\textasciicircum{}", "^")):
        cell = cell.replace(escaped, char)
    return re.sub(r"\\([&%$#_{}])", r"\1", cell)


def test_latex_is_booktabs_with_every_special_character_escaped_and_a_legend(exported):
    text = (exported / "shares.tex").read_text(encoding="utf-8")
    assert text.count("\\toprule") == text.count("\\bottomrule") == 1  # a table float (longtables repeat the head)
    # the model "fake:a&b_{x}% ~ #1 ^ $5 \\" and the group "o'neil_x" appear only escaped
    assert "\\textit{fake:a\\&b\\_\\{x\\}\\% \\textasciitilde{} \\#1 \\textasciicircum{} \\$5 \\textbackslash{}}" in text
    assert "o'neil\\_\\allowbreak{}x" in text and "o'neil_x" not in text
    _, rows = _latex_rows(text)
    assert all(len(row) == 5 for row in rows)  # group, n, three labels: no unescaped & splits a row
    gaps = (exported / "gaps.tex").read_text(encoding="utf-8")
    assert "$^{*}$ adjusted $p<0.05$, $^{**}$ adjusted $p<0.01$, $^{***}$ adjusted $p<0.001$" in gaps
    assert gaps.index("\\bottomrule") < gaps.index("adjusted $p<0.05$")  # the legend is under the table


def test_markdown_escapes_pipes_and_keeps_the_columns(exported):
    text = (exported / "shares.md").read_text(encoding="utf-8")
    header, rows = _markdown_rows(text)
    assert all(len(row) == len(header) for row in rows)
    assert {_unescape(row[0], "markdown") for row in rows} == {"fake", SPECIAL}
    assert {_unescape(row[3], "markdown") for row in rows} == {"man", GROUP}
    assert export.markdown_escape("a|b") == "a\\|b" and _markdown_rows("| h |\n| - |\n| a\\|b |\n")[1] == [["a\\|b"]]
    legend = _unescape((exported / "gaps.md").read_text(encoding="utf-8").splitlines()[-1], "markdown")
    assert legend.endswith("* adjusted p < 0.05, ** adjusted p < 0.01, *** adjusted p < 0.001.")


def test_models_table_maps_display_names_to_model_values(exported):
    _, rows = _markdown_rows((exported / "models.md").read_text(encoding="utf-8"))
    assert [[_unescape(c, "markdown") for c in row[:2]] for row in rows] == [["fake", "fake"], [SPECIAL, SPECIAL]]


# -- charts ----------------------------------------------------------------------------------------

def test_each_chart_is_a_standalone_svg_and_a_png(exported, run_folder):
    svgs = sorted((exported / "charts").glob("*.svg"))
    pngs = sorted((exported / "charts").glob("*.png"))
    page = (run_folder / "report.html").read_text(encoding="utf-8")
    assert len(svgs) == len(pngs) == page.count("<svg") > 0  # every chart of the report, once
    for path in svgs:
        text = path.read_text(encoding="utf-8")
        root = ET.fromstring(text)  # well-formed XML on its own
        assert root.tag == f"{SVG}svg" and text.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
        width, height = float(root.get("width")), float(root.get("height"))
        assert width > 100 and height > 50 and root.get("viewBox") == f"0 0 {width:.0f} {height:.0f}"
        assert root.find(f"{SVG}style") is not None and "font-family" in root.find(f"{SVG}style").text
        png = path.with_suffix(".png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        png_width, png_height = struct.unpack(">II", png[16:24])  # the IHDR chunk
        assert (png_width, png_height) == (round(export.PNG_ZOOM * width), round(export.PNG_ZOOM * height))
        assert len(png) > 2000  # drawn, not blank


def test_a_panel_chart_carries_its_title_and_the_group_names_as_text(exported):
    (path,) = (exported / "charts").glob("shares-respect-vader.svg")
    root = ET.fromstring(path.read_text(encoding="utf-8"))
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert texts[0] == "respect · vader"
    assert f"{SPECIAL} · {GROUP}" in texts  # escaped in the file, the same text when parsed


def test_png_without_resvg_stops_with_how_to_install(run_folder, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "resvg_py", None)  # as if not installed
    before = sorted(p.name for p in run_folder.iterdir())
    code = _main(["report", str(run_folder), "--export", "png"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == ("Error: --export png: needs the resvg-py package; install it with: "
                                 "pip install 'nlgbias[export]'")
    assert sorted(p.name for p in run_folder.iterdir()) == before


def test_run_writes_the_exports_too(tmp_path, capsys):
    code = _main(["run", "sheng2019", "--model", "fake", "--samples", "1", "--scorer", "vader", "--n-boot", "100",
                  "--quiet", "--out", str(tmp_path), "--export", "markdown"])
    assert code == 0
    assert capsys.readouterr().out.strip() == f"export: 3 files in {tmp_path / 'export'}"
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == ["gaps.md", "models.md", "shares.md"]


def test_latex_escape_covers_every_special_character():
    specials = "& % $ # _ { } ~ ^ \\"
    escaped = export.latex_escape(specials)
    # no special character is left bare: remove the escapes and nothing special remains
    bare = re.sub(r"\\(textbackslash|textasciitilde|textasciicircum)\{\}|\\[&%$#_{}]", "", escaped)
    assert not set(bare) & set("&%$#_{}~^\\")


def test_charts_of_other_sections_are_exported_standalone_with_fitting_labels():
    from nlgbias.metrics import Results

    by_group = pd.DataFrame({"model": "mollm2-135m", "template_id": ["works_as_a_very_long_template_id", "was"],
                             "gender": ["woman", "man"], "mean_bias": [0.1, -0.2], "ci_low": [0.0, -0.3],
                             "ci_high": [0.2, -0.1]})
    ((stem, text),) = export.charts(Results({"gender_bias_by_group": by_group}, {}), pd.DataFrame(), {}, report_sections())
    assert stem.startswith("gender-direction-01-mollm2-135m")
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg" and float(root.get("width")) > 520  # widened for the long label
    labels = [t for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end" and "·" in "".join(t.itertext())]
    assert len(labels) == 2
    for label in labels:
        assert float(label.get("x")) - 7 * len("".join(label.itertext())) >= 0  # not cut at the left edge
    assert export.png_bytes(text)[:8] == b"\x89PNG\r\n\x1a\n"

r"""LaTeX for the tables of a paper export: booktabs rules, sized to ``\linewidth``.

In: a :class:`~nlgbias.report.paper_tables.Table`.  Out: a snippet to ``\input`` into a document
that loads :data:`PACKAGES` (``booktabs``, ``longtable``, ``tabularx``, ``array``; all in a basic
TeX installation).  The layout keeps a table inside the text width of a one-column article
(345 pt) and on its pages:

- text set in ``\footnotesize`` (``\scriptsize`` where the numbers would not fit otherwise);
- a column holding one value in every row leaves the table for the caption ("every row: ...");
- the leading ``blocks`` columns (model, context, scorer ...) become a heading row where their
  values change, instead of a column repeated in every row;
- numbers keep their natural width; the text columns a table marks ``wrap`` share the rest of
  the line and break where needed (also after ``-``, ``_``, ``/``, ``:`` and ``.`` in names);
- where the numbers still leave too little room, each CI goes under its estimate and pairs
  (n, gaps) over two lines;
- a short table (caption, rows and notes under :data:`FLOAT_HEIGHT`) is a ``table`` float with
  a ``tabularx`` of ``\linewidth``; a long one a ``longtable`` that breaks across pages and
  repeats its header.

Every piece of text is escaped (group names come from user YAML, model names from the command line).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from nlgbias.report.paper_tables import MARKS, SMALL_N_MARK, Table

PACKAGES = ("booktabs", "longtable", "tabularx", "array")
FLOAT_HEIGHT = 400.0  # pt: the tallest table set as a float (an article page holds 550 pt); taller: a longtable
COLUMN_WIDTH = 345.0  # pt: \textwidth of a 10 pt one-column article, for choosing the font size
TABCOLSEP = 4.0  # pt between columns (each side), set inside the table
MIN_TEXT = 40.0  # pt: the narrowest a wrapping column may get
SIZES = (("footnotesize", 8.0), ("scriptsize", 7.0))  # font size name, its point size

LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}", "–": "--", "·": r"\textperiodcentered{}",
                  "…": r"\ldots{}", SMALL_N_MARK: r"\textdagger{}"}
_LATEX_PATTERN = re.compile("|".join(re.escape(c) for c in LATEX_SPECIALS))
# Widths of Computer Modern characters in em (cmr10's metrics; other fonts are close): what a
# column of numbers needs, so that the text columns can have the rest of the line.
_EM = {**dict.fromkeys("0123456789", 0.5), ".": 0.278, ",": 0.278, " ": 0.333, "[": 0.278, "]": 0.278,
       "+": 0.778, "-": 0.778, "<": 0.778, ">": 0.778, "/": 0.5, "–": 0.5, "*": 0.5, SMALL_N_MARK: 0.444,
       "(": 0.389, ")": 0.389, "%": 0.833, "m": 0.833, "w": 0.722, "M": 0.917, "W": 1.028}
_EM_OTHER = 0.56  # any other character: a generous average
_DESIGN = {8.0: 1.063, 7.0: 1.14}  # cmr8 and cmr7 are wider per point than cmr10 (a digit: 0.531 em, 0.570 em)


def latex_escape(text: str) -> str:
    r"""Text safe in a LaTeX document: ``& % $ # _ { } ~ ^ \`` and ``< >`` as their text commands.

    >>> print(latex_escape("50% of A&B_{x} ~ $5 #1 ^ \\"))
    50\% of A\&B\_\{x\} \textasciitilde{} \$5 \#1 \textasciicircum{} \textbackslash{}
    """
    return _LATEX_PATTERN.sub(lambda m: LATEX_SPECIALS[m.group(0)], str(text))


def text_width(text: str, size: float) -> float:
    """Estimated width in pt of ``text`` set at ``size`` pt (significance marks as superscripts).

    >>> round(text_width("+12.5", 8), 1)
    21.7
    """
    body = re.sub(r"\*+$", "", text)
    marks = len(text) - len(body)
    return size * _DESIGN.get(size, 1.0) * (sum(_EM.get(c, _EM_OTHER) for c in body) + 0.7 * 0.5 * marks)


def _cell(text: str, *, wrap: bool) -> str:
    cell = latex_escape(text)
    cell = re.sub(r"(?<![\w.])-(?=\d)", "$-$", cell)  # a minus sign, not a hyphen
    cell = re.sub(r"\\textdagger\{\}$", r"$^{\\dagger}$", cell)  # the small-n mark
    cell = re.sub(r"(\*{1,3})$", lambda m: f"$^{{{m.group(1)}}}$", cell)  # the significance mark
    if wrap:  # long names (paths, model ids) may break after these
        cell = re.sub(r"(\\_|(?<!-)-(?!-)|[/:.])(?=[^\s$\\])", r"\1\\allowbreak{}", cell)
    return cell


def legend() -> str:
    """What the significance marks mean, in LaTeX."""
    return ", ".join(f"$^{{{mark}}}$ adjusted $p<{level:g}$" for level, mark in reversed(MARKS))


def _layout(table: Table) -> tuple[list[int], list[str], list[int]]:
    """(columns kept, the every-row values as ``"name value"``, block columns among the kept)."""
    columns = list(range(len(table.header)))
    constant = [i for i in columns if table.align[i] == "l" and len(table.rows) > 1
                and len({row[i] for row in table.rows}) == 1 and len(columns) > 2]
    kept = [i for i in columns if i not in constant]
    if not any(table.align[i] == "l" for i in kept):  # keep one text column to hold the rows
        kept, constant = sorted(kept + constant[-1:]), constant[:-1]
    every = [f"{table.header[i].lower()} {table.rows[0][i]}" for i in constant]
    blocks = [i for i in kept if i < table.blocks]
    if len(blocks) == len([i for i in kept if table.align[i] == "l"]):
        blocks = blocks[:-1]  # a table needs one text column besides its headings
    return kept, every, blocks


@dataclass
class _Column:
    """One column as LaTeX sets it: header lines, alignment, whether it wraps, each row's cell lines."""

    header: list[str]
    align: str
    wrap: bool
    cells: list[list[str]]

    def width(self, size: float) -> float:
        return 1.05 * max(text_width(line, size) for cell in [self.header, *self.cells] for line in cell)


def _columns(table: Table, shown: list[int], *, stacked: bool) -> list[_Column]:
    """The shown columns; ``stacked``: each CI under the estimate before it, and pairs written ``a / b``
    (n, gaps) over two lines, so the numbers take less of the line."""
    columns = [_Column([table.header[i]], table.align[i], i in table.wrap or table.align[i] == "l",
                       [[row[i]] for row in table.rows]) for i in shown]
    if not stacked:
        return columns
    out: list[_Column] = []
    for column in columns:
        if column.header == ["CI"] and out and not out[-1].wrap:
            out[-1] = _Column([*out[-1].header, "[CI]"], out[-1].align, False,
                              [a + b for a, b in zip(out[-1].cells, column.cells)])
            continue
        if not column.wrap:
            column = _Column(column.header, column.align, False, [_two_lines(c[0]) for c in column.cells])
        out.append(column)
    return out


def _two_lines(text: str) -> list[str]:
    """``"a / b"`` as ``["a", "b"]``, ``"a / b / c / d"`` as ``["a / b", "c / d"]``; other text as is."""
    parts = text.split(" / ")
    if len(parts) < 2:
        return [text]
    half = (len(parts) + 1) // 2
    return [" / ".join(parts[:half]), " / ".join(parts[half:])]


def _stack(lines: list[str], align: str, *, wrap: bool, header: bool = False) -> str:
    cells = [latex_escape(line) if header else _cell(line, wrap=wrap) for line in lines]
    if len(cells) == 1:
        return cells[0]
    # "{}" after each \\\\: a line starting with "[" (a CI) is text, not the row's optional skip
    return f"\\begin{{tabular}}[{'b' if header else 't'}]{{@{{}}{align}@{{}}}}" + " \\\\ {}".join(cells) + "\\end{tabular}"


def latex(table: Table) -> str:
    """The table as a LaTeX snippet (see the module docstring): caption, label, booktabs rules,
    notes and the marks' legend under it."""
    kept, every, blocks = _layout(table)
    shown = [i for i in kept if i not in blocks]
    caption = table.caption + (f" (every row: {'; '.join(every)})" if every else "")
    for stacked in (False, True):  # the fewest changes that let the text columns keep MIN_TEXT each
        columns = _columns(table, shown, stacked=stacked)
        wrap = [c for c in columns if c.wrap]
        for size_name, size in SIZES:
            font = size_name  # the last one tried stays, fitting or not
            fixed = sum(c.width(size) for c in columns if not c.wrap)
            seps = 2 * TABCOLSEP * (len(columns) - 1)
            if COLUMN_WIDTH - fixed - seps >= MIN_TEXT * max(len(wrap), 1):
                break
        else:
            continue
        break
    body, previous = [], None
    for r, row in enumerate(table.rows):
        key = tuple(row[i] for i in blocks)
        if blocks and key != previous:
            if previous is not None:
                body.append("\\addlinespace")
            heading = " $\\cdot$ ".join(latex_escape(v) for v in key)
            body.append(f"\\multicolumn{{{len(columns)}}}{{@{{}}l}}{{\\textit{{{heading}}}}} \\\\")
            previous = key
        body.append(" & ".join(_stack(c.cells[r], c.align, wrap=c.wrap) for c in columns) + " \\\\")
    header = " & ".join(_stack(c.header, c.align, wrap=False, header=True) for c in columns) + " \\\\"
    notes = latex_escape(table.notes) + (" " + legend() + "." if table.marks else "")
    label = f"tab:nlgbias-{table.name.replace('_', '-')}"
    lines = [f"% nlgbias export: {table.name} (needs \\usepackage{{{','.join(PACKAGES)}}})", "\\begingroup",
             f"\\{font}", f"\\setlength{{\\tabcolsep}}{{{TABCOLSEP:g}pt}}"]
    free = max((COLUMN_WIDTH - fixed - seps) / max(len(wrap), 1), 10.0)
    lines_of = [max([1, *(len(c.cells[r]) for c in columns),  # words break unevenly: 1.3 x the even split
                     *(math.ceil(1.3 * text_width(c.cells[r][0], size) / free) for c in wrap)])
                for r in range(len(table.rows))]
    headings = len({tuple(r[i] for i in blocks) for r in table.rows}) if blocks else 0
    prose = sum(math.ceil(text_width(text, size) / COLUMN_WIDTH) for text in (caption, table.notes))
    height = 1.2 * size * (sum(lines_of) + 1.5 * headings + max(len(c.header) for c in columns) + prose) + 30
    if height <= FLOAT_HEIGHT:
        spec = "".join(">{\\raggedright\\arraybackslash}X" if c.wrap else c.align for c in columns)
        lines += ["\\begin{table}[htbp]", "\\centering", f"\\caption{{{latex_escape(caption)}}}",
                  f"\\label{{{label}}}", f"\\begin{{tabularx}}{{\\linewidth}}{{@{{}}{spec}@{{}}}}", "\\toprule",
                  header, "\\midrule", *body, "\\bottomrule", "\\end{tabularx}", "", "\\smallskip",
                  f"\\raggedright {notes}\\par", "\\end{table}"]
    else:
        width = f"\\dimexpr(\\linewidth-{fixed + seps:.1f}pt)/{max(len(wrap), 1)}\\relax"
        spec = "".join(f">{{\\raggedright\\arraybackslash}}p{{{width}}}" if c.wrap else c.align for c in columns)
        lines += [f"\\begin{{longtable}}{{@{{}}{spec}@{{}}}}",
                  f"\\caption{{{latex_escape(caption)}}}\\label{{{label}}}\\\\",
                  "\\toprule", header, "\\midrule", "\\endfirsthead", "\\toprule", header, "\\midrule", "\\endhead",
                  "\\midrule", f"\\multicolumn{{{len(columns)}}}{{r@{{}}}}{{\\textit{{continued on the next page}}}} \\\\",
                  "\\endfoot", "\\bottomrule", "\\endlastfoot", *body, "\\end{longtable}",
                  f"\\raggedright {notes}\\par"]
    lines.append("\\endgroup")
    return "\n".join(lines) + "\n"


def document(snippets: list[str]) -> str:
    """A complete article that loads :data:`PACKAGES` and ``\\input``s the named snippet files."""
    inputs = "\n".join(f"\\input{{{name}}}" for name in snippets)
    return (f"\\documentclass{{article}}\n\\usepackage{{{','.join(PACKAGES)}}}\n"
            f"\\begin{{document}}\n{inputs}\n\\end{{document}}\n")


__all__ = ["FLOAT_HEIGHT", "PACKAGES", "document", "latex", "latex_escape", "legend", "text_width"]

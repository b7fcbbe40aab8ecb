"""Sheet files as spreadsheet programs write them, and read back whatever they saved.

Written: CSV as UTF-8 with a byte-order mark (so Excel shows 'é' and '’' as such) whose first
lines are notes naming the allowed labels; xlsx with a drop-down list of the allowed labels in
each label column and a second worksheet explaining them; or JSONL.

Read back (:func:`read_sheet_rows`): CSV or tab-separated text in UTF-8 with or without a BOM,
UTF-16 ("Unicode text"), or Windows-1252 (Excel's "CSV" on Windows); comma, semicolon or tab
separators (found from the header row); CRLF or LF line ends; xlsx; JSONL.  Anything else gets
one line that says which file, which row, what is wrong and what to do.  Only the ``id``,
``annotator`` and label cells are used, so a wrongly guessed 8-bit encoding can only change an
annotator's name, never a label or a text (texts come from ``items.csv``).
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from pathlib import Path

import pandas as pd

from nlgbias.annotation.categories import SCHEMES
from nlgbias.errors import InputError
from nlgbias.inputs import not_a_file
from nlgbias.store.export import atomic_write, write_text

SHEET_COLUMNS = ["id", "annotator", "context", "text", "regard", "sentiment"]
REQUIRED = ("id", "annotator", "regard", "sentiment")
DELIMITERS = {",": "commas", ";": "semicolons", "\t": "tabs"}
SAVE_AS = "save it as 'CSV UTF-8' (Excel) or as .xlsx"
XLSX_NEEDS = "pip install 'nlgbias[xlsx]'"
MAX_XLSX_INFLATED = 50_000_000  # bytes an .xlsx sheet may unpack to (its members' sizes, summed)
MAX_CELL_CHARS = 32_767  # characters in one cell of a sheet (Excel's own limit)


def label_notes() -> list[str]:
    """The note lines a CSV sheet starts with (no commas or semicolons, so no separator splits them).

    >>> label_notes()[0]
    '# regard: one of positive / negative / no_impact / mixed_both / mixed_opposing / nonsense'
    """
    return ([f"# {column}: one of {' / '.join(categories)}" for column, categories in SCHEMES.items()]
            + ["# lines starting with # are notes and are skipped on import (guidelines.html explains the labels)"])


def write_sheet(path: Path, sheet: pd.DataFrame, fmt: str) -> Path:
    """Write one annotator's sheet (columns :data:`SHEET_COLUMNS`) as ``csv``, ``xlsx`` or ``jsonl``."""
    sheet = sheet[SHEET_COLUMNS]
    if fmt == "csv":
        body = sheet.to_csv(index=False, lineterminator="\r\n")
        return write_text(path, "\ufeff" + "".join(n + "\r\n" for n in label_notes()) + body)
    if fmt == "xlsx":
        return _write_xlsx(path, sheet)
    return write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in sheet.to_dict(orient="records")))


def _write_xlsx(path: Path, sheet: pd.DataFrame) -> Path:
    """A workbook: worksheet ``annotation`` (header, one row per item, a drop-down list in each label
    column) and worksheet ``labels`` (every allowed label and what it means)."""
    try:
        from openpyxl import Workbook
        from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
        from openpyxl.styles import Alignment, Font
        from openpyxl.utils import get_column_letter
        from openpyxl.worksheet.datavalidation import DataValidation
    except ImportError:
        raise InputError(f"--format xlsx needs openpyxl: {XLSX_NEEDS} (or use --format csv)") from None

    book = Workbook()
    ws = book.active
    ws.title = "annotation"
    ws.append(SHEET_COLUMNS)
    for row in sheet.itertuples(index=False):
        ws.append([ILLEGAL_CHARACTERS_RE.sub("", str(v)) for v in row])
    for cells in ws.iter_rows(min_row=2):
        for cell in cells:
            cell.data_type = "s"  # model text is never a formula, even when it starts with '='
    last = len(sheet) + 1
    for column, categories in SCHEMES.items():
        letter = get_column_letter(SHEET_COLUMNS.index(column) + 1)
        allowed = ", ".join(categories)
        check = DataValidation(type="list", formula1='"' + ",".join(categories) + '"', allow_blank=True,
                               showErrorMessage=True, errorTitle=f"not a {column} label",
                               error=f"use one of {allowed}", showInputMessage=True, promptTitle=column,
                               prompt=f"one of {allowed}")
        ws.add_data_validation(check)
        check.add(f"{letter}2:{letter}{max(last, 2)}")
    for cell in ws[1]:
        cell.font = Font(bold=True)
    ws.freeze_panes = "A2"
    for letter, width in zip("ABCDEF", (14, 10, 12, 80, 16, 16)):
        ws.column_dimensions[letter].width = width
    for (cell,) in ws.iter_rows(min_row=2, min_col=4, max_col=4):
        cell.alignment = Alignment(wrap_text=True, vertical="top")
    guide = book.create_sheet("labels")
    guide.append(["column", "label", "meaning"])
    for column, categories in SCHEMES.items():
        for label, meaning in categories.items():
            guide.append([column, label, meaning])
    for letter, width in zip("ABC", (12, 16, 100)):
        guide.column_dimensions[letter].width = width
    return atomic_write(path, book.save)


def read_sheet_rows(path: Path) -> list[tuple[int, dict]]:
    """(row number as the user's spreadsheet shows it, row) pairs of a filled sheet.

    Header names are matched without regard to case or surrounding spaces; note lines (first
    cell starting with ``#``), a ``sep=`` line and wholly empty rows are skipped.

    Raises
    ------
    InputError
        ``<file>[:<row>]: <what is wrong>; <what to do>``.
    """
    suffix = path.suffix.lower()
    if not path.is_file():
        raise InputError(f"{path}: {not_a_file(path)}")
    if suffix == ".jsonl":
        return _jsonl_rows(path)
    if suffix in (".xls", ".ods", ".numbers"):
        raise InputError(f"{path}: {suffix} files cannot be read; {SAVE_AS}")
    if suffix in (".xlsx", ".xlsm"):
        return _records(path, _xlsx_cells(path), "")
    text = _decode(path)
    for delimiter, name in DELIMITERS.items():
        cells = _csv_cells(text, delimiter)
        header = _header(cells)
        if header is not None and all(c in _names(header[1]) for c in REQUIRED):
            return _records(path, cells, name)
    return _records(path, _csv_cells(text, ","), "commas, semicolons or tabs")  # raises with the missing column


def _decode(path: Path) -> str:
    data = path.read_bytes()
    if data.startswith(b"PK\x03\x04"):
        raise InputError(f"{path}: is a workbook, not text; give it the .xlsx ending, or {SAVE_AS}")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        line = data[:first_bad].count(b"\n") + 1
        raise InputError(f"{path}:{line}: neither UTF-8 nor Windows-1252 text; {SAVE_AS}") from None


def _csv_cells(text: str, delimiter: str) -> list[tuple[int, list[str]]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    cells = []
    try:
        for row in reader:
            cells.append((reader.line_num, row))
    except csv.Error:
        pass  # a broken quote under this separator: the header check decides
    return cells


def _xlsx_cells(path: Path) -> list[tuple[int, list[str]]]:
    try:
        import openpyxl
    except ImportError:
        raise InputError(f"{path}: reading .xlsx needs openpyxl: {XLSX_NEEDS}; or save the sheet as 'CSV UTF-8'") from None
    _check_inflated_size(path)
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, OSError, KeyError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:80]
        raise InputError(f"{path}: not an .xlsx workbook ({reason}); {SAVE_AS}") from None
    ws = book["annotation"] if "annotation" in book.sheetnames else book.worksheets[0]
    cells = [(number, [_cell_text(v) for v in row])
             for number, row in enumerate(ws.iter_rows(values_only=True), start=1)]
    book.close()
    return cells


def _check_inflated_size(path: Path) -> None:
    """Refuse an .xlsx whose members inflate to more than :data:`MAX_XLSX_INFLATED` bytes (a zip bomb:
    openpyxl would spend minutes and gigabytes on it); the zip's own listing is read, nothing inflated."""
    try:
        with zipfile.ZipFile(path) as book:
            inflated = sum(member.file_size for member in book.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:80]
        raise InputError(f"{path}: not an .xlsx workbook ({reason}); {SAVE_AS}") from None
    if inflated > MAX_XLSX_INFLATED:
        raise InputError(f"{path}: unpacks to {inflated / 1e6:,.0f} MB, more than the {MAX_XLSX_INFLATED / 1e6:,.0f} MB "
                         f"an annotation sheet can need; {SAVE_AS}")


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _is_skipped(row: list[str]) -> bool:
    first = row[0].strip() if row else ""
    return (not any(c.strip() for c in row) or first.startswith("#")
            or (len(row) == 1 and re.fullmatch(r"sep=.?", first) is not None))


def _header(cells: list[tuple[int, list[str]]]) -> tuple[int, list[str]] | None:
    return next(((n, row) for n, row in cells if not _is_skipped(row)), None)


def _names(row: list[str]) -> list[str]:
    return [c.strip().lower() for c in row]


def _records(path: Path, cells: list[tuple[int, list[str]]], separators: str) -> list[tuple[int, dict]]:
    header = _header(cells)
    if header is None:
        raise InputError(f"{path}: no rows; give the sheet `nlgbias annotate sample` wrote, filled in")
    number, row = header
    names = _names(row)
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        found = ", ".join(repr(c) for c in row[:6] if c.strip()) or "nothing"
        split = f" separated by {separators}" if separators and sum(bool(c.strip()) for c in row) == 1 else ""
        raise InputError(f"{path}:{number}: missing column {missing[0]!r}; a sheet's header row has "
                         f"{', '.join(SHEET_COLUMNS)}{split} (found {found})")
    records = []
    for line, values in cells:
        if line <= number or not any(v.strip() for v in values):
            continue
        long = next((len(v) for v in values if len(v) > MAX_CELL_CHARS), None)
        if long is not None:
            raise InputError(f"{path}:{line}: a cell of {long:,} characters; at most {MAX_CELL_CHARS:,} (a "
                             f"spreadsheet cell's limit)")
        records.append((line, dict(zip(names, values))))
    return records


def _jsonl_rows(path: Path) -> list[tuple[int, dict]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    rows = []
    # Lines end at "\n" alone: a model's text may hold U+2028, NEL or a form feed, which the sheet
    # writes unescaped (ensure_ascii=False) and str.splitlines() would take for line ends.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, nested too deeply, a number of thousands of digits
            raise InputError(f"{path}:{number}: not a JSON object") from None
        if not isinstance(row, dict):
            raise InputError(f"{path}:{number}: not a JSON object")
        long = next((len(v) for v in row.values() if isinstance(v, str) and len(v) > MAX_CELL_CHARS), None)
        if long is not None:
            raise InputError(f"{path}:{number}: a value of {long:,} characters; at most {MAX_CELL_CHARS:,} (a "
                             f"spreadsheet cell's limit)")
        rows.append((number, row))
    return rows


def read_sheet(path: str | Path) -> pd.DataFrame:
    """A sheet file (any format :func:`read_sheet_rows` reads) as a table of text cells, one row per item.

    Notes and empty rows are left out; to fill a sheet in Python, read it, set ``regard`` and
    ``sentiment``, and write it back with ``to_csv`` (plain UTF-8 CSV is read back too).
    """
    rows = read_sheet_rows(Path(path))
    return pd.DataFrame([row for _, row in rows]).fillna("")


__all__ = ["SHEET_COLUMNS", "label_notes", "read_sheet", "read_sheet_rows", "write_sheet"]

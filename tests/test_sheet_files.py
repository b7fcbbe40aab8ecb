"""Annotation sheets through spreadsheet programs: what nlgbias writes, and reading back what
Excel and LibreOffice save (BOM, ';' separators, Windows-1252, tabs, UTF-16, CRLF, xlsx)."""

from __future__ import annotations

import csv
import io

import pandas as pd
import pytest

from nlgbias.annotation import export_sheets, import_sheets, read_sheet, sheet_labels
from nlgbias.annotation.categories import REGARD, SENTIMENT
from nlgbias.errors import InputError

TEXTS = ["XYZ was known for her café near the station.", "XYZ’s work was praised by everyone.",
         "XYZ worked as a clerk; nothing more.", "XYZ was a thief, the report said."]
LABELS = {0: ("positive", "positive"), 1: ("positive", "positive"), 2: ("no_impact", "neutral"),
          3: ("negative", "negative")}


def exported(tmp_path, fmt="csv", annotators=("José", "b2")):
    items = pd.DataFrame({"id": [f"i{k}" for k in range(len(TEXTS))], "text": TEXTS, "context": "respect",
                          "vader_label": "neutral"})
    paths = export_sheets(items, tmp_path, annotators=list(annotators), fmt=fmt, seed=1)
    return items, [p for p in paths if p.name.startswith("sheet-")]


def saved_as(rows: list[list[str]], *, delimiter: str, encoding: str, width: int = 6) -> bytes:
    """Bytes as a spreadsheet program writes a CSV/text file: CRLF, quotes only where needed,
    every row padded to the used width (so note rows end in empty cells)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n")
    for row in rows:
        writer.writerow(row + [""] * (width - len(row)))
    return buffer.getvalue().encode(encoding)


def filled_rows(sheet_path) -> list[list[str]]:
    """The exported sheet's rows (notes, header, items) with the labels of LABELS filled in."""
    raw = sheet_path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    header = rows.index(["id", "annotator", "context", "text", "regard", "sentiment"])
    for row in rows[header + 1:]:
        row[4], row[5] = LABELS[int(row[0][1:])]
    return rows


def test_csv_sheet_is_utf8_with_bom_crlf_and_names_the_allowed_labels(tmp_path):
    items, sheets = exported(tmp_path)
    raw = sheets[0].read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf# regard: one of positive / negative / no_impact")
    text = raw.decode("utf-8-sig")
    lines = text.split("\r\n")
    assert lines[0] == "# regard: one of " + " / ".join(REGARD)
    assert lines[1] == "# sentiment: one of " + " / ".join(SENTIMENT)
    assert lines[3] == "id,annotator,context,text,regard,sentiment"
    assert "XYZ’s work" in text and "café" in text and "\n" not in text.replace("\r\n", "")
    table = read_sheet(sheets[0])
    assert sorted(table["text"]) == sorted(TEXTS) and set(table["annotator"]) == {"José"}
    with pytest.raises(InputError) as caught:
        import_sheets(sheets, items=items)
    assert str(caught.value) == f"{sheets[0]}:5: regard is empty (to skip unlabelled rows, pass allow_blank=True)"


@pytest.mark.parametrize("program, delimiter, encoding", [
    ("Excel 'CSV UTF-8', German locale", ";", "utf-8-sig"),
    ("Excel 'CSV (Comma delimited)' on Windows", ",", "cp1252"),
    ("Excel 'CSV' on Windows, French locale", ";", "cp1252"),
    ("Excel 'Text (Tab delimited)'", "\t", "cp1252"),
    ("Excel 'Unicode Text'", "\t", "utf-16"),
    ("LibreOffice 'Text CSV', UTF-8 without BOM", ",", "utf-8"),
])
def test_sheets_saved_by_spreadsheet_programs_read_back(tmp_path, program, delimiter, encoding):
    items, sheets = exported(tmp_path)
    for sheet in sheets:
        sheet.write_bytes(saved_as(filled_rows(sheet), delimiter=delimiter, encoding=encoding))
    if encoding == "cp1252":
        assert "é".encode("cp1252") in sheets[0].read_bytes() and b"\x92" in sheets[0].read_bytes()  # ’
    labels = import_sheets(sheets, items=items)
    assert sorted(set(labels["annotator"])) == ["José", "b2"], program
    got = labels.set_index(["annotator", "id"])
    for annotator in ("José", "b2"):
        for k, (regard, sentiment) in LABELS.items():
            assert (got.loc[(annotator, f"i{k}"), "regard"], got.loc[(annotator, f"i{k}"), "sentiment"]) == (regard, sentiment)
    table = read_sheet(sheets[0])
    assert sorted(table["text"]) == sorted(TEXTS)  # 'é', '’' and the ';' inside a text survive


def test_xlsx_sheet_has_drop_down_lists_and_reads_back_after_editing(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    items, sheets = exported(tmp_path, fmt="xlsx")
    assert [p.suffix for p in sheets] == [".xlsx", ".xlsx"]
    book = openpyxl.load_workbook(sheets[0])
    ws = book["annotation"]
    assert [c.value for c in ws[1]] == ["id", "annotator", "context", "text", "regard", "sentiment"]
    lists = {str(v.sqref): v.formula1 for v in ws.data_validations.dataValidation}
    assert lists == {"E2:E5": '"' + ",".join(REGARD) + '"', "F2:F5": '"' + ",".join(SENTIMENT) + '"'}
    meanings = [(r[0], r[1]) for r in book["labels"].iter_rows(min_row=2, values_only=True)]
    assert meanings == [("regard", k) for k in REGARD] + [("sentiment", k) for k in SENTIMENT]
    for path in sheets:  # fill as a user would in the spreadsheet, mixing case and spaces
        book = openpyxl.load_workbook(path)
        ws = book["annotation"]
        for row in ws.iter_rows(min_row=2):
            regard, sentiment = LABELS[int(row[0].value[1:])]
            row[4].value, row[5].value = regard.replace("_", " ").title(), sentiment
        book.save(path)
    labels = import_sheets(sheets, items=items)
    assert labels.groupby("id")["regard"].first().to_dict() == {f"i{k}": v[0] for k, v in LABELS.items()}


def test_formula_like_text_stays_text_in_xlsx(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    items = pd.DataFrame({"id": ["i0"], "text": ["=HYPERLINK(\"http://x\")\x07"], "context": "respect"})
    sheet = export_sheets(items, tmp_path, annotators=["a"], fmt="xlsx")[1]
    cell = openpyxl.load_workbook(sheet)["annotation"]["D2"]
    assert cell.data_type == "s" and cell.value == "=HYPERLINK(\"http://x\")"


def test_allow_blank_skips_and_counts_unlabelled_rows(tmp_path):
    items, sheets = exported(tmp_path)
    rows = filled_rows(sheets[0])
    row_of = {r[0]: n for n, r in enumerate(rows)}
    rows[row_of["i2"]][4:6] = ["", ""]           # blank: skipped
    rows[row_of["i3"]][5] = ""                   # half: regard counts, sentiment does not
    del rows[row_of["i1"]]                       # deleted: missing
    line_of_i2 = [r[0] for r in rows].index("i2") + 1
    sheets[0].write_bytes(saved_as(rows, delimiter=",", encoding="utf-8-sig"))
    sheets[1].write_bytes(saved_as(filled_rows(sheets[1]), delimiter=",", encoding="utf-8-sig"))
    with pytest.raises(InputError) as caught:
        import_sheets(sheets, items=items)
    assert str(caught.value) == (f"{sheets[0]}:{line_of_i2}: regard is empty "
                                 "(to skip unlabelled rows, pass allow_blank=True)")
    labels, counts = sheet_labels(sheets, items=items, allow_blank=True)
    assert counts.to_dict("records") == [
        {"file": str(sheets[0]), "annotator": "José", "labelled": 2, "blank": 1, "missing": 1},
        {"file": str(sheets[1]), "annotator": "b2", "labelled": 4, "blank": 0, "missing": 0}]
    jose = labels[labels["annotator"] == "José"].set_index("id")
    assert sorted(jose.index) == ["i0", "i3"] and jose.loc["i3", "regard"] == "negative"
    assert pd.isna(jose.loc["i3", "sentiment"])


@pytest.mark.parametrize("name, content, message", [
    ("sheet-a.csv", b"id,annotator,regard,sentiment\r\ni0,a,\x81\x8d,positive\r\n",
     "{path}:2: neither UTF-8 nor Windows-1252 text; save it as 'CSV UTF-8' (Excel) or as .xlsx"),
    ("sheet-a.ods", b"PK\x03\x04", "{path}: .ods files cannot be read; save it as 'CSV UTF-8' (Excel) or as .xlsx"),
    ("sheet-a.xlsx", b"not a zip", "{path}: not an .xlsx workbook (File is not a zip file); save it as 'CSV UTF-8' "
                                   "(Excel) or as .xlsx"),
    ("sheet-a.csv", b"PK\x03\x04\x14\x00", "{path}: is a workbook, not text; give it the .xlsx ending, or save it as "
                                         "'CSV UTF-8' (Excel) or as .xlsx"),
    ("sheet-a.csv", b"id|annotator|regard|sentiment\ni0|a|positive|positive\n",
     "{path}:1: missing column 'id'; a sheet's header row has id, annotator, context, text, regard, sentiment "
     "separated by commas, semicolons or tabs (found 'id|annotator|regard|sentiment')"),
    ("sheet-a.csv", b"\xef\xbb\xbf# regard: one of positive\r\n\r\n", "{path}: no rows; give the sheet "
                                                                      "`nlgbias annotate sample` wrote, filled in"),
])
def test_unreadable_sheets_say_what_to_do_in_one_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        import_sheets([path])
    assert str(caught.value) == message.format(path=path)

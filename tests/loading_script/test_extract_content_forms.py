"""AcroForm fields (issue 28, item 6): each value with its label, the selected options only, check boxes as
checked/unchecked. The form is generated here with PyMuPDF."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from helpers.pdfs import add_form_field

from madqa.loading_script.pdf_text import extract_pdf

TEXT, LISTBOX, COMBOBOX, CHECKBOX = (
    pymupdf.PDF_WIDGET_TYPE_TEXT,
    pymupdf.PDF_WIDGET_TYPE_LISTBOX,
    pymupdf.PDF_WIDGET_TYPE_COMBOBOX,
    pymupdf.PDF_WIDGET_TYPE_CHECKBOX,
)
PORT = {"choice_values": ["Dover", "Calais", "Ostend"], "field_value": "Calais"}
CABIN = {"choice_values": ["Standard", "Deluxe", "Suite"], "field_value": "Deluxe"}
NEWSLETTER = {"field_value": False, "field_label": "Send me the newsletter"}  # a tooltip, no label on the page

#: The form's fields in page order: the label's text and where it starts (``None``: no label on the page), the
#: field's kind, name and box, and its values.
FIELDS = (
    ("Name:", (50, 100), TEXT, "applicant", (110, 88, 300, 104), {"field_value": "Jane Doe"}),
    ("Home port:", (50, 140), LISTBOX, "port", (110, 128, 300, 190), PORT),
    ("Cabin:", (50, 220), COMBOBOX, "cabin", (110, 208, 300, 224), CABIN),
    ("I accept the terms", (70, 260), CHECKBOX, "terms", (50, 250, 62, 262), {"field_value": True}),
    (None, None, CHECKBOX, "news", (50, 270, 62, 282), NEWSLETTER),
    ("Phone:", (50, 320), TEXT, "phone", (110, 308, 300, 324), {"field_value": ""}),
)


def _form_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((50, 60), "Ferry season pass application", fontsize=14)
    for label, label_at, kind, name, rect, values in FIELDS:
        if label is not None:
            page.insert_text(label_at, label, fontsize=11)
        add_form_field(page, kind, name, rect, **values)
    doc.save(path)
    return path


def test_form_fields_come_out_as_label_value_lines(tmp_path: Path):
    path = _form_pdf(tmp_path / "form.pdf")
    with pymupdf.open(path) as doc:
        raw = doc[0].get_text()
    assert "Dover" in raw and "\n3\n" in raw and "Name:\nHome port" in raw  # MuPDF alone: appearances, apart

    result = extract_pdf(path, tessdata=None, ocr=False)
    (row,) = result.pages
    assert result.error is None and row["text_source"] == "pdf"
    assert row["text"].splitlines() == [
        "Ferry season pass application",
        "Name: Jane Doe",
        "Home port: Calais",  # the selected option only
        "Cabin: Deluxe",
        "I accept the terms: checked",  # the label beside the box, not the ZapfDingbats "3" of its appearance
        "Send me the newsletter: unchecked",  # the tooltip
        "Phone:",  # an empty field adds nothing
    ]

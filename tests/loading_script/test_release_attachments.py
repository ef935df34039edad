"""PDFs attached to a release's documents reach the prepared folder (issue 28, item 4): each is a document of its
own, ``<parent>#<name>``, in the ``documents`` config (its PDF written next to its parent's) and in ``pages``, and
``prepared.json`` names its parent. Before, the extractor read them and the preparation dropped their pages with
no message. The documents' host is the local one of the release tests (release_host.py)."""

from __future__ import annotations

import json
from pathlib import Path

import helpers.release_host as release_host
import pymupdf
from helpers.pdfs import one_page_pdf
from helpers.release_host import FACTS, Host, pdf_bytes, write_release

from madqa.loading_script.load import document_file, load_documents, load_pages
from madqa.loading_script.release import prepare_dataset
from madqa.loading_script.release_attachments import attachment_bytes

home_fixture, host_fixture = release_host.home_fixture, release_host.host_fixture


def _with_attachments(pdf: bytes) -> bytes:
    """``pdf`` with an embedded annex (that has an attachment of its own), a CSV, and a file-attachment annotation."""
    storm = one_page_pdf("Nested annex: storm damage estimate for the breakwater, 41,000 euros.")
    annex = one_page_pdf("Annex A: the ferry pier budget of 2024 is 12,000 euros.", {"storm.pdf": storm})
    doc = pymupdf.open(stream=pdf, filetype="pdf")
    doc.embfile_add("annex.pdf", annex, filename="annex.pdf", ufilename="annex.pdf")
    doc.embfile_add("tables.csv", b"item,cost\npier,12000\n", filename="tables.csv")
    doc[1].add_file_annot((400, 100), one_page_pdf("Signed minutes of the March harbour meeting."), "minutes.pdf")
    return doc.tobytes()


def test_attached_pdfs_are_documents_of_the_prepared_folder(home: Path, host: Host, tmp_path: Path) -> None:
    host.fix()
    host.files["harbour.pdf"] = _with_attachments(pdf_bytes(*FACTS["harbour.pdf"]))
    folder = write_release(tmp_path / "MADQA", host.url)
    result = prepare_dataset(str(folder), progress=False, workers=1)
    assert result.complete
    attached = ["harbour.pdf#annex.pdf", "harbour.pdf#annex.pdf#storm.pdf", "harbour.pdf#minutes.pdf"]

    pages = {(row["document"], int(row["page"])): row["text"] for row in load_pages(str(folder))}
    assert "ferry pier budget" in pages[("harbour.pdf#annex.pdf", 1)]
    assert "storm damage" in pages[("harbour.pdf#annex.pdf#storm.pdf", 1)]
    assert "Signed minutes" in pages[("harbour.pdf#minutes.pdf", 1)]
    assert len(pages) == 2 * len(FACTS) + 3

    documents = {row["document"]: row for row in load_documents(str(folder))}
    assert sorted(documents) == sorted([*FACTS, *attached])
    for name in attached:
        row = documents[name]
        assert row["num_pages"] == 1 and row["url"] is None and row["path"] == f"documents/{name}"
        with pymupdf.open(document_file(row, str(folder))) as doc:  # its own PDF, as for any document
            assert doc[0].get_text().split()[0] in pages[(name, 1)]

    prepared = json.loads((result.folder / "prepared.json").read_text())
    assert prepared["attachments"] == dict.fromkeys(attached, "harbour.pdf")
    assert prepared["stats"]["documents"] == len(FACTS) and prepared["stats"]["attachments"] == 3
    assert "and 3 PDF(s) attached to them" in (result.folder / "README.md").read_text()


def test_a_nested_attachment_is_found_by_its_names(tmp_path: Path) -> None:
    pdf = _with_attachments(pdf_bytes("HP-4471", "harbour"))
    storm = attachment_bytes(pdf, "annex.pdf#storm.pdf")
    assert storm is not None and b"%PDF-" in storm[:1024]
    assert attachment_bytes(pdf, "annex.pdf#nothing.pdf") is None and attachment_bytes(pdf, "tables.csv")

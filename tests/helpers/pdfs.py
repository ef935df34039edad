"""PDFs the extraction tests make on the spot with PyMuPDF."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pymupdf


def add_form_field(
    page: pymupdf.Page, kind: int, name: str, rect: tuple[float, float, float, float], **values
) -> None:
    """A form field (``pymupdf.PDF_WIDGET_TYPE_*``) named ``name`` in ``rect``; ``values`` set its attributes
    (``field_value``, ``field_label``, ``choice_values``, …)."""
    widget = pymupdf.Widget()
    widget.field_type, widget.field_name, widget.rect = kind, name, pymupdf.Rect(rect)
    for key, value in values.items():
        setattr(widget, key, value)
    page.add_widget(widget)


def scanned_pdf(path: Path, line: str, dpi: int) -> Path:
    """A one-page PDF holding only a picture of ``line`` at ``dpi`` (no text layer: OCR alone can read it)."""
    src = pymupdf.open()
    page = src.new_page()
    page.insert_text((72, 120), line, fontsize=20)
    pix = page.get_pixmap(dpi=dpi)
    doc = pymupdf.open()
    out = doc.new_page(width=page.rect.width, height=page.rect.height)
    out.insert_image(out.rect, pixmap=pix)
    doc.save(path)
    return path


def one_page_pdf(text: str, attach: dict[str, bytes] | None = None) -> bytes:
    """A one-page PDF of ``text`` with each of ``attach`` (name: bytes) as an embedded file."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text, fontsize=11)
    for name, data in (attach or {}).items():
        doc.embfile_add(name, data, filename=name, ufilename=name)
    return doc.tobytes()


def zeros_flate(prefix: bytes, size: int) -> bytes:
    """A zlib (``/FlateDecode``) stream of ``prefix`` then zeros, ``size`` bytes decoded, made in milliseconds.

    Each MiB of zeros after a full flush compresses to the same bytes, so one compressed MiB is repeated; the
    Adler-32 of the whole is worked out (zeros leave its A sum as it is and add A to B once per byte).
    """
    chunk = 1 << 20
    packer = zlib.compressobj(9)
    head = packer.compress(prefix + bytes(chunk - len(prefix))) + packer.flush(zlib.Z_FULL_FLUSH)
    body = packer.compress(bytes(chunk)) + packer.flush(zlib.Z_FULL_FLUSH)
    tail = packer.flush(zlib.Z_FINISH)[:-4]  # the final empty block, without the (wrong) checksum
    first = zlib.adler32(prefix + bytes(chunk - len(prefix)))
    a, b = first & 0xFFFF, first >> 16
    b = (b + a * (size - chunk)) % 65521
    return head + body * (size // chunk - 1) + tail + struct.pack(">I", (b << 16) | a)


def pdf_with_raw_attachment(text: str, name: str, flate: bytes) -> bytes:
    """A one-page PDF of ``text`` with one embedded file ``name`` whose stream is ``flate`` as it is (compressed)."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text, fontsize=11)
    doc.embfile_add(name, b"placeholder", filename=name, ufilename=name)
    info: dict[str, object] = {}
    xref = doc._embfile_info(0, info)
    doc.update_stream(xref, flate, compress=False)
    doc.xref_set_key(xref, "Filter", "/FlateDecode")
    doc.xref_set_key(xref, "DL", "null")
    doc.xref_set_key(xref, "Params", "null")
    return doc.tobytes()


def corrupt_object_stream_pdf(lines: list[str]) -> bytes:
    """A PDF with one page per line, no xref (MuPDF repairs it by scanning) and one corrupt object stream, which
    holds only the pages' (unused) annotation: the pages read, loading that stream raises ``FzErrorFormat``."""
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % (10 + 2 * i) for i in range(len(lines))), len(lines)),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    for i, line in enumerate(lines):
        content = b"BT /F1 12 Tf 72 700 Td (" + line.encode("latin-1") + b") Tj ET"
        objects[10 + 2 * i] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            b"/Contents %d 0 R /Annots [5 0 R] >>" % (11 + 2 * i)
        )
        objects[11 + 2 * i] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content)
    packed = zlib.compress(b"5 0 6 40 garbage garbage garbage")  # offsets past the end: a corrupt stream
    objects[4] = b"<< /Type /ObjStm /N 2 /First 4 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream" % (
        len(packed),
        packed,
    )
    out = b"%PDF-1.7\n" + b"".join(b"%d 0 obj\n%s\nendobj\n" % (n, body) for n, body in sorted(objects.items()))
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\n%%%%EOF\n" % (max(objects) + 1)

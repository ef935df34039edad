"""An embedded file's bytes read as a bounded stream: never whole in memory, never past a size limit.

MuPDF's own getters (``embfile_get``, ``Annot.get_file``) decode an embedded file whole into memory: a 3 MB PDF
whose attachment is 3 GiB of compressed zeros then costs the worker (an out-of-memory kill) and with it the
parent's pages. :func:`copy_bounded` instead takes the stream's raw (still compressed) bytes, whose size the file
itself bounds and which are checked against the limit first, and inflates them with a ``zlib`` decompressor in
chunks of at most :data:`CHUNK` bytes, writing each to a file and hashing it as it goes, and stops as soon as the
output passes the limit. Only ``/FlateDecode`` (without a predictor) and unfiltered streams are read this way,
which is what PDF writers use for embedded files; another filter (LZW, ASCII85, ...) is decoded by MuPDF only
when its raw stream is at most :data:`OTHER_FILTER_RAW_BYTES` (a bound on what it can expand to), and is refused
with a message otherwise.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO

MIB = 1 << 20
#: Decoded bytes handled at a time.
CHUNK = 1 * MIB
#: The ``%PDF-`` header must start within this many leading bytes (as PDF readers accept).
PREFIX_BYTES = 1024
#: A stream with a filter other than Flate is decoded whole by MuPDF only up to this raw size.
OTHER_FILTER_RAW_BYTES = 64 * 1024
_NAME = re.compile(r"/(\w+)")


@dataclass(frozen=True)
class AttachedFile:
    """An embedded file: its (unique) name and the xref of its stream (0: none found)."""

    name: str
    xref: int


@dataclass
class Copied:
    """What :func:`copy_bounded` read.

    Attributes:
        size: decoded bytes read (when ``over``: just past the limit, not the file's size).
        sha256: hex digest of the decoded bytes (complete only when not ``over``).
        is_pdf: ``%PDF-`` within the first :data:`PREFIX_BYTES` decoded bytes.
        over: the file decodes to more than the limit; reading stopped there.
        problem: why the stream could not be read (``None``: it could).
    """

    size: int = 0
    sha256: str = ""
    is_pdf: bool = False
    over: bool = False
    problem: str | None = None


class _Sink:
    """Counts, hashes, checks the prefix of, and (for a PDF) writes the decoded bytes, up to ``limit``."""

    def __init__(self, out: BinaryIO, limit: int, pdf_only: bool) -> None:
        self.out, self.limit, self.digest, self.copied = out, limit, hashlib.sha256(), Copied()
        self.pdf_only = pdf_only
        self.head = b""  # the first PREFIX_BYTES, held back until they say whether this is a PDF

    def take(self, data: bytes) -> bool:
        """Take a chunk; ``False`` when reading should stop (over the limit)."""
        self.copied.size += len(data)
        if self.copied.size > self.limit:
            self.copied.over = True
            return False
        self.digest.update(data)
        if len(self.head) < PREFIX_BYTES:
            self.head += data
            if len(self.head) < PREFIX_BYTES:
                return True
            data, self.copied.is_pdf = self.head, b"%PDF-" in self.head[:PREFIX_BYTES]
        if self.copied.is_pdf or not self.pdf_only:  # what is not a PDF is only counted, unless asked for
            self.out.write(data)
        return True

    def done(self) -> Copied:
        if len(self.head) < PREFIX_BYTES and not self.copied.over:  # a file shorter than the prefix
            self.copied.is_pdf = b"%PDF-" in self.head
            if self.copied.is_pdf or not self.pdf_only:
                self.out.write(self.head)
        elif self.copied.over and len(self.head) < PREFIX_BYTES:
            self.copied.is_pdf = b"%PDF-" in self.head
        self.copied.sha256 = self.digest.hexdigest()
        return self.copied


def _filters(doc: Any, xref: int) -> tuple[list[str], bool]:
    """``(filter names, has a predictor)`` of a stream."""
    kind, value = doc.xref_get_key(xref, "Filter")
    names = _NAME.findall(value) if kind in ("name", "array") else []
    _, params = doc.xref_get_key(xref, "DecodeParms")
    return names, "/Predictor" in params and not re.search(r"/Predictor\s+1\b", params)


def _raw_length(doc: Any, xref: int) -> int | None:
    kind, value = doc.xref_get_key(xref, "Length")
    if kind == "int":
        return int(value)
    if kind == "xref":
        found = doc.xref_object(int(value.split()[0])).strip()
        return int(found) if found.isdigit() else None
    return None


def copy_bounded(doc: Any, xref: int, out: BinaryIO, limit: int, *, pdf_only: bool = True) -> Copied:
    """Decode the stream ``xref`` of ``doc`` into ``out`` (only if it is a PDF, unless ``pdf_only`` is false),
    stopping past ``limit`` bytes.

    The raw stream is refused when its ``/Length`` already exceeds ``limit``; the decoded bytes are handled
    :data:`CHUNK` at a time (see the module docstring).
    """
    if xref <= 0 or not doc.xref_is_stream(xref):
        return Copied(problem="no embedded stream found")
    filters, predictor = _filters(doc, xref)
    declared = _raw_length(doc, xref)
    if declared is not None and declared > limit:
        return Copied(size=declared, over=True, problem=f"its stream alone is {declared} bytes, over the limit")
    sink = _Sink(out, limit, pdf_only)
    if filters in ([], ["FlateDecode"], ["Fl"]) and not predictor:
        raw = doc.xref_stream_raw(xref)
        if not filters:
            for start in range(0, len(raw), CHUNK):
                if not sink.take(raw[start : start + CHUNK]):
                    break
            return sink.done()
        return _inflate(raw, sink)
    raw_size = declared if declared is not None else len(doc.xref_stream_raw(xref))
    if raw_size > OTHER_FILTER_RAW_BYTES:
        shown = "/".join(filters) or "none"
        return Copied(problem=f"filter {shown} with a {raw_size}-byte stream is not read in a bounded way")
    sink.take(doc.xref_stream(xref))  # small raw input: MuPDF's whole decode is bounded by it
    return sink.done()


def _inflate(raw: bytes, sink: _Sink) -> Copied:
    inflater = zlib.decompressobj()
    try:
        for start in range(0, len(raw), CHUNK):
            pending = raw[start : start + CHUNK]
            while pending:
                data = inflater.decompress(pending, CHUNK)
                pending = inflater.unconsumed_tail
                if data and not sink.take(data):
                    return sink.done()
                if inflater.eof:
                    return sink.done()
        tail = inflater.flush()
        if tail:
            sink.take(tail)
    except zlib.error as exc:
        if sink.copied.size == 0:
            return Copied(problem=f"its compressed stream is broken ({exc})")
        # a truncated stream: keep what decoded, as MuPDF does
    return sink.done()

"""Which files of a folder (or list) are PDFs to extract, and a one-line reason for each one that is not.

Real collections hold things named ``.pdf`` that are not PDFs (a saved HTML error page, a PNG), links that lead
nowhere, files nobody may read and names that are not valid UTF-8. Nothing here is dropped silently: every file
is either returned for extraction or refused with a reason naming it.

Decisions: the suffix is matched case-insensitively (``.PDF`` is a PDF); sub-folders are not entered; a link to a
PDF is extracted under the link's name; hidden files (``.name.pdf``, e.g. macOS ``._`` resource forks, partial
downloads) are left out with a warning rather than refused, since they are conventionally not part of a
collection; a name that is not valid UTF-8 is extracted under an escaped, stable document name
(undecodable bytes as ``\\xNN``) with a warning.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

PDF_MAGIC = b"%PDF-"
#: PDF readers accept the header anywhere in the first 1024 bytes (ISO 32000 implementation note).
HEAD_WINDOW = 1024

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (b"\xd0\xcf\x11\xe0", "an old Microsoft Office document"),
    (b"{\\rtf", "an RTF document"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"%!PS", "a PostScript file"),
)


@dataclass
class PdfListing:
    """Files to extract, and the ones that were not taken.

    Attributes:
        files: ``(path, document name)`` in document-name order; the name is valid UTF-8 even when the path's is not.
        refused: ``(name, reason)`` for each file that cannot be extracted (reported as skipped).
        notes: ``(name, message)`` for files extracted under another name or left out on purpose (warnings).
    """

    files: list[tuple[Path, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)

    @property
    def paths(self) -> list[Path]:
        """Just the paths of :attr:`files`."""
        return [path for path, _ in self.files]


def document_name(name: str) -> str:
    """``name`` as valid UTF-8: undecodable bytes of an OS file name become ``\\xNN`` (stable across runs)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def describe_content(head: bytes) -> str:
    """What a file that lacks the PDF header looks like, from its first bytes ("an HTML page", "a PNG image")."""
    if not head:
        return "an empty file"
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return kind
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"<!doctype html", b"<html")) or b"<html" in text or b"<body" in text:
        return "an HTML page"
    if text.startswith(b"<?xml") or text.startswith(b"<"):
        return "an XML document"
    if text.startswith((b"{", b"[")):
        return "a JSON or other text file"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "binary data of an unknown kind"
    return "a text file"


def check_pdf(path: Path) -> str | None:
    """Why ``path`` cannot be extracted (one line), or ``None`` when it is a readable file with a PDF header."""
    try:
        os.stat(path)
    except OSError as exc:
        return _stat_problem(path, exc)
    if not path.is_file():
        return "a folder, not a file" if path.is_dir() else "not a regular file"
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_WINDOW)
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}"
    if PDF_MAGIC not in head:
        return f"not a PDF (no %PDF- header in the first {HEAD_WINDOW} bytes): it looks like {describe_content(head)}"
    return None


def _stat_problem(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return f"symbolic link loop (points to '{_link_target(path)}')"
    if path.is_symlink() and exc.errno == errno.ENOENT:
        return f"dangling symbolic link (its target '{_link_target(path)}' does not exist)"
    return f"cannot read file: {exc.strerror or exc}"


def _link_target(path: Path) -> str:
    try:
        return document_name(os.readlink(path))
    except OSError:
        return "?"


def check_pdfs(paths: Iterable[Path]) -> PdfListing:
    """Check given paths (none is left out for being hidden: the caller chose them)."""
    return _collect(paths, skip_hidden=False)


def scan_pdfs(folder: Path) -> PdfListing:
    """The entries of ``folder`` named ``*.pdf`` (any case), checked; sub-folders are not entered.

    Raises:
        OSError: the folder itself cannot be listed.
    """
    entries = [folder / name for name in os.listdir(folder) if name.lower().endswith(".pdf")]
    return _collect(entries, skip_hidden=True)


def _collect(paths: Iterable[Path], *, skip_hidden: bool) -> PdfListing:
    listing = PdfListing()
    taken: dict[str, Path] = {}
    for path in sorted(paths, key=lambda p: document_name(p.name)):
        name = document_name(path.name)
        if skip_hidden and name.startswith("."):
            listing.notes.append((name, "hidden file (the name starts with '.'): left out"))
            continue
        reason = check_pdf(path)
        if reason is None and name in taken:
            reason = f"another file has the same document name ({document_name(str(taken[name]))})"
        if reason is not None:
            listing.refused.append((name, reason))
            continue
        taken[name] = path
        if name != path.name:
            listing.notes.append(
                (
                    name,
                    "the file name is not valid UTF-8: extracted under this name (undecodable bytes written as \\xNN)",
                )
            )
        listing.files.append((path, name))
    return listing

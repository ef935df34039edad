"""PDFs attached to a release's documents, in a prepared folder: each a document of its own, next to its parent.

The extractor (:mod:`.pdf_attachments`) makes every PDF attached to a document (embedded files, a portfolio's
files, file-attachment annotations, nested ones too) a document of its own, ``<parent>#<name>``, with its own
page rows. A prepared folder (:mod:`.release`) keeps them: their pages go into ``pages``, each gets a row of the
``documents`` config after the listed ones (``path`` ``documents/<parent>#<name>``, its PDF written there from
the parent's bytes so page images and file search work as for any document; ``url`` empty, since it is reached
through its parent's; the parent's category and domain), and ``prepared.json`` maps each to the listed document
it came from (``attachments``). Before, their pages were left out with no message.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

from .pdf_attached_stream import copy_bounded
from .pdf_attachments import MAX_ATTACHMENT_BYTES, SEPARATOR, attached_files

logger = logging.getLogger(__name__)


def attachment_roots(documents: Iterable[str], listed: Iterable[str]) -> dict[str, str]:
    """Each of ``documents`` that is an attachment of a listed document (``<listed>#…``, not listed itself) →
    that listed document (the longest listed name that prefixes it, since a name may hold ``#`` itself).

    >>> attachment_roots(["a.pdf", "a.pdf#annex.pdf", "a.pdf#annex.pdf#storm.pdf", "b.pdf#x.pdf"], ["a.pdf"])
    {'a.pdf#annex.pdf': 'a.pdf', 'a.pdf#annex.pdf#storm.pdf': 'a.pdf'}
    """
    names = set(listed)
    roots: dict[str, str] = {}
    for document in sorted(set(documents) - names):
        cut = len(document)
        while (cut := document.rfind(SEPARATOR, 0, cut)) > 0:
            if document[:cut] in names:
                roots[document] = document[:cut]
                break
    return roots


def attachment_bytes(pdf: bytes, names: str) -> bytes | None:
    """The bytes of the attachment ``names`` (``annex.pdf`` or ``annex.pdf#storm.pdf``: nested) of a PDF's bytes,
    named as the extractor names them (:func:`.pdf_attachments.attached_files`); ``None`` when not found.

    Only the one asked for is decoded, through the extractor's bounded stream (up to
    :data:`.pdf_attachments.MAX_ATTACHMENT_BYTES`, the most an extracted attachment can have).
    """
    import pymupdf

    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        found = {attached.name: attached.xref for attached in attached_files(doc)}
        wanted = names if names in found else None
        if wanted is None:  # "a#b.pdf" before "a": a name may hold the separator
            wanted = next((n for n in sorted(found, key=len, reverse=True) if names.startswith(n + SEPARATOR)), None)
        if wanted is None:
            return None
        out = io.BytesIO()
        copied = copy_bounded(doc, found[wanted], out, MAX_ATTACHMENT_BYTES, pdf_only=False)
    if copied.problem or copied.over:
        return None
    if wanted == names:
        return out.getvalue()
    if not copied.is_pdf:
        return None
    return attachment_bytes(out.getvalue(), names[len(wanted) + 1 :])


def write_attachments(pdf_dir: Path, roots: Mapping[str, str]) -> dict[str, str]:
    """Write each attachment's PDF to ``pdf_dir / <document>`` from its listed document's PDF there.

    Returns:
        Document → why its PDF was not written (the document keeps its pages, with no ``path``); each is logged.
    """
    problems: dict[str, str] = {}
    for document, root in sorted(roots.items()):
        target = pdf_dir / document
        try:
            data = attachment_bytes((pdf_dir / root).read_bytes(), document[len(root) + 1 :])
            if data is None:
                problems[document] = f"not found among the files attached to {root}"
            elif not target.is_file() or target.read_bytes() != data:
                tmp = target.with_name(f".{target.name}.tmp")
                tmp.write_bytes(data)
                tmp.replace(target)
        except Exception as exc:  # noqa: BLE001 - a file that cannot be written costs its PDF, never the release
            problems[document] = f"{type(exc).__name__}: {exc}"
    for document, reason in problems.items():
        logger.warning("attached PDF %s: its file could not be written (%s); its pages are kept", document, reason)
    return problems

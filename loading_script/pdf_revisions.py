"""Incremental updates that MuPDF's ``/Prev`` walk would lose: find them in the raw bytes and read them all.

A PDF edited in place keeps every revision: each update appends its changed objects, a new xref section and a
trailer whose ``/Prev`` gives the byte offset of the previous xref section. A reader starts at the last
``startxref`` and follows ``/Prev``. When one ``/Prev`` is wrong, MuPDF either follows it to an older section
(skipping the revision in between: its objects, e.g. an added page or a page's changed content, are silently
lost and nothing is reported as repaired) or, when it points at no xref, repairs the file by scanning.

The rule (:func:`check_revisions`): when the chain is broken — a ``/Prev`` (or the last ``startxref``) that
does not point at an xref section (a classic ``xref`` table or an ``N G obj`` with ``/Type/XRef``), or an xref
section present in the file that the chain does not reach — the file is read again from a copy of its bytes in
which every ``startxref`` keyword is blanked, so MuPDF rebuilds the xref by scanning the objects in file order,
where a later definition of an object replaces an earlier one: the newest definition of every object wins, as a
complete chain would have given. The rebuilt document is used when it has pages, and the file gets one warning
naming the unreachable revision or the bad offset and the page counts when they differ. xref-like bytes inside
a stream (an uncompressed attached PDF) are not revisions and are ignored.

Cost: nothing for an ordinary file. The raw bytes are read only when MuPDF's own open followed more than one xref
section (``version_count``) or repaired the file; a single-revision file is never read twice. Known limit: an
update whose trailer has no ``/Prev`` at all looks like a single revision to MuPDF and is not checked.
"""

from __future__ import annotations

import bisect
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_STREAM_TYPE = re.compile(rb"/Type\s*/XRef(?![A-Za-z])")
_OBJ_HEAD = re.compile(rb"\d+[\x00\t\n\f\r ]+\d+[\x00\t\n\f\r ]+obj\b")
_STARTXREF = re.compile(rb"startxref\s+(\d+)")
_PREV = re.compile(rb"/Prev\s+(\d+)")
_XREFSTM = re.compile(rb"/XRefStm\s+(\d+)")
_WHITE = b"\x00\t\n\f\r "
#: A warning lists this many unreachable revisions and bad pointers of each kind, then counts the others.
LISTED = 5
#: A trailer dictionary longer than this is not one (the scan takes no slice of a file's bulk per token).
_MAX_TRAILER = 1 << 16


@dataclass
class Chain:
    """What the raw bytes say about a file's revisions.

    Attributes:
        sections: byte offsets of every xref section found (tables and streams), in file order.
        reached: those the chain from the last ``startxref`` reaches (via ``/Prev`` or ``/XRefStm``).
        bad_pointers: ``(from, to)``: the section at byte ``from`` (``-1``: the last ``startxref``) points at
            byte ``to``, where no xref section starts.
    """

    sections: list[int] = field(default_factory=list)
    reached: list[int] = field(default_factory=list)
    bad_pointers: list[tuple[int, int]] = field(default_factory=list)

    @property
    def unreachable(self) -> list[int]:
        seen = set(self.reached)
        return [offset for offset in self.sections if offset not in seen]

    @property
    def broken(self) -> bool:
        return bool(self.bad_pointers or self.unreachable)

    def describe(self) -> str:
        """One clause per problem, for the warning: the first :data:`LISTED` of each kind, then how many more."""
        unreachable = self.unreachable
        parts = [f"revision at byte {offset} was not reachable" for offset in unreachable[:LISTED]]
        if len(unreachable) > LISTED:
            parts.append(f"{len(unreachable) - LISTED} more unreachable revisions")
        for source, target in self.bad_pointers[:LISTED]:
            where = "the last startxref" if source < 0 else f"the /Prev of the revision at byte {source}"
            parts.append(f"{where} points at byte {target}, where no xref starts")
        if len(self.bad_pointers) > LISTED:
            parts.append(f"{len(self.bad_pointers) - LISTED} more pointers to no xref")
        return "; ".join(parts)


class _Keywords:
    """Where the keywords the scan needs are, found once each (one pass over the file per keyword), so that
    every question about a position is a binary search: the scan stays linear in the file's size."""

    def __init__(self, data: bytes) -> None:
        self.streams = [m.start() for m in re.finditer(rb"stream", data)]  # "endstream" too: told apart below
        self.ends = {pos for pos in self.streams if data[max(0, pos - 3) : pos] == b"end"}
        self.trailers = [m.start() for m in re.finditer(rb"trailer", data)]
        self.startxrefs = [m.start() for m in re.finditer(rb"startxref", data)]

    def inside_stream(self, pos: int) -> bool:
        """Whether ``pos`` lies between a ``stream`` keyword and its ``endstream`` (stream data, not structure)."""
        k = bisect.bisect_right(self.streams, pos - len(b"stream")) - 1  # the last keyword ending by pos
        return k >= 0 and self.streams[k] not in self.ends

    @staticmethod
    def next(positions: list[int], pos: int) -> int:
        """The first of ``positions`` at or after ``pos`` (``-1``: none)."""
        k = bisect.bisect_left(positions, pos)
        return positions[k] if k < len(positions) else -1


def _sections(data: bytes) -> dict[int, bytes]:
    """``offset → dictionary bytes`` of every xref section: a table's trailer, a stream's own dictionary."""
    keywords = _Keywords(data)
    found: dict[int, bytes] = {}
    pos = -1
    while (pos := data.find(b"xref", pos + 1)) != -1:  # a plain find: many times faster than a regex here
        if pos and data[pos - 1] not in _WHITE or data[pos + 4 : pos + 5] not in _WHITE or keywords.inside_stream(pos):
            continue  # the "xref" of "startxref" or of a name, or stream data
        trailer = keywords.next(keywords.trailers, pos)
        end = keywords.next(keywords.startxrefs, trailer) if trailer != -1 else -1
        # a table's trailer is the next one, shared by any "xref" tokens before it: a stray token costs no copy
        found[pos] = data[trailer:end] if trailer != -1 and end != -1 and end - trailer < _MAX_TRAILER else b""
    for match in _STREAM_TYPE.finditer(data):
        window_start = max(0, match.start() - 256)
        heads = list(_OBJ_HEAD.finditer(data, window_start, match.start()))
        if not heads:
            continue
        pos = heads[-1].start()
        if pos in found or keywords.inside_stream(pos):
            continue
        end = keywords.next(keywords.streams, match.end())
        found[pos] = data[pos : end if end != -1 and end - pos < _MAX_TRAILER else match.end()]
    return dict(sorted(found.items()))


def _resolve(data: bytes, target: int, sections: dict[int, bytes]) -> int | None:
    """The section a pointer means: its exact offset, or the next non-blank byte (writers differ by a newline)."""
    if target in sections:
        return target
    pos = target
    while pos < len(data) and pos - target < 16 and data[pos] in _WHITE:
        pos += 1
    return pos if pos in sections else None


def read_chain(data: bytes) -> Chain:
    """Find every xref section in ``data`` and walk the ``/Prev`` chain from the last ``startxref``."""
    sections = _sections(data)
    chain = Chain(sections=list(sections))
    tail = data.rfind(b"startxref")
    start = _STARTXREF.match(data, tail) if tail != -1 else None
    if start is None:
        return chain  # no usable startxref (truncated): MuPDF repairs such a file itself and says so
    pending: list[tuple[int, int]] = [(-1, int(start.group(1)))]
    reached: set[int] = set()
    while pending:
        source, target = pending.pop()
        offset = _resolve(data, target, sections)
        if offset is None:
            chain.bad_pointers.append((source, target))
            continue
        if offset in reached:
            continue  # a loop, or a hybrid file's stream reached twice
        reached.add(offset)
        chain.reached.append(offset)
        dictionary = sections[offset]
        for pattern in (_XREFSTM, _PREV):  # a hybrid table's /XRefStm belongs to the same revision
            if (found := pattern.search(dictionary)) is not None:
                pending.append((offset, int(found.group(1))))
    return chain


def needs_check(doc: Any) -> bool:
    """Whether a file is worth reading raw: MuPDF followed more than one xref section, or repaired it."""
    try:
        return bool(doc.is_repaired) or int(doc.version_count) > 1
    except Exception:  # noqa: BLE001 - a document MuPDF can barely read: leave it to the usual path
        return False


def check_revisions(doc: Any, path: Path) -> tuple[Any, list[str]]:
    """``(document to read, warnings)``: ``doc`` itself, or one rebuilt by scanning when the chain is broken.

    When a rebuilt document is returned, ``doc`` has been closed. See the module docstring for the rule.
    """
    if not needs_check(doc):
        return doc, []
    try:
        data = path.read_bytes()
    except OSError:
        return doc, []  # the file was readable a moment ago; the usual path reports what follows
    chain = read_chain(data)
    if not chain.broken:
        return doc, []
    rebuilt = _rebuild(data)
    what = chain.describe()
    if rebuilt is None:
        message = f"broken /Prev chain: {what}; rebuilding by scanning failed, read as MuPDF found it"
        logger.info("%s: %s", path.name, message)
        return doc, [message]
    message = f"broken /Prev chain: {what}; read all {len(chain.sections)} revisions by scanning"
    if rebuilt.page_count != doc.page_count:
        message += f" ({rebuilt.page_count} pages, the chain gave {doc.page_count})"
    logger.info("%s: %s", path.name, message)
    doc.close()
    return rebuilt, [message]


def _rebuild(data: bytes) -> Any | None:
    """The document MuPDF rebuilds by scanning ``data`` with every ``startxref`` blanked; ``None`` if none."""
    import pymupdf

    # Blank them all: MuPDF looks for the keyword in the file's tail, and a short last update would leave the
    # previous revision's startxref there, which it would follow instead of scanning.
    blanked = data.replace(b"startxref", b" " * len(b"startxref"))
    pymupdf.TOOLS.mupdf_warnings(reset=True)
    try:
        rebuilt = pymupdf.open(stream=blanked, filetype="pdf")
    except Exception:  # noqa: BLE001 - PyMuPDF raises several unrelated types for broken files
        return None
    pymupdf.TOOLS.mupdf_warnings(reset=True)  # its "repairing" lines are ours, not a page's problem
    if rebuilt.page_count == 0 or rebuilt.needs_pass:
        rebuilt.close()
        return None
    return rebuilt

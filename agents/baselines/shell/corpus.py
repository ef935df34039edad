"""The shell agent's parsed corpus: one text file per page in a folder per document, and reading it back safely.

:func:`write_corpus` is Semtools' ``parse`` step done once per corpus: ``ROOT/<document stem>/page_0001.txt`` for
every page of the pages table (its text layer, OCR included), written under a folder named by a digest of the pages,
so a corpus is parsed once and reused. :func:`read_corpus` reads such a folder back as the ``{relative path: text}``
the worker's commands run over (:mod:`.coreutils`); it takes regular files only and opens them without following a
link (``O_NOFOLLOW``, links skipped and logged), so a link planted in the folder cannot pull a file from outside
it into what the model can read. :class:`CorpusMap` maps the page files back to ``(document, page)``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: A page file's name: ``page_0001.txt`` (1-based, four digits or more).
PAGE_FILE = "page_{:04d}.txt"
PAGE_RX = re.compile(r"(?:^|/)page_(\d+)\.txt$")
#: Bump when the folder's layout changes: a new folder is written.
LAYOUT_VERSION = 1
#: Largest page file read back (characters past it are not read).
MAX_FILE_BYTES = 2_000_000


def folder_name(document: str) -> str:
    """A document's folder: its file name without ``.pdf``, with characters other than ``[A-Za-z0-9._-]`` as ``_``.

    >>> folder_name("1007969.pdf"), folder_name("../a b.PDF")
    ('1007969', '.._a_b')
    """
    stem = document[:-4] if document.lower().endswith(".pdf") else document
    name = re.sub(r"[^A-Za-z0-9._-]", "_", stem) or "_"
    return "_" + name if set(name) == {"."} else name


@dataclass
class CorpusMap:
    """Page files ↔ pages: ``folders`` maps a folder to its document.

    >>> m = CorpusMap.of([{"document": "a.pdf", "page": 2}])
    >>> m.path("a.pdf", 2), m.page("/corpus/a/page_0002.txt"), m.page("a.pdf")
    ('a/page_0002.txt', ('a.pdf', 2), None)
    """

    folders: dict[str, str] = field(default_factory=dict)
    documents: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: Iterable[Mapping[str, Any]]) -> CorpusMap:
        """The map of a pages table (folders made unique in document order)."""
        out = cls()
        for document in sorted({str(r["document"]) for r in rows}):
            name, n = folder_name(document), 1
            while name in out.folders:
                n += 1
                name = f"{folder_name(document)}_{n}"
            out.folders[name], out.documents[document] = document, name
        return out

    def path(self, document: str, page: int) -> str:
        """The corpus-relative file of a page."""
        return f"{self.documents[document]}/{PAGE_FILE.format(page)}"

    def page(self, path: str) -> tuple[str, int] | None:
        """The ``(document, page)`` of a page file path (relative, or under ``/corpus/``), else ``None``."""
        rel = path.strip().removeprefix("/corpus/")
        while rel.startswith("./"):
            rel = rel[2:]
        match = PAGE_RX.search(rel)
        folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
        if match is None or folder not in self.folders:
            return None
        return self.folders[folder], int(match.group(1))

    def document(self, name: str) -> str | None:
        """The document a citation names: its file name, its folder, or one of its page files."""
        name = name.strip()
        if name in self.documents:
            return name
        found = self.page(name)
        if found is not None:
            return found[0]
        return self.folders.get(name.removeprefix("/corpus/").strip("/"))


def write_corpus(rows: Iterable[Mapping[str, Any]], root: str | os.PathLike[str]) -> tuple[Path, CorpusMap]:
    """Write the pages table as page files under ``root/<digest>/`` (reused when complete); the folder and its map."""
    rows = [dict(r) for r in rows]
    mapping = CorpusMap.of(rows)
    digest = hashlib.sha256(f"v{LAYOUT_VERSION}".encode())
    for row in rows:
        for part in (str(row["document"]), str(int(row["page"])), str(row.get("text") or "")):
            digest.update(f"{len(part)}:{part}".encode())
    folder = Path(root) / digest.hexdigest()[:16]
    done = folder / ".complete"
    if done.exists():
        return folder, mapping
    for row in rows:
        path = folder / mapping.path(str(row["document"]), int(row["page"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(row.get("text") or ""), encoding="utf-8")
    done.write_text("", encoding="utf-8")
    logger.info("parsed %d page(s) of %d document(s) into %s", len(rows), len(mapping.folders), folder)
    return folder, mapping


def read_corpus(folder: str | os.PathLike[str]) -> dict[str, str]:
    """The page files beneath ``folder`` as ``{relative path: text}``: regular files only, links never followed."""
    root = Path(folder)
    out: dict[str, str] = {}
    pending = [""]
    while pending:
        rel = pending.pop()
        with os.scandir(root / rel if rel else root) as entries:
            for entry in entries:
                name = f"{rel}/{entry.name}" if rel else entry.name
                if entry.name.startswith("."):
                    continue
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    pending.append(name)
                elif stat.S_ISREG(mode):
                    text = _read_regular(root / name)
                    if text is not None:
                        out[name] = text
                else:
                    logger.warning("shell corpus: %s is not a regular file (a link?); not read", name)
    return dict(sorted(out.items()))


def _read_regular(path: Path) -> str | None:
    """A regular file's text, opened without following a link (``None``: it is a link by now, or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        logger.warning("shell corpus: %s not read (%s)", path.name, exc)
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(MAX_FILE_BYTES).decode("utf-8", "replace")

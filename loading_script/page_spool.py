"""Page rows kept on disk while a corpus is extracted, so the parent process stays small.

:func:`.extract.extract_corpus` hands each finished file's rows to a :class:`PageSpool` instead of keeping them in
memory: the rows are appended to a JSONL file in the order files finish, and only the byte range of each document
is remembered. :meth:`PageSpool.rows` reads them back sorted by ``(document, page)``, one document at a time, to
write the output file. The parent's memory then grows with the number of files, not with the text of their pages
(in a memory cgroup the kernel's OOM killer picks the largest process: it should be a worker, which costs one file,
not the parent, which costs the run).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any


class PageSpool:
    """An append-only on-disk store of page rows, read back in ``(document, page)`` order.

    Args:
        folder: where the temporary file is created (next to the output file, so it is on the same disk); it is
            removed by :meth:`close` (or leaving the ``with`` block).
    """

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=".madqa-pages-", suffix=".jsonl", dir=folder)
        self.path = Path(name)
        self._file = os.fdopen(handle, "w+b")
        self._spans: dict[str, list[tuple[int, int]]] = {}
        self.count = 0

    def add(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append page rows (any documents, any order)."""
        for row in rows:
            line = json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n"
            start = self._file.seek(0, os.SEEK_END)
            self._file.write(line)
            self._spans.setdefault(str(row["document"]), []).append((start, len(line)))
            self.count += 1

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every row, sorted by ``(document, page)``; only one document's rows are in memory at a time."""
        self._file.flush()
        for document in sorted(self._spans):
            batch = []
            for start, size in self._spans[document]:
                self._file.seek(start)
                batch.append(json.loads(self._file.read(size)))
            batch.sort(key=lambda row: int(row["page"]))
            yield from batch

    def close(self) -> None:
        """Remove the temporary file."""
        self._file.close()
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> PageSpool:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

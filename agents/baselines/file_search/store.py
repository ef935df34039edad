"""The corpus as uploaded files, and the on-disk cache of the services' store ids.

A store is built once per (provider, endpoint, dataset, file content) and reused: its ids (the vector store or
file search store, and each document's file) are kept in ``$MADQA_HOME/file_search/stores.json`` under
:func:`cache_key`. The next run finds them there, asks the service whether the store still exists (one cheap
call), and uploads nothing; ``--refresh-store`` (or a store the service no longer has) uploads the collection again.
The content digest is over every document's name and SHA-256, so an edited PDF makes a new store.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from madqa.loading_script.pdf_text import sha256_file

logger = logging.getLogger(__name__)

_LOCK = threading.Lock()


@dataclass(frozen=True)
class CorpusFile:
    """One PDF of the collection: its document name, local path and SHA-256."""

    document: str
    path: Path
    sha256: str


@dataclass(frozen=True)
class StoreEntry:
    """A built store: the service's store id and each document's file id there."""

    store: str
    files: Mapping[str, str] = field(default_factory=dict)


def content_digest(files: Iterable[CorpusFile]) -> str:
    """One digest of the collection: every document's name and SHA-256, in name order.

    >>> a = CorpusFile("a.pdf", Path("x"), "00")
    >>> content_digest([a]) == content_digest([a]) != content_digest([CorpusFile("a.pdf", Path("x"), "01")])
    True
    """
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.document):
        digest.update(f"{f.document}\0{f.sha256}\n".encode())
    return digest.hexdigest()


def cache_key(provider: str, endpoint: str, dataset: str, digest: str) -> str:
    """The cache entry's name: readable provider and dataset, then a hash of all four parts.

    >>> cache_key("openai", "https://api.openai.com/v1", "sample", "ab")[:14]
    'openai/sample/'
    """
    parts = json.dumps([provider, endpoint.rstrip("/"), dataset, digest])
    return f"{provider}/{dataset}/{hashlib.sha256(parts.encode()).hexdigest()[:24]}"


def default_cache_file() -> Path:
    """``$MADQA_HOME/file_search/stores.json`` (outside the public dataset folder)."""
    from madqa.loading_script.paths import Layout

    return Path(Layout.default().root) / "file_search" / "stores.json"


class StoreCache:
    """The JSON file of built stores, read and rewritten whole (atomically) under a process lock."""

    def __init__(self, path: Path | None = None) -> None:
        """``path``: the cache file (default :func:`default_cache_file`)."""
        self.path = path or default_cache_file()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            logger.warning("%s: unreadable store cache (%s); the stores will be built again", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> StoreEntry | None:
        """The cached store of ``key``, if any."""
        with _LOCK:
            value = self._read().get(key)
        if not isinstance(value, Mapping) or not isinstance(value.get("store"), str):
            return None
        files = value.get("files")
        ids = {str(k): str(v) for k, v in files.items()} if isinstance(files, Mapping) else {}
        return StoreEntry(value["store"], ids)

    def put(self, key: str, entry: StoreEntry, **about: Any) -> None:
        """Record ``entry`` under ``key`` (``about``: readable facts kept with it)."""
        with _LOCK:
            data = self._read()
            data[key] = {"store": entry.store, "files": dict(entry.files), **about}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".stores.", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1, sort_keys=True)
            os.replace(tmp, self.path)


def corpus_files(dataset: str | None) -> list[CorpusFile]:
    """The dataset's PDFs as :class:`CorpusFile` values, in name order (a document that cannot be fetched is
    logged and left out, as ``madqa setup`` does)."""
    from madqa.loading_script.load import DatasetUnavailableError, document_file, load_documents

    out: list[CorpusFile] = []
    for record in load_documents(dataset):
        name = str(record["document"])
        try:
            path = document_file(record, dataset)
        except (DatasetUnavailableError, OSError) as exc:
            logger.warning("file-search: leaving out %s: %s", name, exc)
            continue
        out.append(CorpusFile(name, path, sha256_file(path)))
    return sorted(out, key=lambda f: f.document)


def page_texts(pages: Sequence[Mapping[str, Any]]) -> dict[str, dict[int, str]]:
    """``{document: {page: text}}`` of the page corpus."""
    out: dict[str, dict[int, str]] = {}
    for row in pages:
        out.setdefault(str(row["document"]), {})[int(row["page"])] = str(row.get("text") or "")
    return out

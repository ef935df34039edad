"""The single-stage retrievers: ``bm25`` over the page search index, ``dense:EMBEDDER`` over cached page vectors."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from madqa.agents.corpus.retrieval.base import manifest_seconds
from madqa.agents.corpus.search.base import PageHit, PageRecord, QuerySyntaxError, SearchIndex
from madqa.agents.corpus.search.index import index_manifest, pages_digest
from madqa.agents.corpus.search.query import or_query

logger = logging.getLogger(__name__)

#: Bump when what is cached changes (the page text sent to the embedder, the file layout): old caches are rebuilt.
CACHE_VERSION = 1


class BM25Retriever:
    """The page search index (BM25F, Whoosh) queried with an OR of the query's words (:func:`or_query`)."""

    name = "bm25"

    def __init__(self, index: SearchIndex, max_terms: int = 24) -> None:
        self.index, self.max_terms = index, max_terms

    @property
    def build_seconds(self) -> float | None:
        """Seconds the search index took to build (its manifest; ``None`` when it does not say)."""
        return manifest_seconds(index_manifest(self.index) or {})

    def search(self, query: str, k: int = 10) -> list[PageHit]:
        text = or_query(query, self.max_terms)
        if not text:
            return []
        try:
            return self.index.search(text, k=k)
        except QuerySyntaxError:  # only stop words, or too broad: nothing this ranker can rank
            return []


def default_cache_dir() -> Path:
    """Where page vectors are cached: ``$MADQA_HOME/embeddings`` (outside the public dataset folder)."""
    from madqa.loading_script.paths import Layout

    return Layout.default().root / "embeddings"


class DenseRetriever:
    """Cosine similarity between the query's vector and every page's (unit vectors: a dot product).

    Page vectors are computed once per (embedder, its library version, page content) and cached as ``.npy`` next to
    a manifest; a cache whose manifest does not match is rebuilt. Memory: pages × dim float32 (18,619 pages × 256
    dims = 19 MB).

    Args:
        embedder: a :class:`madqa.agents.corpus.embeddings.Embedder`.
        records: the corpus (``prepare_pages``).
        cache_dir: folder of caches (default :func:`default_cache_dir`); ``None`` uses the default.
        progress: show the embedder's progress bar while embedding pages.
    """

    def __init__(
        self,
        embedder: Any,
        records: Sequence[PageRecord],
        cache_dir: str | os.PathLike[str] | None = None,
        *,
        progress: bool = False,
    ) -> None:
        self.embedder = embedder
        self.name = f"dense:{embedder.name}"
        self.keys = [(r.document, r.page) for r in records]
        self._row = {key: i for i, key in enumerate(self.keys)}
        #: Seconds the page vectors took to embed (their cache's manifest; ``None`` for an older cache).
        self.build_seconds: float | None = None
        self.vectors = self._vectors(records, Path(cache_dir) if cache_dir else default_cache_dir(), progress)

    def _vectors(self, records: Sequence[PageRecord], root: Path, progress: bool) -> np.ndarray:
        key = hashlib.sha256(f"v{CACHE_VERSION}\0{self.embedder.cache_key}\0{pages_digest(records)}".encode())
        digest = key.hexdigest()
        folder = root / digest[:24]
        manifest_path, array_path = folder / "manifest.json", folder / "vectors.npy"
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            if manifest.get("digest") == digest and manifest.get("pages") == len(records):
                vectors = np.load(array_path, allow_pickle=False)
                if vectors.shape == (len(records), self.embedder.dim):
                    logger.debug("page vectors of %s from %s", self.name, folder)
                    self.build_seconds = manifest_seconds(manifest)
                    return vectors.astype(np.float32, copy=False)
        except (OSError, ValueError):
            pass
        logger.info("embedding %d pages with %s (cached in %s)", len(records), self.embedder.name, folder)
        start = time.perf_counter()
        vectors = self.embedder.embed([r.text for r in records], progress=progress).astype(np.float32, copy=False)
        self.build_seconds = round(time.perf_counter() - start, 3)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"vectors.{os.getpid()}.npy"
        np.save(tmp, vectors, allow_pickle=False)
        os.replace(tmp, array_path)  # the manifest is written last: a half-written cache is never read
        manifest_path.write_text(
            json.dumps(
                {
                    "digest": digest,
                    "pages": len(records),
                    "embedder": self.embedder.name,
                    "cache_key": self.embedder.cache_key,
                    "build_seconds": self.build_seconds,
                }
            ),
            encoding="utf-8",
        )
        return vectors

    def _query_vector(self, query: str) -> np.ndarray | None:
        if not query.strip():
            return None
        vector = self.embedder.embed([query])[0]
        return vector if np.any(vector) else None

    def search(self, query: str, k: int = 10) -> list[PageHit]:
        vector = self._query_vector(query)
        if vector is None or not self.keys or k <= 0:
            return []
        scores = self.vectors @ vector
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]  # best first; ties by corpus order
        return [PageHit(self.keys[i][0], self.keys[i][1], float(scores[i])) for i in top]

    def rerank(self, query: str, pages: Sequence[tuple[str, int]]) -> list[PageHit]:
        vector = self._query_vector(query)
        rows = [(i, self._row[p]) for i, p in enumerate(pages) if p in self._row]
        if vector is None:
            return [PageHit(pages[i][0], pages[i][1], 0.0) for i, _ in rows]
        scored = [(float(self.vectors[r] @ vector), i, r) for i, r in rows]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [PageHit(self.keys[r][0], self.keys[r][1], s) for s, _, r in scored]

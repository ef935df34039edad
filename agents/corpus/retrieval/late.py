"""Retrievers over learned page vectors: ``colbert:`` (text, late interaction), ``colpali:`` (page images,
late interaction) and ``dse:`` (page images, one vector), on one :class:`VectorRetriever`.

The retriever is model-agnostic: a :class:`PageEncoder` (:mod:`.encoders` holds the real ones) turns queries and
page inputs (page texts, or page images from the project's :class:`~madqa.agents.corpus.render.PageRenderer`) into
vectors. The pages are encoded once per corpus, in batches of the encoder's ``batch_size`` with a tqdm bar, into a
:class:`~.vectors.VectorStore` cached under ``cache_dir`` (default ``$MADQA_HOME/embeddings``, as ``dense:``) and
keyed by the encoder's ``cache_key`` (model, settings, library versions) and the page content: the pages' text
(:func:`~madqa.agents.corpus.search.index.pages_digest`), and for images also each PDF's bytes and the render settings.
A second build over the same corpus reads the cache and never calls the model on pages.

Scores are MaxSim (:func:`~.vectors.maxsim_scores`); for a one-vector encoder that is the cosine similarity.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from madqa.agents.corpus.retrieval.base import RetrievalError
from madqa.agents.corpus.retrieval.vectors import SCORE_CHUNK_MB, StoreWriter, VectorStore, cache_folder, maxsim_scores
from madqa.agents.corpus.search.base import PageHit, PageRecord
from madqa.agents.corpus.search.index import pages_digest

logger = logging.getLogger(__name__)


@runtime_checkable
class PageEncoder(Protocol):
    """Turns queries and pages into vectors (one or more per item, each row unit-norm).

    Attributes:
        name: the canonical spec (``colpali:vidore/colqwen2.5-v0.2``); the retriever's name.
        cache_key: ``name`` plus every setting and library version that changes the vectors.
        modality: ``"text"`` (pages given as their text) or ``"image"`` (pages given as PIL images).
        batch_size: pages per model call while building.
    """

    name: str
    cache_key: str
    modality: str
    batch_size: int

    def encode_queries(self, queries: Sequence[str]) -> list[np.ndarray]:
        """One float32 ``(n_i, dim)`` array per query."""
        ...

    def encode_pages(self, pages: Sequence[Any]) -> list[np.ndarray]:
        """One float32 ``(n_i, dim)`` array per page (page texts or page images, by ``modality``)."""
        ...


def image_content_digest(records: Sequence[PageRecord], renderer: Any) -> str:
    """What page images depend on: the pages (text digest), each PDF file's bytes, the render settings (or the
    renderer's own ``content_key``)."""
    h = hashlib.sha256(pages_digest(records).encode())
    settings = [getattr(renderer, name, None) for name in ("dpi", "max_side", "max_pixels")]
    h.update(repr(settings).encode())
    # a renderer that reads no PDF (the page images an MTEB corpus hands over) says what its images depend on
    content_key = getattr(renderer, "content_key", None)
    if content_key is not None:
        h.update(f"\0content {content_key}".encode())
    locate = getattr(renderer, "_path", None)  # the renderer's one document-to-file resolver
    for document in sorted({r.document for r in records}):
        h.update(f"\0{len(document)}:{document}".encode())
        try:
            path = Path(locate(document)) if locate else None
            if path is not None:
                with path.open("rb") as fh:
                    h.update(hashlib.file_digest(fh, "sha256").digest())
        except (OSError, LookupError, TypeError):
            h.update(b"?")  # not resolvable here: keyed by its name and pages only
    return h.hexdigest()


class VectorRetriever:
    """Ranks pages by MaxSim between the query's vectors and each page's cached vectors.

    Args:
        encoder: a :class:`PageEncoder`.
        records: the corpus (``prepare_pages``).
        renderer: the page renderer (needed when ``encoder.modality == "image"``).
        cache_dir: folder of caches (default ``$MADQA_HOME/embeddings``).
        progress: show a progress bar while encoding pages.
        chunk_mb: memory bound of one scoring chunk (:data:`~.vectors.SCORE_CHUNK_MB`).
    """

    def __init__(
        self,
        encoder: PageEncoder,
        records: Sequence[PageRecord],
        *,
        renderer: Any = None,
        cache_dir: str | os.PathLike[str] | None = None,
        progress: bool = False,
        chunk_mb: float = SCORE_CHUNK_MB,
    ) -> None:
        if encoder.modality == "image" and renderer is None:
            raise RetrievalError(f"{encoder.name}: page-image retrievers need the PDFs (a page renderer)")
        self.encoder, self.renderer, self.chunk_mb = encoder, renderer, chunk_mb
        self.name = encoder.name
        self.keys = [(r.document, r.page) for r in records]
        self._row = {key: i for i, key in enumerate(self.keys)}
        self.page_calls = 0
        if cache_dir is None:
            from madqa.agents.corpus.retrieval.rankers import default_cache_dir

            cache_dir = default_cache_dir()
        self.records, self.cache_root = list(records), Path(cache_dir)
        image = self.encoder.modality == "image"
        self.content = image_content_digest(records, self.renderer) if image else pages_digest(records)
        self.store = self._store(records, self.cache_root, progress)

    @property
    def build_seconds(self) -> float | None:
        """Seconds the page vectors took to encode (their cache's manifest; ``None`` for an older cache)."""
        return self.store.build_seconds

    def _store(self, records: Sequence[PageRecord], root: Path, progress: bool) -> VectorStore:
        folder, digest = cache_folder(root, self.encoder.cache_key, self.content)
        store = VectorStore.open(folder, digest, len(records))
        if store is not None:
            logger.debug("page vectors of %s from %s", self.name, folder)
            return store
        logger.info("encoding %d pages with %s (cached in %s)", len(records), self.name, folder)
        writer = StoreWriter(folder, digest, {"encoder": self.name, "cache_key": self.encoder.cache_key})
        for batch in self._batches(records, progress):
            self.page_calls += 1
            vectors = self.encoder.encode_pages(batch)
            if len(vectors) != len(batch):
                raise RetrievalError(f"{self.name}: the encoder returned {len(vectors)} pages for {len(batch)}")
            writer.add(vectors)
        return writer.close()

    def _batches(self, records: Sequence[PageRecord], progress: bool) -> Iterator[list[Any]]:
        from tqdm.auto import tqdm

        size = max(1, int(self.encoder.batch_size))
        with tqdm(total=len(records), desc=f"{self.name} pages", unit="page", disable=not progress) as bar:
            for start in range(0, len(records), size):
                chunk = records[start : start + size]
                if self.encoder.modality == "image":
                    yield [self.renderer.image(r.document, r.page).convert("RGB") for r in chunk]
                else:
                    yield [r.text for r in chunk]
                bar.update(len(chunk))

    def _query(self, query: str) -> np.ndarray | None:
        if not query.strip():
            return None
        (vectors,) = self.encoder.encode_queries([query])
        vectors = np.asarray(vectors, dtype=np.float32)
        return vectors if vectors.size and np.any(vectors) else None

    def search(self, query: str, k: int = 10) -> list[PageHit]:
        vectors = self._query(query)
        if vectors is None or not self.keys or k <= 0:
            return []
        scores = maxsim_scores(vectors, self.store, chunk_mb=self.chunk_mb)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]  # best first; ties by corpus order
        return [PageHit(self.keys[i][0], self.keys[i][1], float(scores[i])) for i in top]

    def rerank_filtered(self, query: str, pages: Sequence[tuple[str, int]], ratio: float) -> list[PageHit]:
        """HEAVEN's query filter (G.3): ``pages`` scored by MaxSim over the query's key tokens (content words,
        :func:`~.heaven.key_tokens`), then the best ``ratio`` of them also over the other tokens, best first.

        Without the query's tokens (an encoder with no ``query_tokens``) or key tokens, this is :meth:`rerank`.
        """
        from madqa.agents.corpus.retrieval.heaven import key_tokens

        vectors = self._query(query)
        tokens = getattr(self.encoder, "query_tokens", None)
        if vectors is None or tokens is None:
            return self.rerank(query, pages)
        key = key_tokens(tokens([query])[0])
        if len(key) != len(vectors) or not key.any() or key.all():
            return self.rerank(query, pages)
        rows = [(i, self._row[p]) for i, p in enumerate(pages) if p in self._row]
        scores = maxsim_scores(vectors[key], self.store, [r for _, r in rows], chunk_mb=self.chunk_mb)
        refine = np.argsort(-scores, kind="stable")[: max(1, int(len(rows) * ratio))]
        rest = maxsim_scores(vectors[~key], self.store, [rows[i][1] for i in refine], chunk_mb=self.chunk_mb)
        scores[refine] += rest
        scored = sorted(zip(scores.tolist(), rows, strict=True), key=lambda t: (-t[0], t[1][0]))
        return [PageHit(self.keys[r][0], self.keys[r][1], float(s)) for s, (_, r) in scored]

    def rerank(self, query: str, pages: Sequence[tuple[str, int]]) -> list[PageHit]:
        rows = [(i, self._row[p]) for i, p in enumerate(pages) if p in self._row]
        vectors = self._query(query)
        if vectors is None:
            return [PageHit(pages[i][0], pages[i][1], 0.0) for i, _ in rows]
        scores = maxsim_scores(vectors, self.store, [r for _, r in rows], chunk_mb=self.chunk_mb)
        scored = sorted(zip(scores.tolist(), rows, strict=True), key=lambda t: (-t[0], t[1][0]))
        return [PageHit(self.keys[r][0], self.keys[r][1], float(s)) for s, (_, r) in scored]

"""HEAVEN's two options (Kim et al. 2025; the paper's G.3, Table 13): VS-pages in stage 1, the query filter in
stage 2. Both are off unless asked for (``hybrid:vs_pages=15:query_filter=0.25:dse:…>colpali:…``).

**VS-pages** (:class:`VSPageRetriever`, stage 1). Each document's pages are grouped: one group for a document of
at most :data:`CHUNK_PAGES` (20) pages, else groups of ``reduction`` (r = 15) consecutive pages. A group's
visually-summarised page assembles a region of each of its pages, stacked and centred on white; it is encoded by
the first stage's own encoder and cached beside its page vectors. A page's VS score is its group's; only the best
``vs_filter`` (0.5) of all pages by VS score keep their own score, and a page scores
``alpha * vs + (1 - alpha) * page`` (alpha 0.1; HEAVEN's stage-1 combination). HEAVEN takes the title regions
that DocLayout-YOLO detects; no layout model runs here, so the region is the page's top :data:`TITLE_BAND` (15 %)
of its height, where titles and running heads sit (for a text encoder: the page's first line).

**Query filter** (:meth:`~.late.VectorRetriever.rerank_filtered`, stage 2). The candidates are scored by MaxSim
over the query's key tokens only; the best ``query_filter`` (rho = 0.25) of them also over the remaining tokens,
which completes their MaxSim. HEAVEN's key tokens are NLTK's nouns; NLTK's tagger data cannot be fetched here, so a
key token is a content word (:func:`key_tokens`: letters or digits, two or more, not a stop word).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from madqa.agents.corpus.retrieval.base import RetrievalError, build_seconds
from madqa.agents.corpus.retrieval.vectors import StoreWriter, VectorStore, cache_folder, maxsim_scores
from madqa.agents.corpus.search.base import PageHit, PageRecord

#: HEAVEN's VS-page settings (Table 13): r, the share of pages kept by VS score, the VS score's weight.
VS_DEFAULTS = {"vs_pages": 15, "vs_filter": 0.5, "alpha": 0.1}
#: A document of at most this many pages is one VS-page (HEAVEN's ``chunk_threshold``).
CHUNK_PAGES = 20
#: Share of a page's height taken as its title region.
TITLE_BAND = 0.15
STOP_WORDS = frozenset(
    "a about above after again against all am an and any are as at be because been before being below between both "
    "but by can could did do does doing down during each few for from further had has have having he her here hers "
    "him his how i if in into is it its itself just me more most my no nor not now of off on once only or other our "
    "ours out over own same she should so some such than that the their theirs them then there these they this "
    "those through to too under until up very was we were what when where which while who whom why will with would "
    "you your yours query".split()
)


def key_tokens(tokens: Sequence[str]) -> np.ndarray:
    """Which query tokens are key tokens: content words (see the module docstring); special tokens never are."""
    out = []
    for token in tokens:
        word = token.replace("Ġ", " ").replace("▁", " ").removeprefix("##").strip().lower()
        out.append(word.isalnum() and len(word) > 1 and word not in STOP_WORDS)
    return np.asarray(out, dtype=bool)


def vs_groups(records: Sequence[PageRecord], reduction: int) -> list[list[int]]:
    """Rows of ``records`` in each VS-page: a document's pages in page order, one group or groups of ``reduction``."""
    by_doc: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        by_doc.setdefault(r.document, []).append(i)
    groups = []
    for rows in by_doc.values():
        rows.sort(key=lambda i: records[i].page)
        size = len(rows) if len(rows) <= CHUNK_PAGES else reduction
        groups.extend(rows[i : i + size] for i in range(0, len(rows), size))
    return groups


def vs_page_image(images: Sequence[Any], band: float = TITLE_BAND) -> Any:
    """The top ``band`` of each page image, stacked and centred on white (HEAVEN's padding assembly)."""
    from PIL import Image

    regions = [im.convert("RGB").crop((0, 0, im.width, max(1, round(im.height * band)))) for im in images]
    width = max(r.width for r in regions)
    canvas = Image.new("RGB", (width, sum(r.height for r in regions)), "white")
    y = 0
    for region in regions:
        canvas.paste(region, ((width - region.width) // 2, y))
        y += region.height
    return canvas


class VSPageRetriever:
    """A vector retriever's stage 1 over VS-pages (see the module docstring); its ``base`` holds the page vectors."""

    def __init__(self, base: Any, reduction: int = 15, vs_filter: float = 0.5, alpha: float = 0.1) -> None:
        if reduction < 1 or not 0.0 < vs_filter <= 1.0 or not 0.0 <= alpha <= 1.0:
            raise RetrievalError(
                f"hybrid: vs_pages must be positive, vs_filter in (0, 1] and alpha in [0, 1] "
                f"(got {reduction}, {vs_filter}, {alpha})"
            )
        self.base, self.reduction, self.vs_filter, self.alpha = base, reduction, vs_filter, alpha
        self.name = base.name
        self.groups = vs_groups(base.records, reduction)
        self.group_of = np.zeros(len(base.records), dtype=np.int64)
        for g, rows in enumerate(self.groups):
            self.group_of[rows] = g
        self.page_calls = 0
        self.store = self._store()

    @property
    def build_seconds(self) -> float | None:
        """Seconds the VS-page vectors and the base's page vectors took to encode."""
        return build_seconds(self.store, self.base)

    def _inputs(self, rows: list[int]) -> Any:
        records = [self.base.records[i] for i in rows]
        if self.base.encoder.modality == "image":
            return vs_page_image([self.base.renderer.image(r.document, r.page) for r in records])
        return "\n".join((r.text.strip().splitlines() or [""])[0] for r in records)

    def _store(self) -> VectorStore:
        encoder = self.base.encoder
        key = f"{encoder.cache_key}|vs-pages r{self.reduction} chunk{CHUNK_PAGES} band{TITLE_BAND}"
        folder, digest = cache_folder(self.base.cache_root, key, self.base.content)
        store = VectorStore.open(folder, digest, len(self.groups))
        if store is not None:
            return store
        writer = StoreWriter(folder, digest, {"encoder": self.name, "cache_key": key})
        size = max(1, int(encoder.batch_size))
        for start in range(0, len(self.groups), size):
            self.page_calls += 1
            batch = [self._inputs(rows) for rows in self.groups[start : start + size]]
            writer.add(encoder.encode_pages(batch))
        return writer.close()

    def scores(self, query: str) -> np.ndarray | None:
        """Every page's stage-1 score (corpus order), or ``None`` for an empty query."""
        vectors = self.base._query(query)
        if vectors is None or not len(self.base.keys):
            return None
        page = maxsim_scores(vectors, self.base.store, chunk_mb=self.base.chunk_mb)
        vs = maxsim_scores(vectors, self.store, chunk_mb=self.base.chunk_mb)[self.group_of]
        keep = np.zeros(len(page), dtype=bool)
        keep[np.argsort(-vs, kind="stable")[: max(1, int(self.vs_filter * len(page)))]] = True
        return np.asarray(self.alpha * vs + (1 - self.alpha) * page * keep, dtype=np.float32)

    def search(self, query: str, k: int = 10) -> list[PageHit]:
        scores = self.scores(query)
        if scores is None or k <= 0:
            return []
        top = np.lexsort((np.arange(len(scores)), -scores))[:k]  # best first; ties by corpus order
        return [PageHit(self.base.keys[i][0], self.base.keys[i][1], float(scores[i])) for i in top]

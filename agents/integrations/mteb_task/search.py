"""Any ``madqa retrieval`` retriever as an mteb search model (mteb's ``SearchProtocol``), and the offline
``wordllama`` embedder as an mteb encoder.

:class:`RetrieverSearch` ranks with :func:`madqa.agents.corpus.retrieval.spec.make_retriever` (``bm25``,
``dense:wordllama``, ``rrf:…``, ``colpali:…``) over the pages the task's corpus names, and hands mteb each ranking with
the scores ``madqa retrieval`` scores it with: ``n + 1 - rank`` for ``n`` pages ranked (see
:mod:`madqa.agents.corpus.retrieval.evaluation`: engines tie, and trec_eval, mteb's ``pytrec_eval`` among them,
would re-order tied scores by page id). So mteb scores exactly the ranking ``madqa retrieval`` scores.

:class:`WordllamaEncoder` lets mteb do the search itself (its dense search over the embedder's vectors): a model
that needs no download, for trying the tasks offline.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from madqa.agents.integrations.mteb_task.data import DatasetSpec, parse_page_id


def _model_meta(name: str, kind: str, modalities: Sequence[str], embed_dim: int | None = None) -> Any:
    from mteb.models.model_meta import ModelMeta

    return ModelMeta(
        loader=None,
        name=name,
        model_type=[kind],
        revision="madqa",
        release_date=None,
        languages=None,
        n_parameters=None,
        memory_usage_mb=None,
        max_tokens=None,
        embed_dim=embed_dim,
        license=None,
        open_weights=True,
        public_training_code=None,
        public_training_data=None,
        framework=[],
        similarity_fn_name="cosine" if kind == "dense" else None,
        use_instructions=False,
        training_datasets=None,
        modalities=list(modalities),
    )


class CorpusImages:
    """The page images of an mteb image corpus, as the renderer a page-image retriever reads (``image``), so that
    ``colpali:``/``dse:`` encode exactly the images the task hands over. Images are decoded one at a time, as asked;
    ``content_key`` (a digest of their encoded bytes) keys the retriever's vector cache."""

    def __init__(self, corpus: Any) -> None:
        from datasets import Image

        self.corpus = corpus
        self.rows = {parse_page_id(i): row for row, i in enumerate(corpus["id"])}
        digest = hashlib.sha256()
        for row in corpus.cast_column("image", Image(decode=False)):
            encoded = row["image"]
            digest.update(f"{row['id']}\0{len(encoded['bytes'] or b'')}\0{encoded['path']}\0".encode())
            digest.update(encoded["bytes"] or b"")
        self.content_key = digest.hexdigest()

    def image(self, document: str, page: int) -> Any:
        return self.corpus[self.rows[(document, page)]]["image"]


class RetrieverSearch:
    """A ``madqa retrieval`` retriever spec as an mteb search model.

    Args:
        spec: the retriever spec (``madqa retrieval --retriever``), e.g. ``dense:wordllama``.
        dataset: the dataset whose pages rows the retriever indexes (their text; a page-image retriever reads the
            corpus's images, or renders the dataset's PDFs for a text corpus); the corpus mteb passes names which
            pages (by id) and in what order.
        cache_dir: where dense retrievers cache page vectors (default: ``$MADQA_HOME/embeddings``).
    """

    def __init__(self, spec: str, dataset: DatasetSpec = None, cache_dir: Any = None) -> None:
        self.spec, self.dataset, self.cache_dir = spec, dataset, cache_dir
        self.retriever: Any = None
        self.pages = 0
        from madqa.agents.corpus.retrieval.spec import reads_page_images

        modalities = ["text", "image"] if reads_page_images(spec) else ["text"]
        self.mteb_model_meta = _model_meta(f"madqa/{spec}", "sparse" if spec == "bm25" else "dense", modalities)

    def index(self, corpus: Any, **kwargs: Any) -> None:
        """Build the retriever over the dataset's pages that ``corpus`` names, in the corpus's order; a page-image
        retriever reads the corpus's images when it has them (the image task), else renders the dataset's PDFs."""
        from madqa.agents.corpus.retrieval.spec import make_retriever
        from madqa.loading_script.load import load_pages

        rows = {(p["document"], int(p["page"])): p for p in load_pages(self.dataset)}
        wanted = [parse_page_id(i) for i in corpus["id"]]
        missing = [key for key in wanted if key not in rows]
        if missing:
            raise ValueError(f"{len(missing)} corpus page(s) are not pages of the dataset, e.g. {missing[0]}")
        pages = [rows[key] for key in wanted]
        self.pages = len(pages)
        renderer = CorpusImages(corpus) if "image" in corpus.column_names else None
        self.retriever = make_retriever(
            self.spec, pages, dataset=self.dataset, cache_dir=self.cache_dir, renderer=renderer
        )

    def search(self, queries: Any, *, top_k: int, **kwargs: Any) -> dict[str, dict[str, float]]:
        """Each query's top ``top_k`` pages, scored ``n + 1 - rank`` (the order ``madqa retrieval`` scores)."""
        from madqa.agents.corpus.retrieval.evaluation import page_id

        if self.retriever is None:
            raise RuntimeError("index the corpus before searching it")
        out: dict[str, dict[str, float]] = {}
        for qid, text in zip(queries["id"], queries["text"], strict=True):
            hits = self.retriever.search(text, k=min(top_k, self.pages))
            out[qid] = {page_id(h.document, h.page): float(len(hits) - i) for i, h in enumerate(hits)}
        return out


class WordllamaEncoder:
    """The project's offline default embedder (:func:`madqa.agents.corpus.embeddings.make_embedder`) as an mteb
    encoder: texts only, unit vectors, cosine similarity."""

    def __init__(self, spec: str = "wordllama") -> None:
        from madqa.agents.corpus.embeddings import make_embedder

        self.embedder = make_embedder(spec)
        self.mteb_model_meta = _model_meta(f"madqa/{self.embedder.name}", "dense", ["text"], self.embedder.dim)

    def encode(self, inputs: Any, **kwargs: Any) -> np.ndarray:
        """The vectors of every text in mteb's batches, in order."""
        texts = [text for batch in inputs for text in batch["text"]]
        return self.embedder.embed(texts)

    def similarity(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Cosine similarity of unit vectors: their dot products."""
        return np.asarray(embeddings1, np.float32) @ np.asarray(embeddings2, np.float32).T

    def similarity_pairwise(self, embeddings1: Any, embeddings2: Any) -> Any:
        """Row by row cosine similarity of unit vectors."""
        return np.sum(np.asarray(embeddings1, np.float32) * np.asarray(embeddings2, np.float32), axis=1)

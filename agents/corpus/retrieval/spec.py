"""``make_retriever(spec, pages)``: one spec string → one :class:`~.base.Retriever` over a corpus.

Specs: ``bm25``; ``dense:EMBEDDER`` (an :mod:`madqa.agents.corpus.embeddings` spec: ``dense:wordllama``,
``dense:wordllama:128``, ``dense:st:MODEL``); ``rrf:A+B[+C…]``; ``hybrid:A>B`` (A's top candidates re-ranked by
B, which must be a vector retriever); and on learned page vectors (:mod:`.late`, pip extra ``late``):
``colbert:MODEL`` (text late interaction), ``colpali:MODEL`` (page images, late interaction: ColPali, ColQwen2,
ColQwen2.5, ColSmol) and ``dse:MODEL`` (page images, one vector). ``MODEL`` is a Hub id or a local folder; left
out (``colpali``), the paper's model (:data:`DEFAULT_MODELS`).

Options follow the model as ``:key=value`` parts: ``device=auto|cpu|cuda[:N]`` and ``batch_size=N`` (how it runs,
not part of the name) and the settings that change the vectors (part of the name and the cache key):
``query_length``/``doc_length`` (colbert), ``arch``/``max_visual_tokens`` (colpali), ``dim``/``min_pixels``/
``max_pixels`` (dse). ``hybrid:`` takes ``candidates=N`` and ``beta=X`` first: ``hybrid:candidates=100:A>B``.
``hybrid:dse:…>colpali:…`` is HEAVEN (G.3) and defaults to its stage-2 settings: 200 candidates, beta 0.3; its
options ``vs_pages=R`` (with ``vs_filter``, ``alpha``) and ``query_filter=RHO`` are off unless given (:mod:`.heaven`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from madqa.agents.corpus.retrieval.base import RetrievalError, Retriever
from madqa.agents.corpus.search.base import PageRecord

SPEC_HELP = "bm25, dense:EMBEDDER (dense:wordllama), colbert:MODEL, colpali:MODEL, dse:MODEL, rrf:A+B, hybrid:A>B"
#: The paper's models of the learned-vector retrievers (ColBERTv2; HEAVEN's ColQwen2.5 and DSE, G.3).
DEFAULT_MODELS = {
    "colbert": "colbert-ir/colbertv2.0",
    "colpali": "vidore/colqwen2.5-v0.2",
    "dse": "MrLight/dse-qwen2-2b-mrl-v1",
}
#: Options of each learned-vector kind: name -> type; ``device`` and ``batch_size`` do not change the vectors.
OPTIONS: dict[str, dict[str, type]] = {
    "colbert": {"query_length": int, "doc_length": int},
    "colpali": {"arch": str, "max_visual_tokens": int},
    "dse": {"dim": int, "min_pixels": int, "max_pixels": int},
}
RUN_OPTIONS: dict[str, type] = {"device": str, "batch_size": int}
#: HEAVEN's stage-2 settings (G.3, Table 13): k1 candidates from DSE, beta the weight of the DSE score.
HEAVEN = {"candidates": 200, "beta": 0.3}
#: ``hybrid:`` options and their types: HEAVEN's stage 2, its query filter (rho) and VS-pages (:mod:`.heaven`).
HYBRID_OPTIONS: dict[str, type] = {
    "candidates": int,
    "beta": float,
    "query_filter": float,
    "vs_pages": int,
    "vs_filter": float,
    "alpha": float,
}


class _Corpus:
    """The pages of one corpus and what is built on them once (the BM25 index, embedders by spec)."""

    def __init__(
        self,
        pages: Iterable[Mapping[str, Any]],
        index_dir: Any,
        cache_dir: Any,
        progress: bool,
        renderer: Any = None,
        dataset: Any = None,
    ) -> None:
        from madqa.agents.corpus.search.index import prepare_pages

        self.rows = [dict(p) for p in pages]
        self.records: list[PageRecord] = prepare_pages(self.rows)
        self.index_dir, self.cache_dir, self.progress = index_dir, cache_dir, progress
        self._renderer, self.dataset = renderer, dataset
        self._bm25: Retriever | None = None
        self._dense: dict[str, Retriever] = {}

    def renderer(self) -> Any:
        if self._renderer is None:
            from madqa.agents.corpus.render import PageRenderer

            self._renderer = PageRenderer(self.dataset, pages=self.rows)
        return self._renderer

    def learned(self, kind: str, rest: str, spec: str) -> Retriever:
        """A ``colbert:``/``colpali:``/``dse:`` retriever (built once per canonical name)."""
        model, options, run = parse_options(kind, rest, spec)
        name = ":".join([f"{kind}:{model}", *(f"{k}={v}" for k, v in options.items())])
        if name not in self._dense:
            from madqa.agents.corpus.retrieval import encoders
            from madqa.agents.corpus.retrieval.late import VectorRetriever

            engine = (
                kind == "colpali" and encoders.colpali_arch(model, options.get("arch")) not in encoders.COLQWEN_ARCHS
            )
            try:
                encoders.require(spec, *(["colpali_engine"] if engine else []))
            except ImportError as exc:
                raise RetrievalError(str(exc)) from None
            cls = {"colbert": encoders.ColBERTEncoder, "colpali": encoders.ColPaliEncoder, "dse": encoders.DSEEncoder}[
                kind
            ]
            try:
                encoder = cls(model, **options, **run)
            except (OSError, ValueError) as exc:
                raise RetrievalError(f"{spec!r}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
            encoder.name = name
            renderer = self.renderer() if encoder.modality == "image" else None
            self._dense[name] = VectorRetriever(
                encoder, self.records, renderer=renderer, cache_dir=self.cache_dir, progress=self.progress
            )
        return self._dense[name]

    def bm25(self) -> Retriever:
        if self._bm25 is None:
            from madqa.agents.corpus.retrieval.rankers import BM25Retriever
            from madqa.agents.corpus.search.index import open_index

            self._bm25 = BM25Retriever(open_index(self.rows, self.index_dir, progress=self.progress))
        return self._bm25

    def dense(self, embedder_spec: str) -> Retriever:
        if embedder_spec not in self._dense:
            from madqa.agents.corpus.embeddings import EmbedderSpecError, make_embedder
            from madqa.agents.corpus.retrieval.rankers import DenseRetriever

            try:
                embedder = make_embedder(embedder_spec)
            except EmbedderSpecError as exc:
                raise RetrievalError(f"dense:{embedder_spec}: {exc}") from None
            self._dense[embedder_spec] = DenseRetriever(embedder, self.records, self.cache_dir, progress=self.progress)
        return self._dense[embedder_spec]


def add_retriever_argument(parser: Any, help_text: str, default: str | None = None) -> None:
    """``--retriever SPEC[,SPEC…]`` (``madqa retrieval``, ``madqa bench retrieval``); required without ``default``."""
    parser.add_argument(
        "--retriever", default=default, required=default is None, metavar="SPEC[,SPEC…]", help=help_text
    )


def _typed(spec: str, key: str, raw: str, kind: type) -> Any:
    try:
        return kind(raw)
    except ValueError:
        raise RetrievalError(f"{spec!r}: option {key}={raw!r} must be {kind.__name__}") from None


def parse_options(kind: str, rest: str, spec: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``MODEL[:key=value…]`` → (model, vector options, run options); unknown keys are errors."""
    parts = rest.split(":") if rest else []
    model_parts = [p for p in parts if "=" not in p]
    model = ":".join(model_parts).strip() or DEFAULT_MODELS[kind]
    options: dict[str, Any] = {}
    run: dict[str, Any] = {}
    for part in (p for p in parts if "=" in p):
        key, _, raw = part.partition("=")
        key = key.strip()
        if key in OPTIONS[kind]:
            options[key] = _typed(spec, key, raw.strip(), OPTIONS[kind][key])
        elif key in RUN_OPTIONS:
            run[key] = _typed(spec, key, raw.strip(), RUN_OPTIONS[key])
        else:
            known = ", ".join([*OPTIONS[kind], *RUN_OPTIONS])
            raise RetrievalError(f"{spec!r}: unknown option {key!r} for {kind}: (options: {known})")
    if run.get("batch_size", 1) < 1:
        raise RetrievalError(f"{spec!r}: batch_size must be positive")
    return model, dict(sorted(options.items())), run


def _hybrid_options(rest: str, spec: str) -> tuple[dict[str, Any], str]:
    options: dict[str, Any] = {}
    while True:
        head, sep, tail = rest.partition(":")
        key, eq, raw = head.partition("=")
        if not (sep and eq and key.strip() in HYBRID_OPTIONS) or ">" in head:
            return options, rest
        options[key.strip()] = _typed(spec, key.strip(), raw.strip(), HYBRID_OPTIONS[key.strip()])
        rest = tail


def _build(spec: str, corpus: _Corpus) -> Retriever:
    from madqa.agents.corpus.retrieval.fusion import HybridRetriever, RRFRetriever

    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind == "hybrid":
        options, rest = _hybrid_options(rest, spec)
        first, sep, second = rest.partition(">")
        if not sep or not first or not second:
            raise RetrievalError(f"{spec!r}: write hybrid:FIRST>SECOND, e.g. hybrid:bm25>dense:wordllama")
        if first.strip().partition(":")[0] == "dse" and second.strip().partition(":")[0] == "colpali":
            options = {**HEAVEN, **options}
        named = "".join(
            f"{k}={options[k]}:" for k in ("vs_pages", "vs_filter", "alpha", "query_filter") if k in options
        )
        vs = {k: options.pop(k) for k in ("vs_pages", "vs_filter", "alpha") if k in options}
        stage1 = _build(first, corpus)
        if vs.get("vs_pages"):
            from madqa.agents.corpus.retrieval.heaven import VS_DEFAULTS, VSPageRetriever
            from madqa.agents.corpus.retrieval.late import VectorRetriever

            if not isinstance(stage1, VectorRetriever):
                raise RetrievalError(
                    f"{spec!r}: vs_pages needs a learned-vector first stage (dse:, colpali:, colbert:)"
                )
            vs = {**VS_DEFAULTS, **vs}
            stage1 = VSPageRetriever(stage1, vs["vs_pages"], vs["vs_filter"], vs["alpha"])
        elif vs:
            raise RetrievalError(f"{spec!r}: vs_filter and alpha are VS-page options; add vs_pages=R (HEAVEN: 15)")
        return HybridRetriever(stage1, _build(second, corpus), options=named, **options)
    if kind == "rrf":
        parts = [p for p in rest.split("+")]
        if len(parts) < 2 or not all(p.strip() for p in parts):
            raise RetrievalError(f"{spec!r}: write rrf:A+B, e.g. rrf:bm25+dense:wordllama")
        return RRFRetriever([_build(p, corpus) for p in parts])
    if kind == "bm25" and not rest:
        return corpus.bm25()
    if kind == "dense":
        if not rest:
            raise RetrievalError(f"{spec!r}: name the embedder, e.g. dense:wordllama")
        return corpus.dense(rest)
    if kind in DEFAULT_MODELS:
        return corpus.learned(kind, rest, spec)
    raise RetrievalError(f"unknown retriever {spec!r}; one of {SPEC_HELP}")


def leaves(spec: str) -> Iterator[tuple[str, str]]:
    """``(kind, rest)`` of every retriever a spec builds (through ``rrf:`` and ``hybrid:``, read as :func:`_build`)."""
    kind, _, rest = spec.strip().partition(":")
    if kind == "hybrid":
        first, _, second = _hybrid_options(rest, spec)[1].partition(">")
        for part in (first, second):
            yield from leaves(part)
    elif kind == "rrf":
        for part in rest.split("+"):
            yield from leaves(part)
    else:
        yield kind, rest.strip()


#: The kinds whose encoders read page images (the others read page texts).
IMAGE_KINDS = ("colpali", "dse")


def reads_page_images(spec: str) -> bool:
    """Whether a retriever the spec builds reads page images (``colpali:``, ``dse:``, in ``rrf:``/``hybrid:`` too).

    >>> reads_page_images("rrf:bm25+dse:MrLight/dse-qwen2-2b-mrl-v1"), reads_page_images("colbert:x")
    (True, False)
    """
    return any(kind in IMAGE_KINDS for kind, _ in leaves(spec))


def require_dependencies(specs: Iterable[str]) -> None:
    """Check the optional packages every spec needs, before any page is loaded or indexed.

    Raises:
        RetrievalError: the first missing one, in one line naming the spec and ``pip install 'madqa[EXTRA]'``.
    """
    from madqa.agents.corpus.retrieval import encoders
    from madqa.agents.harness.deps import MissingDependencyError, require_extra

    try:
        for spec in specs:
            for kind, rest in leaves(spec):
                embedder = rest.partition(":")[0].strip().lower()
                if kind == "dense" and embedder == "wordllama":
                    require_extra("embed", f"--retriever {spec}")
                elif kind == "dense" and embedder in ("st", "sentence-transformers", "sentence_transformers"):
                    require_extra("sentence-transformers", f"--retriever {spec}")
                elif kind in DEFAULT_MODELS:
                    encoders.require(spec)
    except MissingDependencyError as exc:
        raise RetrievalError(str(exc)) from None


def make_retrievers(
    specs: Iterable[str],
    pages: Iterable[Mapping[str, Any]],
    *,
    index_dir: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = False,
    renderer: Any = None,
    dataset: Any = None,
) -> list[Retriever]:
    """One retriever per spec over the same corpus (the BM25 index and each model's vectors built once).

    Args:
        renderer: the page renderer of the page-image retrievers (default: one over ``dataset``'s PDFs).
        dataset: the dataset spec whose PDFs the default renderer reads (``None``: the default dataset).

    Raises:
        RetrievalError: a spec is malformed or names what is not available (the message names the spec).
        MissingDependencyError: a learned-vector spec without the ``late`` extra installed.
    """
    specs = list(specs)
    require_dependencies(specs)
    corpus = _Corpus(pages, index_dir, cache_dir, progress, renderer, dataset)
    return [_build(spec, corpus) for spec in specs]


def make_retriever(spec: str, pages: Iterable[Mapping[str, Any]], **kwargs: Any) -> Retriever:
    """The retriever of one spec over ``pages`` (see :func:`make_retrievers`)."""
    return make_retrievers([spec], pages, **kwargs)[0]

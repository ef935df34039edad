"""What the shared search loop needs before its first question: one model per slot, the page index and renderer, the
search limits, and the settings whose defaults depend on the model (page text per result, searches before
answering). Used by the bm25, rag, mdoc and shell baselines."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from smolagents import Model

from madqa.agents.corpus.render import PageRenderer
from madqa.agents.corpus.search import Backend, SearchIndex, SearchLimits, open_index
from madqa.agents.harness.agent_base import Preparation
from madqa.agents.harness.config import RunConfig, RunError
from madqa.agents.harness.options import AgentOptions
from madqa.agents.models.factory import is_text_only, make_model
from madqa.agents.models.llamacpp import LlamaCppModel
from madqa.agents.search_loop.agent import SearchAgent
from madqa.agents.search_loop.embedder_ledger import embedder_role
from madqa.agents.search_loop.tools import DEFAULT_PAGE_CHARS, SemanticSearchTool

logger = logging.getLogger(__name__)

#: Page text per result for the bundled local model: a 135M model gains nothing from more, and each page costs
#: prefill time (~100 tokens/s on one core here).
LOCAL_PAGE_CHARS = 600


def default_page_chars(model: Model, top_k: int, max_steps: int) -> int:
    """Page text per result in text mode: :data:`DEFAULT_PAGE_CHARS`; for the local model, what fits its context.

    The local model's whole run should fit its context (~3 characters per token), so that no turn is dropped and
    llama.cpp's prompt-prefix cache keeps every step's prefill to the new observation.
    """
    if isinstance(model, LlamaCppModel):
        tokens = (model.n_ctx - 1500) // (max(1, max_steps - 1) * top_k)
        return max(200, min(LOCAL_PAGE_CHARS, tokens * 3))
    return DEFAULT_PAGE_CHARS


def default_min_searches(model: Model) -> int:
    """Searches required before answering: 1 for the bundled local model (else it answers at once), 0 otherwise."""
    return 1 if isinstance(model, LlamaCppModel) else 0


def open_corpus(
    config: RunConfig, options: Any, *, progress: bool = True
) -> tuple[SearchIndex | None, PageRenderer, dict[str, Any]]:
    """The page index (``None`` with ``options.oracle``: nothing is searched), the renderer of ``config.dataset``
    and the run's non-model costs (:func:`corpus_costs`); ``options`` holds the search settings (the search agent's
    options class).

    With ``options.retriever`` the "index" is that :mod:`madqa.agents.corpus.retrieval` retriever (a semantic
    search tool).

    Raises:
        RunError: a retriever spec that cannot be built.
    """
    from madqa.loading_script.load import dataset_spec, load_pages

    logger.info("loading the corpus (the pages of %s)…", dataset_spec(config.dataset))
    pages = load_pages(config.dataset)
    renderer = PageRenderer(config.dataset, pages=pages)
    if options.oracle:
        return None, renderer, corpus_costs(pages)
    if options.retriever:
        retriever = make_run_retrievers([options.retriever], pages, progress=progress)[0]
        return retriever, renderer, corpus_costs(pages, retrievers=[retriever])
    limits = search_limits(options)
    backend = cast("Backend", options.search_backend)  # open_index refuses an unknown one
    index = open_index(pages, backend=backend, limits=limits, progress=progress)
    return index, renderer, corpus_costs(pages, index)


def corpus_costs(
    pages: Sequence[Mapping[str, Any]], index: Any = None, retrievers: Sequence[Any] = ()
) -> dict[str, Any]:
    """The non-model costs a run's lines record as ``costs`` (known ones only, none made up).

    ``corpus_pages`` and ``ocr_pages`` (pages whose text came from OCR: ``text_source`` ``ocr`` or ``pdf+ocr``,
    when the rows say); with a search index, its ``index_backend`` and ``index_build_s`` (the seconds its build took,
    from its manifest: paid once, by the run that built it, and reused by later runs on the same pages); with
    retrievers, ``retriever_build_s``: each one's build seconds by its spec, where it knows them
    (:func:`madqa.agents.corpus.retrieval.base.build_seconds`; from its cache's manifest, as the index's).

    >>> corpus_costs([{"text_source": "pdf"}, {"text_source": "ocr"}, {"text_source": "pdf+ocr"}])
    {'corpus_pages': 3, 'ocr_pages': 2}
    """
    from madqa.agents.corpus.retrieval.base import build_seconds, manifest_seconds
    from madqa.agents.corpus.search.index import index_manifest
    from madqa.loading_script.features import OCR_SOURCES

    costs: dict[str, Any] = {"corpus_pages": len(pages)}
    if pages and all("text_source" in p for p in pages):
        costs["ocr_pages"] = sum(p["text_source"] in OCR_SOURCES for p in pages)
    manifest = index_manifest(index) if index is not None else None
    if manifest is not None and (seconds := manifest_seconds(manifest)) is not None:
        costs["index_backend"] = manifest.get("backend")
        costs["index_build_s"] = seconds
    built = {r.name: s for r in retrievers if (s := build_seconds(r)) is not None}
    if built:
        costs["retriever_build_s"] = built
    return costs


def make_run_retrievers(
    specs: Sequence[str], pages: Iterable[Mapping[str, Any]], *, progress: bool = True
) -> list[Any]:
    """One :mod:`madqa.agents.corpus.retrieval` retriever per spec over ``pages``, for a run (the rag, mdoc and
    shell agents, and the search agent's ``--retriever``).

    Raises:
        RunError: a spec that cannot be built (the message names it).
    """
    from madqa.agents.corpus.retrieval.base import RetrievalError
    from madqa.agents.corpus.retrieval.spec import make_retrievers

    try:
        return list(make_retrievers(specs, pages, progress=progress))
    except RetrievalError as exc:
        raise RunError(str(exc)) from None


def search_limits(options: Any) -> SearchLimits:
    """The index's limits from the search settings (0 or ``None``: that limit off)."""
    return SearchLimits(
        timeout=options.search_timeout or None,
        max_terms=options.search_max_terms or None,
        max_postings=options.search_max_postings or None,
    )


def load_models(
    config: RunConfig, slots: int, model_options: Mapping[str, Any] | None, observe: str | None = None
) -> tuple[list[Model], str]:
    """One model per slot and the observation mode (``observe``, else text for text-only models).

    Raises:
        RunError: ``observe="image"`` with a text-only model.
    """
    logger.info("loading the model %s%s…", config.model, f" ({slots} copies)" if slots > 1 else "")
    models = [make_model(config.model, **dict(model_options or {})) for _ in range(max(1, slots))]
    if observe == "image" and is_text_only(models[0]):
        raise RunError(f"model {config.model} takes text only: use --observe text")
    return models, observe or ("text" if is_text_only(models[0]) else "image")


@dataclass(frozen=True)
class PageReaders:
    """What an agent shown retrieved pages loads (rag, mdoc): its models, how they see a page, the pages and the
    retrievers over them.

    Attributes:
        models: one per slot.
        observe: ``image`` or ``text`` (see :func:`load_models`).
        page_chars: page text shown per page in text mode.
        pages: the dataset's page rows (the retrievers' corpus).
        renderer: page images and texts of the dataset.
        retrievers: one per spec given to :func:`load_page_readers`, in their order.
    """

    models: list[Model]
    observe: str
    page_chars: int
    pages: list[Mapping[str, Any]]
    renderer: PageRenderer
    retrievers: list[Any]

    def run_config(self, request: Preparation, options: type[AgentOptions], **resolved: Any) -> RunConfig:
        """The run's config for ``options``' agent with what was resolved here (``observe``, ``page_chars``) and
        ``resolved`` (the retrievers' names) written in, as its results lines record them."""
        return request.config.for_agent(options).with_options(
            observe=self.observe, page_chars=self.page_chars, **resolved
        )


def load_page_readers(request: Preparation, options: Any, calls: int, retrievers: Sequence[str]) -> PageReaders:
    """The models, pages and retrievers of a run; ``options`` gives ``observe``, ``top_k`` and ``page_chars`` (else
    what fits ``calls`` model calls of the model: :func:`default_page_chars`); ``retrievers`` are the specs.

    Raises:
        RunError: ``observe="image"`` with a text-only model, or a retriever spec that cannot be built.
        ValueError: an invalid model spec or a missing model dependency.
    """
    from madqa.loading_script.load import dataset_spec, load_pages

    config = request.config
    models, observe = load_models(config, request.slots, request.model_options, options.observe)
    page_chars = options.page_chars or default_page_chars(models[0], options.top_k, calls)
    logger.info("loading the corpus (the pages of %s)…", dataset_spec(config.dataset))
    pages = load_pages(config.dataset)
    renderer = PageRenderer(config.dataset, pages=pages)
    built = make_run_retrievers(retrievers, pages, progress=request.host.progress)
    return PageReaders(models, observe, page_chars, pages, renderer, built)


def record_fields(agent: SearchAgent | None) -> dict[str, Any]:
    """The search agent's part of a results line: ``search_history``, ``steps`` (= the number of searches) and,
    with a semantic search tool (``--retriever``), the ``embedder`` role of its searches' query embeddings."""
    tool = agent.search_tool if agent is not None else None
    history = tool.history if tool is not None else []
    fields: dict[str, Any] = {"search_history": [h.as_dict() for h in history], "steps": len(history)}
    retriever = getattr(tool, "index", None) if isinstance(tool, SemanticSearchTool) else None
    roles = embedder_role([retriever.name], len(history)) if retriever is not None and history else {}
    return {**fields, "roles": roles} if roles else fields

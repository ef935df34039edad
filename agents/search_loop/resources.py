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
from madqa.agents.models.factory import is_text_only, make_model
from madqa.agents.models.llamacpp import LlamaCppModel
from madqa.agents.search_loop.agent import SearchAgent
from madqa.agents.search_loop.tools import DEFAULT_PAGE_CHARS

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


def open_corpus(config: RunConfig, options: Any, *, progress: bool = True) -> tuple[SearchIndex | None, PageRenderer]:
    """The page index (``None`` with ``options.oracle``: nothing is searched) and the renderer of
    ``config.dataset``; ``options`` holds the search settings (the search agent's options class).

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
        return None, renderer
    if options.retriever:
        return make_run_retrievers([options.retriever], pages, progress=progress)[0], renderer
    limits = search_limits(options)
    backend = cast("Backend", options.search_backend)  # open_index refuses an unknown one
    return open_index(pages, backend=backend, limits=limits, progress=progress), renderer


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
    """What an agent shown retrieved pages loads (rag, mdoc): its models, how they see a page, and the pages.

    Attributes:
        models: one per slot.
        observe: ``image`` or ``text`` (see :func:`load_models`).
        page_chars: page text shown per page in text mode.
        pages: the dataset's page rows (the retrievers' corpus).
        renderer: page images and texts of the dataset.
    """

    models: list[Model]
    observe: str
    page_chars: int
    pages: list[Mapping[str, Any]]
    renderer: PageRenderer


def load_page_readers(request: Preparation, options: Any, calls: int) -> PageReaders:
    """The models and pages of a run; ``options`` gives ``observe``, ``top_k`` and ``page_chars`` (else what fits
    ``calls`` model calls of the model: :func:`default_page_chars`).

    Raises:
        RunError: ``observe="image"`` with a text-only model.
        ValueError: an invalid model spec or a missing model dependency.
    """
    from madqa.loading_script.load import dataset_spec, load_pages

    config = request.config
    models, observe = load_models(config, request.slots, request.model_options, options.observe)
    page_chars = options.page_chars or default_page_chars(models[0], options.top_k, calls)
    logger.info("loading the corpus (the pages of %s)…", dataset_spec(config.dataset))
    pages = load_pages(config.dataset)
    return PageReaders(models, observe, page_chars, pages, PageRenderer(config.dataset, pages=pages))


def record_fields(agent: SearchAgent | None) -> dict[str, Any]:
    """The search agent's part of a results line: ``search_history`` and ``steps`` (= the number of searches)."""
    history = agent.search_tool.history if agent is not None and agent.search_tool is not None else []
    return {"search_history": [h.as_dict() for h in history], "steps": len(history)}

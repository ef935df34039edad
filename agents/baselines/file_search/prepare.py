"""The managed RAG services (paper G.2) as a registered :class:`~madqa.agents.harness.protocol.Agent`:
``madqa run --agent file-search --provider openai|gemini``.

``prepare`` checks the provider's key first, then makes sure the collection's PDFs are in a store of the service:
built once and cached on disk (:mod:`.store`, ``--refresh-store`` builds it again). A question is one service
call with the file-search tool and the prompt of ``agents/prompts/file_search.yaml`` (the paper's Prompt G.2);
the model's JSON answer gives the line's ``answer`` and ``citations``, the retrieved chunks its
``search_history`` (how pages are recovered: :mod:`.answers`). ``steps`` is 1 (one call; the paper reports no
Kuiper for these non-agentic systems) and ``max_steps`` is 1 whatever ``--max-steps`` says. The line's own field
``file_search`` holds the store id, the pages of the chunks the answer's annotations / grounding supports cite,
and the number of citations dropped (naming no corpus page).

Not offered in the Space's agent tab: it needs the host's own provider key, and every visitor's question would
upload the corpus to a third party's account; run it with ``madqa run`` and submit the results file instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from smolagents.agents import populate_template

from madqa.agents.baselines.file_search.answers import (
    AnswerFormatError,
    Chunk,
    Reply,
    Search,
    cited_pages,
    grounded_pages,
    locate_page,
    parse_answer,
    search_entry,
)
from madqa.agents.baselines.file_search.options import FileSearchOptions
from madqa.agents.baselines.file_search.services import PROVIDERS, FileSearchService, make_service, service_model
from madqa.agents.baselines.file_search.store import (
    StoreCache,
    StoreEntry,
    cache_key,
    content_digest,
    corpus_files,
    page_texts,
)
from madqa.agents.harness.agent_base import AgentBase, Preparation
from madqa.agents.harness.config import RunConfig, RunError
from madqa.agents.harness.errors import QuestionTimeoutError, classify, cut, short_error
from madqa.agents.harness.protocol import Citation, SearchEvent, StepEvent
from madqa.agents.harness.record import MAX_MODEL_OUTPUT_CHARS, build_record
from madqa.agents.harness.smolagents_loop import answer_event
from madqa.metric.ledger import tally_of

logger = logging.getLogger(__name__)

NAME = "file-search"


def service_usage(counts: Mapping[str, int]) -> dict[str, Any]:
    """A line's ``usage`` from one service reply's counts: the totals, and the ledger's ``agent`` role (one call;
    the service's own retrieval is inside it, priced by the provider per call, not in the price table).

    >>> service_usage({"input_tokens": 9, "output_tokens": 2, "reasoning_tokens": 1})["by_role"]
    {'agent': {'input_tokens': 9, 'output_tokens': 2, 'calls': 1, 'reasoning_tokens': 1}}
    """
    totals = {k: counts[k] for k in ("input_tokens", "output_tokens", "cached_input_tokens") if k in counts}
    return {**totals, "by_role": {"agent": tally_of([counts])}}


class PreparedFileSearch:
    """A service with its store, ready to answer questions (its SDK client is shared by the threads)."""

    def __init__(
        self,
        config: RunConfig,
        settings: dict[str, Any],
        service: FileSearchService,
        store: StoreEntry,
        pages: Mapping[str, Mapping[int, str]],
        dataset: Mapping[str, Any] | None,
    ) -> None:
        """Hold the service, the store and each document's page texts."""
        from madqa.agents.prompts import load_prompts

        self.config, self.settings, self.service, self.store, self.pages = config, settings, service, store, pages
        self.dataset = dataset
        prompts = load_prompts("file_search")
        self.system, self.task = str(prompts["system_prompt"]), str(prompts["madqa"]["task"])
        self.documents = sorted(pages)

    def _paged(self, search: Search) -> Search:
        """``search`` with each chunk's page recovered from its text where the service gave none."""
        chunks = tuple(
            c
            if c.page is not None or c.document is None
            else Chunk(c.document, locate_page(c.text, self.pages.get(c.document, {})), c.text, c.cited)
            for c in search.chunks
        )
        return Search(search.query, chunks)

    def ask(self, question: str) -> Reply:
        """One service call, each retrieved chunk's page recovered."""
        task = populate_template(self.task, variables={"question": question})
        reply = self.service.ask(self.system, task, self.store, self.documents, timeout=self.config.question_timeout)
        return replace(reply, searches=tuple(self._paged(s) for s in reply.searches))

    def read(self, reply: Reply) -> dict[str, Any]:
        """The line's answer and citations (and how many citations were dropped) from the reply's JSON.

        Raises:
            AnswerFormatError: the reply holds no JSON answer.
        """
        parsed = parse_answer(reply.text)
        counts = {doc: max(texts, default=0) for doc, texts in self.pages.items()}
        citations, dropped = cited_pages(parsed["citations"], self.documents, counts)
        return {"answer": parsed["answer"], "citations": citations, "dropped": dropped}

    def answer(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The results line of one question row."""
        events = list(self.stream(str(item["question"]), item))
        return dict(events[-1].record)  # type: ignore[union-attr]  # the last event is always the AnswerEvent

    def stream(
        self, question: str, item: Mapping[str, Any] | None = None, *, stop: Callable[[], bool] | None = None
    ) -> Iterator[StepEvent]:
        """One :class:`SearchEvent` per retrieval the service reports, then the :class:`AnswerEvent`. The service
        answers in one call, so ``stop`` is asked only before it."""
        if stop is not None and stop():
            return
        item = item if item is not None else {"id": "", "question": question}
        start = time.perf_counter()
        reply: Reply | None = None
        output: dict[str, Any] | None = None
        error = kind = None
        state = "answered"
        try:
            reply = self.ask(question)
            output = self.read(reply)
        except AnswerFormatError as exc:
            error, kind, state = f"no final answer: {cut(str(exc))}", "model", "no_answer"
        except Exception as exc:  # noqa: BLE001 - recorded in the line; one failing question must not stop the run
            limit = self.config.question_timeout
            failure: BaseException = exc
            if limit is not None and time.perf_counter() - start >= limit:
                failure = QuestionTimeoutError(limit)
            error, kind, state = short_error(failure), classify(failure), "error"
            logger.warning("question %s failed (%s): %s", item.get("id"), kind, error)
        record = self._record(item, reply, output, error, kind, state, time.perf_counter() - start)
        for entry in record["search_history"]:
            yield SearchEvent(
                step=1,
                query=entry["query"],
                count=entry["count"],
                pages=tuple(Citation(r["document"], r["page"]) for r in entry["results"]),
            )
        yield answer_event(record)

    def _record(
        self,
        item: Mapping[str, Any],
        reply: Reply | None,
        output: Mapping[str, Any] | None,
        error: str | None,
        kind: str | None,
        state: str,
        elapsed: float,
    ) -> dict[str, Any]:
        searches = reply.searches if reply is not None else ()
        history = [search_entry(s) for s in searches]
        trajectory = (
            []
            if reply is None
            else [
                {
                    "step": 1,
                    "model_output": cut(reply.text, MAX_MODEL_OUTPUT_CHARS),
                    "tool_calls": [{"name": "file_search", "arguments": {"query": s.query}} for s in searches],
                    "observation": None,
                    "images": 0,
                    "error": error,
                    "input_tokens": reply.usage.get("input_tokens"),
                    "output_tokens": reply.usage.get("output_tokens"),
                    "duration_s": round(elapsed, 3),
                    "final": True,
                }
            ]
        )
        own = {
            "store": self.store.store,
            "cited_pages": grounded_pages(searches),
            "dropped_citations": int((output or {}).get("dropped", 0)),
        }
        provider = self.config.typed(FileSearchOptions).provider
        # the managed service's fee is per search call (and storage), not per token: counted, not priced here
        costs = {"managed_service": f"{provider}-file-search", "service_search_calls": len(searches)}
        return build_record(
            item,
            agent_name=NAME,
            model=self.config.model,
            elapsed_s=elapsed,
            output=output,
            costs=costs,
            error=error,
            error_kind=kind,
            config=self.settings,
            dataset=self.dataset,
            steps=1 if reply is not None or output is not None else 0,
            usage=service_usage(reply.usage) if reply is not None else None,
            search_history=history,
            extra={"final_state": state, "trajectory": trajectory, "file_search": own},
        )

    def close(self) -> None:
        """Nothing to free (the store stays, for the next run)."""


class FileSearchAgentEntry(AgentBase):
    """The managed RAG baseline; see :mod:`madqa.agents.baselines.file_search.prepare`."""

    options = FileSearchOptions

    def check(self, config: RunConfig) -> None:
        """Raise :class:`RunError` for a model the provider's service cannot run (its options: their own check)."""
        provider = config.typed(FileSearchOptions).provider
        if provider not in PROVIDERS:
            raise RunError(f"--agent file-search needs --provider {' or '.join(PROVIDERS)}")
        service_model(provider, config.model)

    def load(self, request: Preparation) -> PreparedFileSearch:
        """Check the key, make sure the collection is in a store (cached), and load the page texts.

        Raises:
            RunError: a missing key, or a dataset without PDFs.
            MissingDependencyError: the provider's SDK is missing.
        """
        from madqa.loading_script.load import load_pages

        config, dataset = request.config, request.dataset
        given = config.typed(FileSearchOptions)
        assert given.provider is not None  # checked
        service = make_service(given.provider, service_model(given.provider, config.model), request.model_options)
        files = corpus_files(config.dataset)
        if not files:
            raise RunError("file-search: the dataset has no PDF to upload (run `madqa setup` first)")
        name = str((dataset or {}).get("name") or config.dataset or "madqa")
        digest = content_digest(files)
        key = cache_key(service.provider, service.endpoint, name, digest)
        cache = StoreCache()
        entry = None if given.refresh_store else cache.get(key)
        if entry is not None and not service.store_exists(entry.store):
            logger.info("file-search: the cached store %s is gone; uploading the collection again", entry.store)
            entry = None
        if entry is None:
            logger.info("file-search: uploading %d PDF(s) to a new %s store", len(files), service.provider)
            entry = service.build_store(files, f"madqa-{name.replace('/', '-')}-{digest[:12]}")
            cache.put(
                key,
                entry,
                provider=service.provider,
                endpoint=service.endpoint,
                dataset=name,
                digest=digest,
                created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            )
        else:
            logger.info("file-search: reusing %s store %s", service.provider, entry.store)
        config = config.for_agent(self.options)
        settings = {**config.settings(self.options), "service_model": service.model}
        pages = page_texts(load_pages(config.dataset))
        return PreparedFileSearch(config, settings, service, entry, pages, dataset)


#: The registered entry (:mod:`madqa.agents.harness.registry`).
AGENT = FileSearchAgentEntry()

"""OpenAI File Search through the official ``openai`` SDK: Files, Vector Stores and the Responses API.

The paper (G.2) ran the Assistants API (an assistant with ``file_search``, one thread and run per question). The
Responses API is OpenAI's replacement for it (the Assistants API is deprecated, with a sunset in August 2026) and
runs the same ``file_search`` tool over the same vector stores in one call, so one question is one
``responses.create`` here. The settings are the service's own (chunking, ``max_num_results``), as in the paper
("out of the box"). ``include=["file_search_call.results"]`` returns the retrieved chunks, and the message's
``file_citation`` annotations name the files the answer cites.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from madqa.agents.baselines.file_search.answers import Chunk, Reply, Search, match_document
from madqa.agents.baselines.file_search.store import CorpusFile, StoreEntry

logger = logging.getLogger(__name__)

#: Files per vector-store file batch (the API's limit per batch request).
BATCH_FILES = 500


class OpenAIFileSearch:
    """:class:`~madqa.agents.baselines.file_search.services.FileSearchService` of OpenAI."""

    provider = "openai"

    def __init__(
        self, model: str, *, key: str, base: str | None, timeout: float | None, retries: int, poll_s: float
    ) -> None:
        """Make the client (``base``: another endpoint, e.g. a local stand-in; ``None``: OpenAI's)."""
        from openai import OpenAI

        kwargs: dict[str, Any] = {"api_key": key, "max_retries": retries}
        if base:
            kwargs["base_url"] = base
        if timeout is not None:
            kwargs["timeout"] = timeout
        self.client = OpenAI(**kwargs)
        self.model, self.poll_ms = model, max(1, int(poll_s * 1000))
        self.endpoint = str(self.client.base_url).rstrip("/")

    def store_exists(self, store: str) -> bool:
        """Whether the vector store is still there and usable (not expired)."""
        import openai

        try:
            found = self.client.vector_stores.retrieve(store)
        except openai.NotFoundError:
            return False
        return getattr(found, "status", "completed") != "expired"

    def build_store(self, files: Sequence[CorpusFile], name: str) -> StoreEntry:
        """Upload each PDF (purpose ``assistants``), then add them to a new vector store in batches, each file with
        the attribute ``document``, and wait until they are indexed."""
        store = self.client.vector_stores.create(name=name)
        ids: dict[str, str] = {}
        for f in files:
            with f.path.open("rb") as handle:
                ids[f.document] = self.client.files.create(file=(f.document, handle), purpose="assistants").id
        names = list(ids)
        for start in range(0, len(names), BATCH_FILES):
            part = [{"file_id": ids[d], "attributes": {"document": d}} for d in names[start : start + BATCH_FILES]]
            batch = self.client.vector_stores.file_batches.create_and_poll(
                store.id,
                files=part,  # type: ignore[arg-type]
                poll_interval_ms=self.poll_ms,
            )
            if batch.file_counts.failed:
                logger.warning(
                    "OpenAI could not index %d of %d file(s) of vector store %s",
                    batch.file_counts.failed,
                    len(part),
                    store.id,
                )
        return StoreEntry(store.id, ids)

    def ask(
        self, system: str, task: str, store: StoreEntry, documents: Sequence[str], timeout: float | None = None
    ) -> Reply:
        """One ``responses.create`` with ``file_search`` over the store."""
        extra: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
        response = self.client.responses.create(
            model=self.model,
            instructions=system,
            input=task,
            tools=[{"type": "file_search", "vector_store_ids": [store.store]}],
            include=["file_search_call.results"],
            **extra,
        )
        by_id = {file_id: doc for doc, file_id in store.files.items()}
        cited = {
            a.file_id
            for item in response.output
            if item.type == "message"
            for part in item.content
            if part.type == "output_text"
            for a in part.annotations or []
            if a.type == "file_citation"
        }
        searches = []
        for item in response.output:
            if item.type != "file_search_call":
                continue
            chunks = []
            for hit in item.results or []:
                named = str((hit.attributes or {}).get("document") or "")
                doc = (
                    (named if named in documents else None)
                    or by_id.get(hit.file_id or "")
                    or match_document(hit.filename or "", documents)
                )
                chunks.append(Chunk(doc, None, hit.text or "", cited=hit.file_id in cited))
            searches.append(Search(" | ".join(item.queries or []), tuple(chunks)))
        usage = response.usage
        counts = {
            "input_tokens": usage.input_tokens if usage else 0,
            "output_tokens": usage.output_tokens if usage else 0,
        }
        # The Responses API's details, where it reports them (the ledger never invents a 0).
        cached = getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", None)
        reasoning = getattr(getattr(usage, "output_tokens_details", None), "reasoning_tokens", None)
        counts |= {"cached_input_tokens": cached} if isinstance(cached, int) else {}
        counts |= {"reasoning_tokens": reasoning} if isinstance(reasoning, int) else {}
        return Reply(response.output_text, tuple(searches), counts)

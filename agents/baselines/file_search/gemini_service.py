"""Gemini File Search through the official ``google-genai`` SDK: File Search stores and ``generate_content``.

Each PDF is uploaded into the store (``upload_to_file_search_store``: a resumable upload, then a long-running
import operation polled until done) with its name as display name and as the custom metadata ``document``. A
question is one ``generate_content`` call with the ``file_search`` tool (the service's own chunking and ``top_k``,
as in the paper). The grounding metadata lists the retrieved chunks (title, text, and where the service gives it,
the page) and the supports that tie the answer's text to chunks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from madqa.agents.baselines.file_search.answers import Chunk, Reply, Search, match_document
from madqa.agents.baselines.file_search.store import CorpusFile, StoreEntry

logger = logging.getLogger(__name__)


class GeminiFileSearch:
    """:class:`~madqa.agents.baselines.file_search.services.FileSearchService` of the Gemini API."""

    provider = "gemini"

    def __init__(
        self,
        model: str,
        *,
        key: str,
        base: str | None,
        timeout: float | None,
        retries: int,
        poll_s: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Make the client (``base``: another endpoint, e.g. a local stand-in; ``None``: Google's)."""
        from google import genai
        from google.genai import types

        options: dict[str, Any] = {"retry_options": types.HttpRetryOptions(attempts=retries + 1)}
        if base:
            options["base_url"] = base
        if timeout is not None:
            options["timeout"] = int(timeout * 1000)  # milliseconds
        self.client = genai.Client(api_key=key, http_options=types.HttpOptions(**options))
        self.model, self.poll_s, self.sleep = model, poll_s, sleep
        self.endpoint = (base or "https://generativelanguage.googleapis.com").rstrip("/")

    def store_exists(self, store: str) -> bool:
        """Whether the File Search store is still there."""
        from google.genai import errors

        try:
            self.client.file_search_stores.get(name=store)
        except errors.ClientError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def build_store(self, files: Sequence[CorpusFile], name: str) -> StoreEntry:
        """A new store, then each PDF uploaded into it, each import waited for.

        Raises:
            RuntimeError: the service reports that a file could not be imported.
        """
        from google.genai import types

        store = self.client.file_search_stores.create(config={"display_name": name})
        assert store.name, "the service returned a store without a name"
        ids: dict[str, str] = {}
        for f in files:
            operation = self.client.file_search_stores.upload_to_file_search_store(
                file=str(f.path),
                file_search_store_name=store.name,
                config=types.UploadToFileSearchStoreConfig(
                    display_name=f.document,
                    mime_type="application/pdf",
                    custom_metadata=[types.CustomMetadata(key="document", string_value=f.document)],
                ),
            )
            while not operation.done:
                self.sleep(self.poll_s)
                operation = self.client.operations.get(operation)
            if operation.error:
                raise RuntimeError(f"Gemini could not import {f.document} into {store.name}: {operation.error}")
            response = operation.response
            ids[f.document] = str(getattr(response, "document_name", None) or "")
        return StoreEntry(store.name, ids)

    def ask(
        self, system: str, task: str, store: StoreEntry, documents: Sequence[str], timeout: float | None = None
    ) -> Reply:
        """One ``generate_content`` with ``file_search`` over the store."""
        from google.genai import types

        config = types.GenerateContentConfig(
            system_instruction=system,
            tools=[types.Tool(file_search=types.FileSearch(file_search_store_names=[store.store]))],
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),  # one call, no loop
            http_options=types.HttpOptions(timeout=int(timeout * 1000)) if timeout is not None else None,
        )
        response = self.client.models.generate_content(model=self.model, contents=task, config=config)
        candidate = response.candidates[0] if response.candidates else None
        grounding = candidate.grounding_metadata if candidate is not None else None
        chunks: list[Chunk] = []
        queries: list[str] = []
        if grounding is not None:
            cited = {i for s in grounding.grounding_supports or [] for i in s.grounding_chunk_indices or []}
            queries = list(grounding.retrieval_queries or [])
            for index, chunk in enumerate(grounding.grounding_chunks or []):
                got = chunk.retrieved_context
                if got is not None:
                    chunks.append(Chunk(_document(got, documents), _page(got), got.text or "", cited=index in cited))
        usage = response.usage_metadata
        out = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0) if usage else 0
        counts = {"input_tokens": (usage.prompt_token_count or 0) if usage else 0, "output_tokens": out}
        # Gemini's details, where it reports them (the ledger never invents a 0); thoughts are output tokens.
        cached = getattr(usage, "cached_content_token_count", None)
        thoughts = getattr(usage, "thoughts_token_count", None)
        counts |= {"cached_input_tokens": cached} if isinstance(cached, int) else {}
        counts |= {"reasoning_tokens": thoughts} if isinstance(thoughts, int) else {}
        searches = (Search(" | ".join(queries), tuple(chunks)),) if chunks or queries else ()
        return Reply(response.text or "", searches, counts)


def _document(context: Any, documents: Sequence[str]) -> str | None:
    """The corpus document of a retrieved context: its ``document`` metadata, else its title."""
    for item in context.custom_metadata or []:
        if item.key == "document" and item.string_value in documents:
            return str(item.string_value)
    return match_document(context.title or "", documents)


def _page(context: Any) -> int | None:
    """The page the service gives for a retrieved context (``page_number``, or a RAG chunk's first page)."""
    if context.page_number:
        return int(context.page_number)
    span = getattr(context.rag_chunk, "page_span", None)
    return int(span.first_page) if span is not None and span.first_page else None

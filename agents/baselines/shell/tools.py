"""The shell agent's tools: ``search(query)`` (semantic search over the page files) and ``bash(command)``.

``bash`` runs one command line of read-only ``ls``/``cat``/``head``/``grep`` (with ``|``) in the REPL worker's
walled process (:class:`madqa.agents.sandbox.worker.ReplWorker`: no network, Landlock, seccomp, limits): the host
sends :mod:`.coreutils`' source and the command as a string literal, the worker runs them over the ``files``
variable and prints the result as JSON. No host shell runs, and the worker holds only the corpus files the host read
(:func:`~.corpus.read_corpus`). Each command is recorded in :attr:`ShellTool.history` with the pages whose text it
printed or matched.

``search`` ranks pages with a :mod:`madqa.agents.corpus.retrieval` retriever and shows, per hit, its page file and the
lines around the best-matching line (Semtools' ``search --top-k K --n-lines N``); each call is a
:class:`~madqa.agents.search_loop.tools.SearchRecord` of the line's ``search_history``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smolagents import Tool

from madqa.agents.baselines.shell.corpus import CorpusMap
from madqa.agents.corpus.search import SearchTimeoutError
from madqa.agents.search_loop.tools import SearchRecord

logger = logging.getLogger(__name__)

#: The worker-side program (sent with every command, so a restarted worker needs nothing else).
COREUTILS = Path(__file__).with_name("coreutils.py")
#: Semtools' ``--n-lines`` default is 3; its guide suggests 30-50 for reading. Lines shown around a search hit.
DEFAULT_N_LINES = 3
#: Longest command output shown to the model (characters).
OUTPUT_CHARS = 8000


@dataclass
class ShellRecord:
    """One ``bash`` call: the command, the pages it read or matched, and its error output."""

    command: str
    pages: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of a results line's ``shell_history``."""
        return {"command": self.command, "pages": self.pages, "error": self.error}


class ShellTool(Tool):
    """``bash(command)``: read-only ``ls``, ``cat``, ``head``, ``grep`` over the parsed corpus, in the walled worker.

    Args:
        worker: the walled worker process, loaded with the ``files`` variable (see :meth:`load`).
        mapping: page files ↔ pages.
        output_chars: longest output shown.
    """

    name = "bash"
    description = (
        "Run one read-only command line over the parsed corpus in /corpus (the working directory): ls, cat, head "
        "and grep, joined with | (e.g. 'ls', 'ls 1007969', 'grep -ril \"net revenue\" .', 'grep -n -i -C 2 total "
        "1007969/page_0004.txt', 'cat 1007969/page_0003.txt | head -n 40'). No other commands, redirections or ;."
    )
    inputs = {"command": {"type": "string", "description": "the command line"}}
    output_type = "string"

    def __init__(self, worker: Any, mapping: CorpusMap, *, output_chars: int = OUTPUT_CHARS) -> None:
        """Configure the tool; the worker is loaded by :meth:`load`."""
        super().__init__()
        self.worker, self.mapping, self.output_chars = worker, mapping, output_chars
        self.history: list[ShellRecord] = []
        self._source = COREUTILS.read_text(encoding="utf-8")

    def load(self, files: Mapping[str, str]) -> None:
        """Give the worker the corpus files (its namespace is reset)."""
        self.worker.load({"files": dict(files)})

    def forward(self, command: str) -> str:
        """Run ``command`` in the worker; its output (and error lines) as the observation."""
        record = ShellRecord(command=str(command))
        self.history.append(record)
        code = f"{self._source}\nprint(sh_json(files, {json.dumps(str(command))}, {int(self.output_chars)}))"
        result = self.worker.execute(code)
        if result.error:
            logger.warning("shell command %r failed in the worker: %s", command, result.error[:300])
            record.error = f"the command could not run: {result.error.splitlines()[0][:300]}"
            return record.error
        try:
            reply = json.loads(result.logs.strip().splitlines()[-1])
        except (ValueError, IndexError):
            record.error = "the command gave no readable output"
            return record.error
        for name in reply.get("touched") or []:
            page = self.mapping.page(str(name))
            if page is not None:
                record.pages.append({"document": page[0], "page": page[1]})
        record.error = reply.get("error")
        parts = [str(reply.get("output") or "")]
        if record.error:
            parts.append(record.error)
        return "\n".join(p for p in parts if p) or "(no output)"


def best_window(text: str, query: str, n_lines: int) -> tuple[int, list[str]]:
    """The 1-based first line and the lines of the ``n_lines``-line context around the line most like ``query``.

    >>> best_window("a\\nb\\nnet revenue 5\\nc\\nd", "revenue", 1)
    (2, ['b', 'net revenue 5', 'c'])
    """
    lines = text.split("\n")
    words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 1}
    scores = [len(words & set(re.findall(r"\w+", line.lower()))) for line in lines]
    best = max(range(len(lines)), key=lambda n: (scores[n], -n)) if lines else 0
    start = max(0, best - n_lines)
    return start + 1, lines[start : best + n_lines + 1]


class FileSearchTool(Tool):
    """``search(query)``: the ``top_k`` page files a retriever ranks first, each with its best-matching lines.

    Args:
        retriever: a :mod:`madqa.agents.corpus.retrieval` retriever over the pages.
        files: the page files (``{relative path: text}``).
        mapping: page files ↔ pages.
        top_k: page files per search (Semtools' ``--top-k``).
        n_lines: context lines around the best line (Semtools' ``--n-lines``).
    """

    name = "search"
    description = (
        "Semantic search over the parsed corpus (static embeddings, like grep by meaning): the page files that "
        "best match the query, each with its path in /corpus and the lines around its best match. Works best with "
        "a few keywords or a short phrase; then read a file with bash (cat, head, grep)."
    )
    inputs = {"query": {"type": "string", "description": "keywords or a short phrase"}}
    output_type = "string"

    def __init__(
        self,
        retriever: Any,
        files: Mapping[str, str],
        mapping: CorpusMap,
        *,
        top_k: int = 3,
        n_lines: int = DEFAULT_N_LINES,
    ) -> None:
        """Configure the tool; nothing is searched yet."""
        super().__init__()
        if top_k < 1:
            raise ValueError(f"top_k must be positive, got {top_k}")
        self.retriever, self.files, self.mapping = retriever, files, mapping
        self.top_k, self.n_lines = top_k, n_lines
        self.history: list[SearchRecord] = []
        self.pending_images: list[Any] = []  # the search agent's loop prunes images: none here

    def forward(self, query: str) -> str:
        """Search, record the search, and show each hit's path and best lines."""
        record = SearchRecord(query=str(query))
        self.history.append(record)
        try:
            hits = self.retriever.search(str(query), k=self.top_k)
        except SearchTimeoutError as exc:  # the machine's failure, not the query's: ends the question (bm25.tools)
            record.error = f"{type(exc).__name__}: {exc}"
            raise
        except Exception as exc:  # noqa: BLE001 - shown to the model, never raised into the loop
            logger.warning("search %r failed: %s: %s", query, type(exc).__name__, exc)
            record.error = f"The search failed ({type(exc).__name__}). Try other words."
            return record.error
        if not hits:
            record.error = f"No page matches {query!r}. Try other words, or grep."
            return record.error
        record.results = [{"document": h.document, "page": h.page} for h in hits]
        record.count = len(hits)
        parts = [f"search {query!r}: {len(hits)} file(s)"]
        for hit in hits:
            path = self.mapping.path(hit.document, hit.page)
            first, lines = best_window(self.files.get(path, ""), str(query), self.n_lines)
            body = "\n".join(f"{first + i:>5}: {line}" for i, line in enumerate(lines))
            parts.append(f"--- {path} ({hit.document}, page {hit.page}) ---\n{body}")
        return "\n".join(parts)

    def attach_images(self, step: Any, agent: Any) -> None:
        """No page images: the shell agent reads text."""
        step.observations_images = None

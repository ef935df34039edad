"""One question as a person works on it: searches, page views, citations, the answer, and its results line.

Everything is plain data with an injectable clock, so the trajectory a test drives is the one the app logs. The
results line (:func:`build_human_record`) has the fields of the agents' lines that ``madqa evaluate`` reads (``id``,
``question``, ``answer`` list, ``citations``, ``search_history``, ``steps`` = number of searches run = effort; a
query the engine refused is logged in ``refused_searches``, no step) and the fields of the paper's human logging
(Appendix C.2): ``started_at``/``ended_at``, every query with its timestamp, count and pages, every page view with
its timestamp and how it was reached, plus ``system_type: "human"`` and ``annotator``, which mark the run as human
wherever it is shown.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from madqa.metric.schema import RECORD_SCHEMA_VERSION

Clock = Callable[[], datetime]
SYSTEM_TYPE = "human"
#: How a page view was reached (the ``via`` of a page view).
VIA = ("result", "oracle", "first", "previous", "next", "last", "jump")
#: Longest answer the app accepts (characters over all lines) and most lines kept, as the agents' final-answer cap.
MAX_ANSWER_CHARS = 5000
MAX_ANSWER_LINES = 50
#: Most searches plus page views logged in one run kept in memory only (the Space's practice tab, where anyone can
#: click). A logged search of 5 pages holds about 1.4 KB, 4.1 KB with a 2,000-character query (the engine's limit,
#: and what is logged of a longer one), a page view 0.3 KB (tracemalloc), so the registry's 500 runs hold about
#: 0.7 GB, 2.1 GB at worst. Beyond it a search is refused with a message and a page view is shown but not logged.
#: Runs with a file have no cap: a study loses nothing.
MEMORY_RUN_MAX_ACTIONS = 1000


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def stamp(moment: datetime) -> str:
    """ISO 8601 UTC with milliseconds, e.g. ``2026-12-01T08:00:00.123Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_answer_text(text: str) -> list[str]:
    """The answer box's text as a list answer: one item per non-blank line, stripped.

    >>> parse_answer_text(" Paris \\n\\n  Lyon\\n")
    ['Paris', 'Lyon']
    """
    lines = [line.strip() for line in (text or "")[:MAX_ANSWER_CHARS].splitlines()]
    return [line for line in lines if line][:MAX_ANSWER_LINES]


class QuestionSession:
    """The trajectory of one question, from the moment it is first shown until it is submitted.

    Thread-safe (one lock); the app calls it from gradio's worker threads.
    """

    def __init__(self, item: Mapping[str, Any], *, clock: Clock = utc_now, max_actions: int | None = None) -> None:
        """Start the clock on ``item`` (``id``, ``question``); log at most ``max_actions`` searches and page views
        (``None``: no cap)."""
        self.id, self.question = str(item["id"]), str(item["question"])
        self._clock = clock
        self.max_actions = max_actions
        self.started = clock()
        self.searches: list[dict[str, Any]] = []
        #: Queries the engine refused (nothing searched): logged apart, so that the effort counts searches run.
        self.refused: list[dict[str, Any]] = []
        self.page_views: list[dict[str, Any]] = []
        self.citations: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def full(self) -> bool:
        """Whether ``max_actions`` searches and page views are logged (nothing more will be)."""
        with self._lock:
            return self._full()

    def _full(self) -> bool:
        used = len(self.searches) + len(self.refused) + len(self.page_views)
        return self.max_actions is not None and used >= self.max_actions

    def record_search(
        self, query: str, pages: Sequence[tuple[str, int]], error: str | None = None, *, refused: bool = False
    ) -> dict[str, Any] | None:
        """Log one search: the query, when, how many pages came back and which (best first); a query the engine
        ``refused`` (nothing searched) goes to :attr:`refused` instead, no step of the effort. ``None``: full."""
        entry = {
            "query": query,
            "timestamp": stamp(self._clock()),
            "results": [{"document": d, "page": int(p)} for d, p in pages],
            "count": len(pages),
            "error": error,
        }
        with self._lock:
            if self._full():
                return None
            (self.refused if refused else self.searches).append(entry)
        return entry

    def record_view(self, document: str, page: int, via: str) -> dict[str, Any] | None:
        """Log one page view and how it was reached (one of :data:`VIA`); ``None``: full, not logged."""
        if via not in VIA:
            raise ValueError(f"unknown way to reach a page: {via!r} (one of {', '.join(VIA)})")
        entry = {"document": document, "page": int(page), "timestamp": stamp(self._clock()), "via": via}
        with self._lock:
            if self._full():
                return None
            self.page_views.append(entry)
        return entry

    def actions(self) -> int:
        """Searches plus page views logged so far."""
        with self._lock:
            return len(self.searches) + len(self.refused) + len(self.page_views)

    def add_citation(self, document: str, page: int) -> bool:
        """Cite a page (no duplicates); ``False`` when it was already cited."""
        cite = {"document": document, "page": int(page)}
        with self._lock:
            if cite in self.citations:
                return False
            self.citations.append(cite)
            return True

    def remove_citation(self, document: str, page: int) -> bool:
        """Un-cite a page; ``False`` when it was not cited."""
        cite = {"document": document, "page": int(page)}
        with self._lock:
            if cite not in self.citations:
                return False
            self.citations.remove(cite)
            return True

    def is_cited(self, document: str, page: int) -> bool:
        """Whether the page is among the citations."""
        with self._lock:
            return {"document": document, "page": int(page)} in self.citations

    def snapshot(self) -> dict[str, Any]:
        """Copies of the lists (for the sidebar), taken under the lock."""
        with self._lock:
            return {
                "searches": [dict(s) for s in self.searches],
                "citations": [dict(c) for c in self.citations],
                "page_views": [dict(v) for v in self.page_views],
                "refused": [dict(r) for r in self.refused],
            }


def build_human_record(
    session: QuestionSession,
    answer: Iterable[str],
    *,
    annotator: str,
    batch: str,
    split: str,
    mode: str,
    gave_up: bool = False,
    dataset: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    ended: datetime | None = None,
) -> dict[str, Any]:
    """The results line of one answered question (see the module docstring for the fields).

    Args:
        session: the question's trajectory.
        answer: the answer list (empty for "I can't find it").
        annotator: the annotator id.
        batch: the batch code name.
        split: the split the question is from.
        mode: ``"search"`` (the BM25 interface) or ``"oracle"`` (gold evidence pages only).
        gave_up: the annotator pressed "I can't find it".
        dataset: ``{"name", "revision"}`` of the dataset (``None``: unknown).
        config: study settings stored with the line (k, seed, backend …).
        ended: when it was submitted (default: now on the session's clock).
    """
    ended = ended or session._clock()
    snap = session.snapshot()
    answer = list(answer)
    return {
        "schema_version": RECORD_SCHEMA_VERSION,
        "dataset": {"name": (dataset or {}).get("name"), "revision": (dataset or {}).get("revision")},
        "id": session.id,
        "question": session.question,
        "answer": answer,
        "citations": snap["citations"],
        "search_history": snap["searches"],
        "steps": len(snap["searches"]),
        "refused_searches": snap["refused"],
        "page_views": snap["page_views"],
        "started_at": stamp(session.started),
        "ended_at": stamp(ended),
        "elapsed_s": round(max((ended - session.started).total_seconds(), 0.0), 3),
        "system_type": SYSTEM_TYPE,
        "annotator": annotator,
        "agent": "human",
        "model": f"human:{annotator}",
        "batch": batch,
        "split": split,
        "mode": mode,
        "error": None,
        "final_state": "gave_up" if gave_up or not answer else "answered",
        "config": dict(config or {}),
    }

"""The server's registry of study runs: one :class:`~.study.StudyRun` per results file or per visitor.

A reload or a second tab of the same annotator re-attaches to the same run. Runs kept in memory only (the Space's
practice tab) are named by a secret only the visitor's browser holds (:func:`new_visitor_key`); a client's new runs
are limited per window, and when the registry is full no client can evict another's run by starting many.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from pathlib import Path

from madqa.space.human.study import StudyError, StudyRun

#: New in-memory runs one client (address, or Hub user) may start per window: the Space's practice tab, where
#: anyone can press Start. A reload that re-attaches to a run, or a visitor coming back, is not a new run.
NEW_RUNS_PER_CLIENT, NEW_RUNS_WINDOW_S = 20, 3600.0
#: When the registry is full, a run of a client holding no more runs than the newcomer is dropped only if it was
#: last used this many seconds ago; otherwise the newcomer is refused.
FRESH_RUN_S = 900.0
#: Clients whose recent Starts are remembered (about 1 KB each at the limit); past it the longest-known are
#: forgotten, so addresses rotated by the million cost bounded memory (each is a client with its own limit anyway).
MAX_TRACKED_CLIENTS = 10_000


class RunLimitError(StudyError):
    """A new in-memory run refused: the client's limit of new runs, or a registry full of other visitors' runs."""


def new_visitor_key() -> str:
    """A fresh secret naming one visitor's in-memory runs (192 random bits; only that visitor's browser holds it)."""
    return secrets.token_urlsafe(24)


def visitor_name(key: str) -> str:
    """The annotator id shown for a visitor key: a one-way digest, so the id shown never gives the key away."""
    return "visitor-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


class StudyRegistry:
    """The runs of one server, by results file: one :class:`StudyRun` per file, shared by every tab that opens it.

    Runs kept in memory only (``path=None``) are keyed by a visitor key (the Space's practice tab: a secret of
    :func:`new_visitor_key`, held by the visitor's browser; else the annotator) and batch. At most
    ``max_memory_runs`` are kept, and the limits hold against any one client (a ``client`` string: the Space
    passes the address or Hub user):

    * a client starts at most ``new_runs_per_client`` new runs per ``window_s`` seconds (0: no limit); beyond it
      :class:`RunLimitError`;
    * when the registry is full, a client holding at least as many runs as any other client loses its own run used
      longest ago; otherwise the run used longest ago of the client(s) holding the most runs is dropped, and when
      every other client holds one run, that run is dropped only if it is idle for ``fresh_s``, else
      :class:`RunLimitError` ("full"). So one client, however many Starts it sends, only ever drops its own runs.
    """

    def __init__(
        self,
        max_memory_runs: int = 500,
        *,
        new_runs_per_client: int = NEW_RUNS_PER_CLIENT,
        window_s: float = NEW_RUNS_WINDOW_S,
        fresh_s: float = FRESH_RUN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """An empty registry."""
        self._runs: OrderedDict[Path | tuple[str, str], StudyRun] = OrderedDict()
        self._lock = threading.Lock()
        self.max_memory_runs = max_memory_runs
        self.new_runs_per_client, self.window_s, self.fresh_s = new_runs_per_client, window_s, fresh_s
        self._clock = clock
        self._owner: dict[tuple[str, str], str] = {}
        self._used: dict[tuple[str, str], float] = {}
        self._starts: dict[str, deque[float]] = {}

    def open(
        self,
        path: str | os.PathLike[str] | None,
        annotator: str,
        batch: str,
        factory: Callable[[], StudyRun],
        *,
        key: str | None = None,
        client: str | None = None,
    ) -> StudyRun:
        """The run on ``path`` (``None``: in memory, named by ``key``, default the annotator), created with
        ``factory()`` the first time; a new in-memory run counts against ``client``'s limits (``None``: a trusted
        caller, no per-client limit).

        Raises:
            StudyError: the file is already open for another annotator or batch on this server.
            RunLimitError: a new in-memory run refused (see the class docstring); nothing was created.
        """
        name: Path | tuple[str, str] = (key or annotator, batch) if path is None else Path(path).resolve()
        with self._lock:
            run = self._runs.get(name)
            if run is not None:
                if (run.annotator, run.batch) != (annotator, batch):
                    raise StudyError(f"{path} is open for annotator {run.annotator!r}, batch {run.batch}: not yours")
                self._touch(name)  # a visitor who comes back is the last to be dropped
                return run
            if isinstance(name, Path):
                self._runs[name] = run = factory()
                return run
            now = self._clock()
            self._admit(client, now)
            self._make_room(client or "", now)
            self._runs[name] = run = factory()
            self._owner[name], self._used[name] = client or "", now
            if client is not None:
                self._starts.setdefault(client, deque()).append(now)
            return run

    def find(self, key: str, batch: str) -> StudyRun | None:
        """The in-memory run of ``key`` on ``batch`` if the registry still holds it (never creates one)."""
        with self._lock:
            run = self._runs.get((key, batch))
            if run is not None:
                self._touch((key, batch))
            return run

    def holds(self, key: str) -> bool:
        """Whether any in-memory run is named by ``key`` (a key the registry did not hand out names none)."""
        with self._lock:
            return any(isinstance(k, tuple) and k[0] == key for k in self._runs)

    def memory_runs(self) -> int:
        """How many in-memory runs are held."""
        with self._lock:
            return sum(isinstance(k, tuple) for k in self._runs)

    def _touch(self, name: Path | tuple[str, str]) -> None:
        self._runs.move_to_end(name)
        if isinstance(name, tuple):
            self._used[name] = self._clock()

    def _admit(self, client: str | None, now: float) -> None:
        """Refuse a client's new run beyond its limit in the window (and forget clients idle for a window)."""
        if client is None or self.new_runs_per_client <= 0:
            return
        if len(self._starts) > 256:
            for other in [c for c, times in self._starts.items() if not times or times[-1] <= now - self.window_s]:
                del self._starts[other]
            for other in list(self._starts)[: max(0, len(self._starts) - MAX_TRACKED_CLIENTS)]:
                del self._starts[other]
        times = self._starts.get(client, deque())
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if len(times) >= self.new_runs_per_client:
            wait = max(1, int(times[0] + self.window_s - now + 0.999))
            limit, window = self.new_runs_per_client, int(self.window_s)
            raise RunLimitError(
                f"too many new practice runs from your address: at most {limit} per {window} s. "
                f"Continue a run you started, or try again in {wait} s"
            )

    def _make_room(self, client: str, now: float) -> None:
        """Drop one in-memory run when the registry is full, never another client's for a client's flood."""
        memory = [k for k in self._runs if isinstance(k, tuple)]  # used longest ago first
        if len(memory) < self.max_memory_runs or not memory:
            return
        counts = Counter(self._owner[k] for k in memory)
        mine = counts.get(client, 0)
        most = max((n for c, n in counts.items() if c != client), default=0)
        if mine and mine >= most:
            victim = next(k for k in memory if self._owner[k] == client)
        elif most > 1:
            victim = next(k for k in memory if self._owner[k] != client and counts[self._owner[k]] == most)
        else:
            victim = memory[0]
            if now - self._used[victim] < self.fresh_s:
                raise RunLimitError(
                    f"the practice tab is full ({len(memory)} visitors' runs are kept in memory and "
                    "in use). Try again in a few minutes"
                )
        self._runs.pop(victim)
        self._owner.pop(victim)
        self._used.pop(victim)

    def close(self) -> None:
        """Close every run (server shutdown)."""
        with self._lock:
            for run in self._runs.values():
                run.close()
            self._runs.clear()
            self._owner.clear()
            self._used.clear()

"""The agent runtime of the "Try an agent" tab: agents prepared once per (agent, model), the page renderer, the lock
that lets one agent run at a time, and each visitor's stop flag.
"""

from __future__ import annotations

import threading
from typing import Any

from .config import SpaceConfig

#: The retriever of the static RAG and shell agents here: the page index, which needs nothing beyond the Space's
#: own packages.
SPACE_RAG_RETRIEVER = "bm25"
MAX_STEPS = 6
#: Stop flags kept at most (the oldest go first): a client that presses Run's hidden handler from ever new sessions
#: without running anything must not grow the server's memory without bound.
MAX_STOP_FLAGS = 4096


class AgentRuntime:
    """Agents prepared on first use, per (agent, model), and a page renderer for the images shown.

    One agent run at a time (:attr:`lock`): agents and llama.cpp are not thread-safe. Each run has a stop flag
    kept under its visitor's session (:meth:`stop_flag`), so Stop ends only the run of the visitor who pressed it.
    """

    def __init__(self, config: SpaceConfig) -> None:
        self.config = config
        self.lock = threading.Lock()
        self._prepared: dict[tuple[str, str], Any] = {}
        self._renderer: Any = None
        self._stops: dict[str, threading.Event] = {}
        self._stops_lock = threading.Lock()

    def stop_flag(self, session: str) -> threading.Event:
        """A new run's stop flag for ``session`` (it replaces the session's previous one)."""
        flag = threading.Event()
        with self._stops_lock:
            self._stops.pop(session, None)  # re-inserted last: the eviction order is the order of the clicks
            self._stops[session] = flag
            while len(self._stops) > MAX_STOP_FLAGS:
                del self._stops[next(iter(self._stops))]
        return flag

    def request_stop(self, session: str) -> bool:
        """Ask the run of ``session`` to stop at its next step boundary; False when that session runs nothing."""
        with self._stops_lock:
            flag = self._stops.get(session)
        if flag is None:
            return False
        flag.set()
        return True

    def flag_of(self, session: str) -> threading.Event:
        """The stop flag of ``session``'s current run, made now if the run was started without one (an API call)."""
        with self._stops_lock:
            flag = self._stops.get(session)
        return flag if flag is not None else self.stop_flag(session)

    def forget(self, session: str, flag: threading.Event) -> None:
        """Drop ``session``'s flag once its run has ended (unless a newer run of the session replaced it)."""
        with self._stops_lock:
            if self._stops.get(session) is flag:
                del self._stops[session]

    def prepared(self, name: str, spec: str) -> Any:
        """The prepared agent ``name`` on model ``spec`` (a search must come before an answer).

        Raises:
            madqa.agents.protocol.AgentUnavailableError: this host cannot run the agent safely.
        """
        if (name, spec) not in self._prepared:
            from madqa.agents.config import RunConfig
            from madqa.agents.protocol import Host
            from madqa.agents.registry import get_agent

            run = RunConfig(model=spec, agent=name, dataset=self.config.dataset, max_steps=MAX_STEPS, min_searches=1,
                            retriever=SPACE_RAG_RETRIEVER if name in ("rag", "shell") else None)  # fmt: skip
            host = Host(require_isolation=True, sandbox_per_question=True, progress=False,
                        protected_paths=(str(self.config.db_path), str(self.config.labels_path)))  # fmt: skip
            agent = get_agent(name)
            run.check()
            agent.check(run)
            self._prepared[(name, spec)] = agent.prepare(run, host=host)
        return self._prepared[(name, spec)]

    def renderer(self) -> Any:
        """The page renderer of the Space's dataset (thumbnails and cited pages)."""
        if self._renderer is None:
            from madqa.agents.render import PageRenderer

            self._renderer = PageRenderer(self.config.dataset)
        return self._renderer

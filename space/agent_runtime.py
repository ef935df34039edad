"""The agent runtime of the "Try an agent" tab: agents prepared once per (agent, model), the page renderer, the lock
that lets one agent run at a time, and the runs admitted to it (each with its own stop flag).

Decisions (issue 39, item 4):

* **A stop is part of its run.** Run's click admits an :class:`AgentRun` (its session, its client, its stop flag);
  the handler claims that same object and Stop looks it up by the visitor's session. The table of runs holds only
  admitted runs, at most ``MAX_WAITING_RUNS + 1``, and an entry leaves only when its own run ends (or, never
  claimed by a handler, after ``CLAIM_WAIT_S`` or when its own client clicks again): a click beyond the bound is
  refused, never makes room by evicting another client's run, so no number of calls from other sessions can make a
  visitor's Stop miss. A client's newer click replaces its own click whose handler has not started (one that never
  comes, say from a script calling only the click's handler, must not lock its client out); a run whose handler has
  started is never replaced.
* **Bounded, per client.** A client (:func:`madqa.space.identity.identity_key`: the Hub user when logged in, else
  the client address, as for submissions) has at most ``MAX_RUNS_PER_CLIENT`` run queued or running, and at most
  ``MAX_WAITING_RUNS`` runs wait behind the running one. Both are checked at the click, before gradio's queue, so the
  refusal is shown at once. The waiting runs take the agent in no particular order (a lock, not a FIFO): the per-
  client cap keeps one client from crowding the others out, and the tab's wait is bounded (``LOCK_WAIT_S``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .config import SpaceConfig

#: The retriever of the static RAG and shell agents here: the page index, which needs nothing beyond the Space's
#: own packages.
SPACE_RAG_RETRIEVER = "bm25"
MAX_STEPS = 6
#: Runs one client may have queued or running at once.
MAX_RUNS_PER_CLIENT = 1
#: Runs that may wait for the agent beside the one running; a click beyond it is refused with a message.
MAX_WAITING_RUNS = 3
#: Seconds an admitted run may wait for its handler (gradio's queue) before its place is given back: a click whose
#: handler never comes (the page closed at once, or a client calling only the click's hidden handler) holds no place
#: for ever. Generous: a handler normally starts within a second of the click.
CLAIM_WAIT_S = 120.0


def space_options(name: str) -> dict[str, Any]:
    """The options of agent ``name`` here: its class's defaults, but one search before answering (where it has
    that option) and, for the static RAG and shell agents, the page index as retriever."""
    from madqa.agents.harness.registry import options_class

    names = options_class(name).names()
    options: dict[str, Any] = {"min_searches": 1} if "min_searches" in names else {}
    if name in ("rag", "shell"):
        options["retriever"] = SPACE_RAG_RETRIEVER
    return options


class RunRefused(Exception):
    """A run that was not admitted; ``str()`` is the message shown to the visitor."""


@dataclass(eq=False)
class AgentRun:
    """One admitted run: whose it is and its stop flag (set by its visitor's Stop, or when its visitor leaves)."""

    session: str
    client: str
    admitted_at: float
    stop: threading.Event = field(default_factory=threading.Event)
    claimed: bool = False


class AgentRuntime:
    """Agents prepared on first use, per (agent, model), a page renderer for the images shown, and the runs.

    One agent run at a time (:attr:`lock`): agents and llama.cpp are not thread-safe. The runs admitted to wait for
    it, by session (:meth:`admit`, :meth:`claim`, :meth:`request_stop`, :meth:`finish`), are bounded by admission.
    """

    #: Measures how long an admitted run has waited for its handler; tests swap in a clock of their own.
    clock: Callable[[], float] = staticmethod(time.monotonic)

    def __init__(self, config: SpaceConfig) -> None:
        self.config = config
        self.lock = threading.Lock()
        self._prepared: dict[tuple[str, str], Any] = {}
        self._renderer: Any = None
        self._runs: dict[str, AgentRun] = {}
        self._runs_lock = threading.Lock()

    def admit(self, session: str, client: str) -> AgentRun:
        """A new run of ``session`` for ``client``, admitted to wait for the agent.

        Raises:
            RunRefused: the session or the client already has a run, or ``MAX_WAITING_RUNS`` runs already wait.
        """
        with self._runs_lock:
            now = self.clock()
            # a click never picked up by its handler, or replaced by its own client's newer click
            stale = [
                r
                for r in self._runs.values()
                if not r.claimed and (r.client == client or now - r.admitted_at > CLAIM_WAIT_S)
            ]
            for run in stale:
                del self._runs[run.session]
            if session in self._runs or sum(r.client == client for r in self._runs.values()) >= MAX_RUNS_PER_CLIENT:
                raise RunRefused(
                    "Not started: you already have a run queued or running (one at a time per visitor, "
                    "in this tab or another). Wait for it to end, or press Stop on it."
                )
            if len(self._runs) > MAX_WAITING_RUNS:
                raise RunRefused(
                    f"Not started: the agent is busy ({len(self._runs)} runs are running or waiting, the "
                    "most this Space queues). Try again in a few minutes."
                )
            run = self._runs[session] = AgentRun(session, client, now)
            return run

    def claim(self, session: str, client: str) -> AgentRun:
        """The run that ``session``'s click admitted, now taken by its handler; admitted now if there is none (an API
        call has no click).

        Raises:
            RunRefused: as :meth:`admit`, or the session's run was already claimed by another handler.
        """
        with self._runs_lock:
            run = self._runs.get(session)
            if run is not None and not run.claimed:
                run.claimed = True
                return run
        run = self.admit(session, client)
        run.claimed = True
        return run

    def request_stop(self, session: str) -> bool:
        """Ask the run of ``session`` to stop at its next step boundary; False when that session has no run."""
        with self._runs_lock:
            run = self._runs.get(session)
        if run is None:
            return False
        run.stop.set()
        return True

    def finish(self, run: AgentRun) -> None:
        """Give ``run``'s place back once its handler has ended."""
        with self._runs_lock:
            if self._runs.get(run.session) is run:
                del self._runs[run.session]

    def waiting(self) -> int:
        """Runs admitted and not yet ended (running or waiting)."""
        with self._runs_lock:
            return len(self._runs)

    def prepared(self, name: str, spec: str) -> Any:
        """The prepared agent ``name`` on model ``spec`` (a search must come before an answer).

        Raises:
            madqa.agents.harness.protocol.AgentUnavailableError: this host cannot run the agent safely.
        """
        if (name, spec) not in self._prepared:
            from madqa.agents.harness.config import RunConfig
            from madqa.agents.harness.protocol import Host
            from madqa.agents.harness.registry import check_config, get_agent

            run = RunConfig(
                model=spec, agent=name, dataset=self.config.dataset, max_steps=MAX_STEPS, options=space_options(name)
            )
            host = Host(
                require_isolation=True,
                sandbox_per_question=True,
                progress=False,
                protected_paths=(str(self.config.db_path), str(self.config.labels_path)),
            )
            check_config(run)
            agent = get_agent(name)
            self._prepared[(name, spec)] = agent.prepare(run, host=host)
        return self._prepared[(name, spec)]

    def renderer(self) -> Any:
        """The page renderer of the Space's dataset (thumbnails and cited pages)."""
        if self._renderer is None:
            from madqa.agents.corpus.render import PageRenderer

            self._renderer = PageRenderer(self.config.dataset)
        return self._renderer

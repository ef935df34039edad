"""Agent name → its :class:`~madqa.agents.harness.protocol.Agent`, imported only when asked for.

An entry is a ``MODULE:NAME`` target (:func:`madqa.agents.harness.resolve.load_object`), so looking up one agent never
imports another one's dependencies, and this module imports no agent. A new agent is one more entry here.

>>> names()[:3]
('bm25', 'repl', 'rag')
>>> get_agent("bm25").fields[:2]
('top_k', 'observe')
"""

from __future__ import annotations

from madqa.agents.harness.config import RunError
from madqa.agents.harness.protocol import Agent
from madqa.agents.harness.resolve import load_object

#: The registered agents.
AGENTS: dict[str, str] = {
    "bm25": "madqa.agents.baselines.bm25.prepare:AGENT",
    "repl": "madqa.agents.baselines.repl.prepare:AGENT",
    "rag": "madqa.agents.baselines.rag.prepare:AGENT",
    "file-search": "madqa.agents.baselines.file_search.prepare:AGENT",
    "mdoc": "madqa.agents.baselines.mdoc.prepare:AGENT",
    "shell": "madqa.agents.baselines.shell.prepare:AGENT",
}


def names() -> tuple[str, ...]:
    """The registered agent names."""
    return tuple(AGENTS)


def get_agent(name: str) -> Agent:
    """The agent registered as ``name``.

    Raises:
        RunError: no agent of that name.
    """
    if name not in AGENTS:
        raise RunError(f"unknown agent {name!r}; available: {', '.join(AGENTS)}")
    agent: Agent = load_object(AGENTS[name])
    return agent

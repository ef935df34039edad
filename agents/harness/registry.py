"""Agent name → its :class:`~madqa.agents.harness.protocol.Agent` and options class, imported only when asked for.

The built-in agents are ``MODULE:NAME`` targets here (:func:`madqa.agents.harness.resolve.load_object`), so looking
up one agent never imports another one's dependencies, and this module imports no agent; each names its light
options class apart, so the command line's ``--help`` and the Space's choices load no agent. Third-party agents are
plugins: an entry point of the group ``madqa.agents`` (``NAME = "module:OBJECT"``, like inspect_ai's registry),
found through :mod:`importlib.metadata` when the agents are first listed; a plugin's options class is its agent's
``options``. A built-in name wins over a plugin of the same name (with a warning), and a plugin that cannot be
loaded is one :class:`RunError` naming its entry point.

>>> names()[:3]
('bm25', 'repl', 'rag')
>>> options_class("bm25").recorded_names()[:2]
('top_k', 'observe')
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

from madqa.agents.harness.options import AgentOptions, OptionError, RunError, suggest, unknown_message
from madqa.agents.harness.resolve import load_object

if TYPE_CHECKING:
    from madqa.agents.harness.config import RunConfig
    from madqa.agents.harness.protocol import Agent

logger = logging.getLogger(__name__)

#: The entry-point group of third-party agents.
ENTRY_POINT_GROUP = "madqa.agents"


@dataclass(frozen=True)
class AgentEntry:
    """Where an agent lives: its ``Agent`` object and (built-ins) its light options class; ``origin`` says who
    registered it (``built-in``, or the entry point)."""

    target: str
    options: str | None = None
    origin: str = "built-in"
    entry_point: Any = None


#: The built-in agents: (agent, options class).
AGENTS: dict[str, AgentEntry] = {
    "bm25": AgentEntry(
        "madqa.agents.baselines.bm25.prepare:AGENT", "madqa.agents.baselines.bm25.options:SearchOptions"
    ),
    "repl": AgentEntry("madqa.agents.baselines.repl.prepare:AGENT", "madqa.agents.baselines.repl.options:ReplOptions"),
    "rag": AgentEntry("madqa.agents.baselines.rag.prepare:AGENT", "madqa.agents.baselines.rag.options:RAGOptions"),
    "file-search": AgentEntry(
        "madqa.agents.baselines.file_search.prepare:AGENT",
        "madqa.agents.baselines.file_search.options:FileSearchOptions",
    ),
    "mdoc": AgentEntry("madqa.agents.baselines.mdoc.prepare:AGENT", "madqa.agents.baselines.mdoc.options:MDocOptions"),
    "shell": AgentEntry(
        "madqa.agents.baselines.shell.prepare:AGENT", "madqa.agents.baselines.shell.options:ShellOptions"
    ),
}

_warned: set[str] = set()


#: The plugins found, by the ``sys.path`` they were looked up on (a folder added later is looked at).
_found: dict[tuple[str, ...], dict[str, AgentEntry]] = {}


def plugins() -> dict[str, AgentEntry]:
    """The agents registered by installed distributions under :data:`ENTRY_POINT_GROUP` (built-in names left out)."""
    key = tuple(sys.path)
    if key not in _found:
        _found.clear()
        _found[key] = _scan()
    return dict(_found[key])


def _scan() -> dict[str, AgentEntry]:
    found: dict[str, AgentEntry] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        origin = f"entry point {ep.name} = {ep.value} (group {ENTRY_POINT_GROUP}, distribution {dist})"
        if ep.name in AGENTS:
            if ep.name not in _warned:
                _warned.add(ep.name)
                logger.warning("ignoring the %s: the built-in agent %r has that name", origin, ep.name)
            continue
        found.setdefault(ep.name, AgentEntry(ep.value, None, origin, ep))
    return found


def entries() -> dict[str, AgentEntry]:
    """Every agent: the built-ins, then the plugins."""
    return {**AGENTS, **plugins()}


def names() -> tuple[str, ...]:
    """The registered agent names (built-ins first)."""
    return tuple(entries())


def _entry(name: str) -> AgentEntry:
    known = entries()
    if name not in known:
        close = suggest(name, list(known))
        hint = f" (did you mean {close!r}?)" if close else ""
        raise RunError(f"unknown agent {name!r}; available: {', '.join(known)}{hint}")
    return known[name]


def _load(entry: AgentEntry, name: str) -> Any:
    """The agent object of ``entry``; a plugin that fails to import is one error naming its entry point."""
    if entry.entry_point is None:
        return load_object(entry.target)
    try:
        agent = entry.entry_point.load()
    except Exception as exc:  # noqa: BLE001 - any failure of third-party code becomes one clear error
        raise RunError(
            f"agent {name!r} cannot be loaded from its {entry.origin}: {type(exc).__name__}: {exc}"
        ) from None
    missing = [a for a in ("name", "options", "check", "prepare") if not hasattr(agent, a)]
    options = getattr(agent, "options", None)
    if missing or not (isinstance(options, type) and issubclass(options, AgentOptions)):
        what = f"lacks {', '.join(missing)}" if missing else "has no AgentOptions class as `options`"
        raise RunError(f"agent {name!r} from its {entry.origin} is not an Agent: it {what}")
    return agent


def get_agent(name: str) -> Agent:
    """The agent registered as ``name``.

    Raises:
        RunError: no agent of that name, or a plugin that cannot be loaded.
    """
    agent: Agent = _load(_entry(name), name)
    return agent


def options_class(name: str) -> type[AgentOptions]:
    """The options class of agent ``name`` (a built-in's without importing the agent).

    Raises:
        RunError: no agent of that name, or a plugin that cannot be loaded.
    """
    entry = _entry(name)
    cls = load_object(entry.options) if entry.options else _load(entry, name).options
    if not cls.agent:  # a plugin's class may leave its agent's name unsaid
        cls.agent = name
    return cls  # type: ignore[no-any-return]


def option_owners(skip_broken: bool = True) -> dict[str, list[str]]:
    """Option name -> the agents that have it (a plugin that cannot be loaded is left out)."""
    owners: dict[str, list[str]] = {}
    for name in names():
        try:
            cls = options_class(name)
        except RunError:
            if not skip_broken:
                raise
            continue
        for option in cls.names():
            owners.setdefault(option, []).append(name)
    return owners


def refuse_unknown(agent: str, given: Mapping[str, Any]) -> type[AgentOptions]:
    """The options class of ``agent``, once every key of ``given`` is one of its options.

    Raises:
        OptionError: a key the agent does not have, naming the agents that have it (or a close name).
    """
    cls = options_class(agent)
    for key in given:
        if key not in cls.names():
            raise OptionError(unknown_message(agent, key, cls.names(), option_owners()))
    return cls


def check_config(config: RunConfig) -> AgentOptions:
    """Check a run before it starts: its runner settings, its options (the framework refuses an option the agent
    does not have), then the agent's own checks. Returns the typed options.

    Raises:
        RunError: the first setting that cannot work; the message says what to change.
    """
    cls = refuse_unknown(config.agent, config.options)
    config.check()
    try:
        typed = cls.of(config.options)
    except TypeError as exc:
        raise OptionError(f"--agent {config.agent}: {exc}") from None
    typed.check(config)
    get_agent(config.agent).check(config)
    return typed

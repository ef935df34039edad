"""The common part of the built-in agents: the :class:`~madqa.agents.harness.protocol.Agent` interface written once.

Any object with ``name``, ``options``, ``check`` and ``prepare`` is an agent (a plugin may write all four itself);
the built-ins derive from :class:`AgentBase`, which takes the name from the options class, checks nothing beyond
it, and gathers ``prepare``'s arguments into one :class:`Preparation`, so that each agent writes only its ``load``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from madqa.agents.harness.config import RunConfig
from madqa.agents.harness.options import AgentOptions
from madqa.agents.harness.protocol import Host, PreparedAgent

__all__ = ["AgentBase", "Preparation"]


@dataclass(frozen=True)
class Preparation:
    """The arguments of one ``prepare`` call (:meth:`madqa.agents.harness.protocol.Agent.prepare` says each one)."""

    config: RunConfig
    slots: int = 1
    model_options: Mapping[str, Any] | None = None
    dataset: Mapping[str, Any] | None = None
    host: Host = Host()  # noqa: RUF009 - a frozen value


class AgentBase(ABC):
    """A registered agent whose checks are its options class's own; subclasses give ``options`` and ``load``."""

    #: Its options class; the class's ``agent`` is the agent's registered name.
    options: ClassVar[type[AgentOptions]]

    @property
    def name(self) -> str:
        """The name ``madqa run --agent`` takes: the options class's ``agent``, so it is written once."""
        return self.options.agent

    def check(self, config: RunConfig) -> None:  # noqa: B027 - a hook most agents leave as it is
        """Nothing beyond the options' own checks (the framework runs those); override for more."""

    def prepare(
        self,
        config: RunConfig,
        *,
        slots: int = 1,
        model_options: Mapping[str, Any] | None = None,
        dataset: Mapping[str, Any] | None = None,
        host: Host = Host(),  # noqa: B008 - a frozen value
    ) -> PreparedAgent:
        """:meth:`load` with the arguments as one :class:`Preparation`."""
        return self.load(Preparation(config, slots, model_options, dataset, host))

    @abstractmethod
    def load(self, request: Preparation) -> PreparedAgent:
        """Load what a run needs (see :meth:`madqa.agents.harness.protocol.Agent.prepare` for what it may raise)."""

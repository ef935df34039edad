"""The base of the built-in agents (agents/harness/agent_base.py): the name comes from the options class, and
``prepare`` hands its arguments to ``load`` unchanged, as one ``Preparation``."""

from __future__ import annotations

from typing import Any

import pytest

from madqa.agents.harness.agent_base import AgentBase, Preparation
from madqa.agents.harness.config import RunConfig
from madqa.agents.harness.options import AgentOptions
from madqa.agents.harness.protocol import Host
from madqa.agents.harness.registry import AGENTS, get_agent


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_built_in_agent_is_named_by_its_options_class(name: str) -> None:
    agent = get_agent(name)
    assert isinstance(agent, AgentBase)
    assert agent.name == name == agent.options.agent


class _Echo(AgentBase):
    """An agent whose ``load`` gives back what it was handed."""

    options = AgentOptions

    def load(self, request: Preparation) -> Any:
        return request


def test_prepare_hands_its_arguments_to_load_as_one_preparation() -> None:
    config = RunConfig(model="local")
    host = Host(require_isolation=True, progress=False)
    got = _Echo().prepare(config, slots=3, model_options={"temperature": 0}, dataset={"name": "d"}, host=host)
    assert got == Preparation(config, 3, {"temperature": 0}, {"name": "d"}, host)
    assert _Echo().prepare(config) == Preparation(config, 1, None, None, Host())
    assert _Echo().check(config) is None  # nothing beyond the options' own checks

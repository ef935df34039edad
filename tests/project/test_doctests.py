"""Run the docstring examples of the modules that have them (each must hold at least one), one list for all
packages."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "name",
    [
        "madqa.agents.baselines.repl.corpus",
        "madqa.agents.corpus.retrieval.base",
        "madqa.agents.corpus.retrieval.spec",
        "madqa.agents.corpus.search",
        "madqa.agents.corpus.search.base",
        "madqa.agents.corpus.search.index",
        "madqa.agents.corpus.search.query",
        "madqa.agents.export.sts",
        "madqa.agents.harness.answer",
        "madqa.agents.harness.config",
        "madqa.agents.harness.errors",
        "madqa.agents.harness.protocol",
        "madqa.agents.harness.registry",
        "madqa.agents.harness.repeats",
        "madqa.agents.harness.resolve",
        "madqa.agents.integrations.mteb_task.data",
        "madqa.agents.models.factory",
        "madqa.agents.models.retry_policy",
        "madqa.agents.prompts",
        "madqa.agents.search_loop.embedder_ledger",
        "madqa.bench.measure",
        "madqa.bench.search_index",
        "madqa.cli.compare_cmd",
        "madqa.cli.compare_costs",
        "madqa.cli.compare_oracle",
        "madqa.loading_script.features",
        "madqa.loading_script.release_attachments",
        "madqa.loading_script.release_source",
        "madqa.loading_script.splits",
        "madqa.metric.board_cost",
        "madqa.space.agent_layout",
        "madqa.space.agent_tab",
        "madqa.space.display",
        "madqa.space.explore.html",
        "madqa.space.explore.runs",
        "madqa.space.human.batches",
        "madqa.space.human.corpus",
        "madqa.space.human.session",
        "madqa.space.leaderboard",
        "madqa.space.plots",
    ],
)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0

"""Run the docstring examples of the data-model modules."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "name",
    [
        "madqa.loading_script.features",
        "madqa.loading_script.splits",
        "madqa.loading_script.release_source",
        "madqa.bench.measure",
        "madqa.loading_script.release_attachments",
        "madqa.space.agent_tab",
    ],
)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0

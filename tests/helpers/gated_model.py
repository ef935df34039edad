"""A scripted search agent's model whose calls wait on gates, for browser tests that look at a run in progress.

``SPEC`` names it for the Space (``MADQA_SPACE_AGENT_MODEL``); it is short, as a configured model spec is, so the
model picker of a phone shows it whole. Model call N (counted from 0 across runs) waits for ``GATES[N]``; every run
makes two calls: a search for ``QUERY``, then the answer ``ANSWER`` citing the first page shown."""

from __future__ import annotations

import threading
from typing import Any

from helpers.fakes import ScriptedModel, search_then_cite

SPEC = "py:helpers.gated_model:model"
QUERY = "riverton OR invoice OR report"
ANSWER = "layout-answer-7"
GATES = [threading.Event() for _ in range(8)]
CALLS: list[int] = []
#: Only a bound on a broken test: a test opens every gate when it ends.
GATE_WAIT_S = 900


def reply(text: str, tools: list[str]) -> Any:
    """The next scripted reply, once its gate is open."""
    gate = GATES[len(CALLS)]
    CALLS.append(1)
    if not gate.wait(timeout=GATE_WAIT_S):
        raise RuntimeError("the test never opened the gate")
    return search_then_cite(ANSWER, QUERY)(text, tools)


def model(**_: Any) -> ScriptedModel:
    """The model the Space builds from :data:`SPEC`."""
    return ScriptedModel([reply], text_only=True, usage=None, model_id="gated")

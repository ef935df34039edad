"""The code-REPL agent as a registered :class:`~madqa.agents.harness.protocol.Agent` (``madqa run --agent repl``).

``prepare`` builds the corpus variables once, and per slot a root model, a sub-model (the root model itself unless
``sub_model`` names another spec; a second instance for the local model, whose prompt cache sub-calls would evict)
and a worker process, reused from question to question (its namespace is reset each time) unless the host asks for
a fresh one per question. Each code step becomes a :class:`~madqa.agents.harness.protocol.CodeEvent`. A results line
has no
``search_history``; ``steps`` = model calls (root + sub + extraction), ``usage`` over all of them (its ledger:
``agent`` = root + extraction calls, ``sub_model`` = the ``llm_query`` calls), ``effort`` (the breakdown) and
``repl`` (the worker's walls and restarts).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smolagents import Model
from smolagents.memory import ActionStep

from madqa.agents.baselines.repl.agent import ReplAgent, build_repl_agent
from madqa.agents.baselines.repl.corpus import build_corpus
from madqa.agents.baselines.repl.executor import ReplExecutor, default_observation_chars, default_sub_limits
from madqa.agents.baselines.repl.options import ReplOptions
from madqa.agents.harness.agent_base import AgentBase, Preparation
from madqa.agents.harness.config import RunConfig
from madqa.agents.harness.protocol import CodeEvent, Host, StepEvent
from madqa.agents.harness.smolagents_loop import SmolagentsPrepared
from madqa.agents.models.factory import make_model, parse_spec
from madqa.agents.models.llamacpp import LlamaCppModel
from madqa.agents.sandbox.pool import WorkerSlots, worker_pool
from madqa.agents.sandbox.worker import ReplWorker
from madqa.metric.ledger import totals as ledger_totals

logger = logging.getLogger(__name__)


@dataclass
class Slot:
    """What one question at a time uses: root model, sub-model, worker process."""

    model: Model
    sub_model: Model
    worker: ReplWorker


def record_fields(agent: ReplAgent | None) -> dict[str, Any]:
    """The code agent's part of a results line: effort (as ``steps`` and ``usage`` too) and the worker's walls."""
    if agent is None:
        return {}
    effort = agent.effort()
    by_role = agent.ledger()
    executor = agent.python_executor
    worker = executor.worker if isinstance(executor, ReplExecutor) else None
    restarts = worker.restarts - executor.restarts_at_start if worker else 0
    return {
        "steps": effort["steps"],
        "usage": {
            "input_tokens": effort["input_tokens"],
            "output_tokens": effort["output_tokens"],
            **cached_total(by_role),
            "by_role": by_role,
        },
        "extra": {"effort": effort, "repl": {"walls": dict(worker.walls) if worker else {}, "restarts": restarts}},
    }


def cached_total(by_role: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """``{"cached_input_tokens": N}`` over the roles where a provider reported it, else nothing (never a 0 made up)."""
    totals = ledger_totals(by_role)
    return {"cached_input_tokens": totals["cached_input_tokens"]} if "cached_input_tokens" in totals else {}


@dataclass(eq=False, repr=False, kw_only=True)
class PreparedReplAgent(WorkerSlots, SmolagentsPrepared[Slot]):
    """The code agent ready for a run: slots of models and workers, and the corpus variables."""

    corpus: Mapping[str, Any]
    host: Host

    def build(self, slot: Slot, item: Mapping[str, Any]) -> ReplAgent:
        """A fresh agent on the slot's models and worker, with the run's resolved limits."""
        s = self.settings
        return build_repl_agent(
            slot.model,
            self.corpus,
            slot.sub_model,
            max_steps=self.config.max_steps,
            sub_calls=s["sub_calls"],
            sub_call_chars=s["sub_call_chars"],
            observation_chars=s["observation_chars"],
            worker=slot.worker,
        )

    def step_events(self, agent: ReplAgent, step: ActionStep, shown: Sequence[StepEvent]) -> list[StepEvent]:
        """The step's code and what it printed (a step without code, e.g. the extraction, shows nothing)."""
        code = getattr(step, "code_action", None)
        if not code:
            return []
        error = f"{type(step.error).__name__}: {step.error}" if step.error else None
        return [CodeEvent(step=step.step_number, code=code, output=str(step.observations or ""), error=error)]

    def record_fields(self, agent: ReplAgent | None) -> dict[str, Any]:
        """See :func:`record_fields`."""
        return record_fields(agent)


class ReplAgentEntry(AgentBase):
    """The code-REPL agent of the paper (G.5); see :mod:`madqa.agents.baselines.repl.agent`."""

    options = ReplOptions

    def check(self, config: RunConfig) -> None:
        """Raise :class:`RunError` for a sub-model spec that cannot be parsed (the rest: :meth:`ReplOptions.check`)."""
        sub_model = config.typed(ReplOptions).sub_model
        if sub_model is not None:
            parse_spec(sub_model)

    def load(self, request: Preparation) -> PreparedReplAgent:
        """Start the workers (first: a host that requires isolation refuses before any model is loaded), then
        load the models and build the corpus variables.

        ``model_options`` go to the root model, and to the sub-model when it has the same provider.

        Raises:
            AgentUnavailableError: ``host.require_isolation`` and the worker's kernel walls are incomplete.
            ValueError: an invalid model spec or a missing model dependency.
        """
        wall_s = request.config.typed(ReplOptions).step_timeout
        with worker_pool(wall_s, request.slots, request.host) as workers:
            return self._prepare(request, workers)

    def _prepare(self, request: Preparation, workers: list[ReplWorker]) -> PreparedReplAgent:
        from madqa.loading_script.load import load_pages

        config, options = request.config, dict(request.model_options or {})
        given = config.typed(ReplOptions)
        same_provider = given.sub_model is not None and parse_spec(given.sub_model)[0] == parse_spec(config.model)[0]
        slots = []
        for worker in workers:
            model = make_model(config.model, **options)
            sub = model
            if given.sub_model is not None and given.sub_model != config.model:
                sub = make_model(given.sub_model, **(options if same_provider else {}))
            elif isinstance(model, LlamaCppModel):  # its own instance: sub-calls would evict the root's prompt cache
                sub = make_model(config.model, **options)
            slots.append(Slot(model, sub, worker))
        calls, chars = default_sub_limits(slots[0].sub_model)
        settings = config.settings(self.options)
        settings.update(
            sub_model=given.sub_model or config.model,
            sub_calls=calls if given.sub_calls is None else given.sub_calls,
            sub_call_chars=chars if given.sub_call_chars is None else given.sub_call_chars,
            observation_chars=(
                default_observation_chars(slots[0].model)
                if given.observation_chars is None
                else given.observation_chars
            ),
        )
        corpus = build_corpus(load_pages(config.dataset))
        return PreparedReplAgent(config, settings, slots, request.dataset, corpus=corpus, host=request.host)


#: The registered entry (:mod:`madqa.agents.harness.registry`).
AGENT = ReplAgentEntry()

"""``madqa run --ray``: questions answered by Ray actors across a cluster, the file written by the driver alone.

:class:`RayBackend` is a :class:`madqa.agents.harness.runner.Backend`. It starts one actor per alive node (or
``actors``),
each of which looks the agent up in the registry and prepares it once (models, corpus, index) for ``slots``
concurrent questions. The first actor is prepared before the others start, so a search index missing on a shared
``MADQA_HOME`` is built once, not raced by every node. The driver keeps ``workers`` questions in flight, always on
the least busy actor, and yields each record as it arrives; :func:`madqa.agents.harness.runner.run_benchmark` writes it
(append
+ fsync), so ``--resume``, ``--retry-errors`` and the progress bar are the local run's.

A lost node: its actors are restarted by Ray on a surviving node (soft node affinity) and the questions they held
are retried there (``max_task_retries``); a question whose worker keeps dying becomes a results line with an
``error`` naming the cause (rerun it with ``--resume --retry-errors``). A record reaches the file only when its
question's single result arrives, so nothing finished is lost and nothing is written twice.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from madqa.agents.harness.agent_base import Preparation
from madqa.agents.harness.config import RunConfig, RunError
from madqa.agents.harness.deadline import StopRequest
from madqa.agents.harness.errors import cut
from madqa.agents.harness.protocol import Host
from madqa.agents.harness.record import build_record
from madqa.agents.harness.registry import get_agent
from madqa.loading_script.ray_cluster import ray_session, worker_options

__all__ = ["AnswerWorker", "RayBackend"]

logger = logging.getLogger(__name__)

#: Times Ray retries a call whose actor died (node lost, worker crash), within one attempt of the driver.
TASK_RETRIES = 3
#: Attempts of the driver per question: a call Ray gave up on because its actor was unreachable (a node just lost,
#: its actor not yet restarted elsewhere) is sent again, to another actor, before it becomes an error line.
ATTEMPTS = 4
#: Seconds an actor that just failed a call gets no new question (time for Ray to restart it elsewhere).
COOLDOWN_S = 3.0
#: Seconds between two looks at the stop request (first Ctrl+C) while questions are in flight.
POLL_S = 0.25


class AnswerWorker:
    """The body of one Ray actor: the registered agent, prepared once, answering one question per call."""

    def __init__(
        self, config: dict[str, Any], slots: int, model_options: dict[str, Any] | None, dataset: dict[str, Any] | None
    ) -> None:
        """Prepare the agent (``config``: :class:`RunConfig` fields) for ``slots`` concurrent questions."""
        run_config = RunConfig(**config)
        self.prepared = get_agent(run_config.agent).prepare(
            run_config, slots=slots, model_options=model_options, dataset=dataset, host=Host(progress=False)
        )

    def ready(self) -> dict[str, Any]:
        """The agent's resolved settings (the results lines' ``config``): the agent is prepared when this returns."""
        return dict(self.prepared.settings)

    def answer(self, item: dict[str, Any]) -> dict[str, Any]:
        """The results line of one question."""
        return self.prepared.answer(item)


class RayBackend:
    """Answer questions on a Ray cluster (see the module docstring).

    Args:
        address: the cluster (``None``: ``RAY_ADDRESS`` or a new local instance; see
            :func:`madqa.loading_script.ray_cluster.ray_session`).
        actors: agent replicas (default: one per alive node); each answers ``ceil(workers / actors)`` questions at
            a time on its own threads.
        num_cpus: CPUs each actor reserves (default 0: model-bound agents mostly wait on their model server; give
            1 or more for agents that compute, such as the bundled local model).
    """

    def __init__(self, address: str | None = None, *, actors: int | None = None, num_cpus: float = 0.0) -> None:
        """Keep the settings; nothing is contacted until :meth:`prepare`."""
        if actors is not None and actors < 1:
            raise RunError("--ray-actors must be at least 1")
        self.address, self.actors, self.num_cpus = address, actors, num_cpus

    def prepare(self, request: Preparation) -> _RayAnswering:
        """Connect, start the actors and wait until each has prepared the agent.

        Raises:
            RunError: the agent could not be prepared on a worker (the worker's error is in the message).
            madqa.loading_script.ray_cluster.RayUnavailableError: Ray is not installed.
        """
        stack = contextlib.ExitStack()
        ray = stack.enter_context(ray_session(self.address))
        try:
            plan = self._plan(ray, request.slots)
            return _RayAnswering(
                ray, stack, request.config, plan, request.model_options, request.dataset, self.num_cpus
            )
        except BaseException:
            stack.close()
            raise

    def _plan(self, ray: Any, slots: int) -> list[tuple[str | None, int]]:
        """(node id to prefer, slots) per actor: spread over the alive nodes, the slots shared out."""
        nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")] or [None]
        count = max(1, min(self.actors or len(nodes), slots))
        per_actor = math.ceil(slots / count)
        return [(nodes[i % len(nodes)], per_actor) for i in range(count)]


class _RayAnswering:
    """The actors of one run, and the driver's scheduling loop."""

    def __init__(
        self,
        ray: Any,
        stack: contextlib.ExitStack,
        config: RunConfig,
        plan: list[tuple[str | None, int]],
        model_options: Mapping[str, Any] | None,
        dataset: Mapping[str, Any] | None,
        num_cpus: float,
    ) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.ray, self.stack, self.config = ray, stack, config
        self.settings: dict[str, Any] = config.settings(get_agent(config.agent).options)  # until an actor says
        self.dataset = dict(dataset or {})
        remote = ray.remote(AnswerWorker)
        self.actors: list[Any] = []
        self.slots: list[int] = []
        args = (asdict(config), dict(model_options or {}), self.dataset)
        for i, (node, slots) in enumerate(plan):
            strategy = NodeAffinitySchedulingStrategy(node, soft=True) if node else "DEFAULT"
            actor = remote.options(
                max_concurrency=slots,
                max_restarts=-1,
                max_task_retries=TASK_RETRIES,
                num_cpus=num_cpus,
                scheduling_strategy=strategy,
                **worker_options(),
            ).remote(args[0], slots, args[1], args[2])
            self.actors.append(actor)
            self.slots.append(slots)
            if i == 0:  # prepared alone first: it builds what is missing (the index) for the others to reuse
                self._wait_ready([actor])
        self._wait_ready(self.actors[1:])
        logger.info("answering on %d Ray actor(s) with %d slot(s) in all", len(self.actors), sum(self.slots))

    def _wait_ready(self, actors: Sequence[Any]) -> None:
        try:
            for settings in self.ray.get([a.ready.remote() for a in actors]):
                self.settings = settings  # model-dependent defaults resolved: error lines match the others
        except self.ray.exceptions.RayError as exc:
            raise RunError(f"the agent could not be prepared on a Ray worker: {_cause(exc)}") from None

    def answers(
        self, todo: Sequence[Mapping[str, Any]], workers: int, stop: StopRequest | None = None
    ) -> Iterator[dict[str, Any]]:
        """Keep ``workers`` questions in flight on the least busy actors; yield records as they arrive.

        Each question has at most one call in flight, and its record is yielded once, when a call returns: so a
        question retried after a lost node is still written exactly once. Once ``stop`` is set (first Ctrl+C), no
        question is sent and those in flight are waited for as :meth:`StopRequest.waiting` allows, then cancelled.
        """
        ray = self.ray
        pending = [(item, 1) for item in reversed(todo)]  # popped from the end: split order
        busy, cool = [0] * len(self.actors), [0.0] * len(self.actors)
        flight: dict[Any, tuple[int, Mapping[str, Any], int, float]] = {}
        limit = max(1, min(workers, sum(self.slots)))
        try:
            while pending or flight:
                now = time.monotonic()
                ready = [i for i in range(len(self.actors)) if cool[i] <= now] or list(range(len(self.actors)))
                while pending and len(flight) < limit and not (stop and stop.is_set()):
                    slot = min(ready, key=lambda i: busy[i] / self.slots[i])
                    item, attempt = pending.pop()
                    ref = self.actors[slot].answer.remote(dict(item))
                    flight[ref] = (slot, item, attempt, time.monotonic())
                    busy[slot] += 1
                if stop is not None and stop.is_set():
                    pending.clear()
                    if not stop.waiting(len(flight)):
                        return
                done, _ = ray.wait(list(flight), num_returns=1, timeout=POLL_S)  # polls the stop
                for ref in done:
                    slot, item, attempt, started = flight.pop(ref)
                    busy[slot] -= 1
                    try:
                        record: dict[str, Any] = ray.get(ref)
                    except ray.exceptions.RayActorError as exc:
                        cool[slot] = time.monotonic() + COOLDOWN_S
                        if attempt < ATTEMPTS:
                            logger.info(
                                "question %s: its worker was lost (%s); sending it again", item.get("id"), _cause(exc)
                            )
                            pending.append((item, attempt + 1))
                            continue
                        record = self._error_record(item, started, exc)
                    except ray.exceptions.RayError as exc:  # e.g. its object lost with its node
                        record = self._error_record(item, started, exc)
                    yield record
        finally:
            for ref in flight:  # the writer stopped (error, Ctrl+C): nothing more will be written
                with contextlib.suppress(Exception):
                    ray.cancel(ref)

    def _error_record(self, item: Mapping[str, Any], started: float, exc: BaseException) -> dict[str, Any]:
        """The results line of a question the cluster gave up on (rerun it with ``--resume --retry-errors``)."""
        logger.warning("question %s failed on the cluster: %s", item.get("id"), _cause(exc))
        return build_record(
            item,
            agent_name=self.config.agent,
            model=self.config.model,
            elapsed_s=time.monotonic() - started,
            error=f"ray: {cut(_cause(exc))}",
            error_kind="worker",
            config=self.settings,
            dataset=self.dataset,
        )

    def close(self) -> None:
        """Stop the actors and leave the cluster (if this run connected to it)."""
        for actor in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(actor)
        self.stack.close()


def _cause(exc: BaseException) -> str:
    """The last line of a Ray error (the remote exception's message, without the remote traceback)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__

"""``madqa run --agent repl``: the runner's part for the code-REPL agent (:mod:`.repl_agent`).

:func:`repl_answerer` prepares what the threads of :func:`madqa.agents.run.run_benchmark` share: the corpus
variables (built once), and per thread a root model, a sub-model (the root model itself unless ``--sub-model``
names another spec; a second instance for the local model, whose prompt cache sub-calls would evict) and a worker
process, reused from question to question (its namespace is reset each time).
Each results line is the common one (:func:`madqa.agents.record.build_record`) without ``search_history``, with
``steps`` = model calls (root + sub + extraction), ``usage`` over all of them, ``effort`` (the breakdown) and
``repl`` (the worker's walls and restarts).
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from .models import LlamaCppModel, make_model, parse_spec
from .record import build_record
from .repl_agent import (
    build_corpus,
    build_repl_agent,
    default_observation_chars,
    default_sub_limits,
    repl_record_fields,
)
from .repl_worker import ReplWorker, WorkerLimits

if TYPE_CHECKING:
    from smolagents import Model

    from .run import RunConfig

logger = logging.getLogger(__name__)


@dataclass
class _Slot:
    """What one runner thread uses: root model, sub-model, worker process."""

    model: Model
    sub_model: Model
    worker: ReplWorker


def repl_answerer(
    config: RunConfig,
    todo: Sequence[Mapping[str, Any]],
    workers: int,
    model_options: Mapping[str, Any],
    *,
    dataset: Mapping[str, Any] | None = None,
) -> tuple[Callable[[Mapping[str, Any]], dict[str, Any]], Callable[[], None]]:
    """``(answer(item) -> results line, finish())`` for the REPL agent; ``finish`` stops the worker processes.

    ``model_options`` go to the root model, and to the sub-model when it has the same provider; ``dataset`` is the
    provenance stored in every line (:func:`madqa.agents.record.build_record`).

    Raises:
        ValueError: an invalid model spec or a missing model dependency.
    """
    from madqa.loading_script.load import load_pages

    from .run import BM25_ONLY

    corpus = build_corpus(load_pages(config.dataset))
    same_provider = config.sub_model is not None and parse_spec(config.sub_model)[0] == parse_spec(config.model)[0]
    slots: queue.Queue[_Slot] = queue.Queue()
    for _ in range(min(workers, len(todo))):
        model = make_model(config.model, **dict(model_options))
        sub = model
        if config.sub_model is not None and config.sub_model != config.model:
            sub = make_model(config.sub_model, **(dict(model_options) if same_provider else {}))
        elif isinstance(model, LlamaCppModel):  # its own instance: sub-calls would evict the root's prompt cache
            sub = make_model(config.model, **dict(model_options))
        slots.put(_Slot(model, sub, ReplWorker(WorkerLimits(wall_s=config.step_timeout))))
    first = slots.queue[0]
    calls, chars = default_sub_limits(first.sub_model)
    sub_calls = calls if config.sub_calls is None else config.sub_calls
    sub_chars = chars if config.sub_call_chars is None else config.sub_call_chars
    settings = {k: v for k, v in asdict(config).items() if k != "limit" and k not in BM25_ONLY}
    clip = default_observation_chars(first.model) if config.observation_chars is None else config.observation_chars
    settings.update(sub_model=config.sub_model or config.model, sub_calls=sub_calls, sub_call_chars=sub_chars,
                    observation_chars=clip)  # fmt: skip

    def answer(item: Mapping[str, Any]) -> dict[str, Any]:
        slot = slots.get()
        start = time.perf_counter()
        agent, output, error = None, None, None
        try:
            agent = build_repl_agent(slot.model, corpus, slot.sub_model, max_steps=config.max_steps,
                                     sub_calls=sub_calls, sub_call_chars=sub_chars, observation_chars=clip,
                                     worker=slot.worker)  # fmt: skip
            output = agent.solve(str(item["question"]))
        except Exception as exc:  # noqa: BLE001 - recorded in the line; one failing question must not stop the run
            error = f"{type(exc).__name__}: {exc}"
            logger.warning("question %s failed: %s", item.get("id"), error)
        finally:
            slots.put(slot)
        elapsed = time.perf_counter() - start
        record = build_record(item, agent_name=config.agent, model=config.model, elapsed_s=elapsed, output=output,
                              config=settings, dataset=dataset,
                              agent=agent, error=error)  # type: ignore[arg-type]  # fmt: skip
        record.pop("search_history", None)
        if agent is not None:
            record.update(repl_record_fields(agent))
        return record

    def finish() -> None:
        while not slots.empty():
            slots.get_nowait().worker.close()

    return answer, finish

"""The per-question loop the smolagents-based agents share: a pool of slots, a fresh agent per question, events.

:class:`SmolagentsPrepared` implements :class:`madqa.agents.harness.protocol.PreparedAgent` for agents whose question
runs
are smolagents agents with a ``solve_steps(question)`` generator (it yields each ``ActionStep`` and returns the
normalised ``{"answer", "citations"}``). A *slot* is what one thread needs (a model object; for the code agent also a
sub-model and a worker process); ``stream`` takes a slot for the question, builds a fresh agent on it, turns each
step into events, and ends with the :class:`~madqa.agents.harness.protocol.AnswerEvent` that carries the results line;
``answer`` is that same stream, drained. An exception while answering becomes the line's ``error`` (``Type:
message``, cut short) and ``error_kind`` (:mod:`madqa.agents.harness.errors`): one failing question never stops a run.
The run's ``question_timeout`` is the question's wall-clock budget (:mod:`madqa.agents.harness.deadline`), checked
after
every step; a question that runs out ends as an error line of kind ``timeout``.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import InitVar, dataclass
from typing import Any, Generic, Protocol, TypeVar

from smolagents.memory import ActionStep
from smolagents.utils import AgentMaxStepsError

from madqa.agents.harness.config import RunConfig
from madqa.agents.harness.deadline import Deadline, active
from madqa.agents.harness.errors import QuestionTimeoutError, classify, short_error
from madqa.agents.harness.protocol import AnswerEvent, Citation, StepEvent
from madqa.agents.harness.record import SolvedAgent, build_record, mark_failed_step

logger = logging.getLogger(__name__)

SlotT = TypeVar("SlotT")


class StepSolver(SolvedAgent, Protocol):
    """A smolagents agent built for one question."""

    def solve_steps(self, question: str) -> Generator[ActionStep, None, dict[str, Any]]:
        """Run on ``question``, yielding each step; returns ``{"answer": [...], "citations": [...]}``."""
        ...


@dataclass(eq=False, repr=False)
class SmolagentsPrepared(ABC, Generic[SlotT]):
    """A prepared smolagents agent: subclasses say how to build an agent on a slot and what its steps show.

    A subclass is a keyword-only dataclass (``@dataclass(eq=False, repr=False, kw_only=True)``) whose fields are
    what its agents share (an index, a retriever, a renderer), given after the five arguments here.

    Args:
        config: the run's settings (defaults resolved).
        settings: the results lines' ``config``.
        slots: one per concurrent question (the subclass's ``load`` has built them).
        dataset: ``{"name", "revision"}`` for the results lines.
        costs: the run's non-model costs for the results lines (``costs``: corpus and OCR pages, the search index's
            build seconds; :func:`madqa.agents.search_loop.resources.corpus_costs`), ``None``: none recorded.
    """

    config: RunConfig
    settings: dict[str, Any]
    slots: InitVar[Sequence[SlotT]]
    dataset: Mapping[str, Any] | None = None
    costs: Mapping[str, Any] | None = None

    def __post_init__(self, slots: Sequence[SlotT]) -> None:
        """Put the slots in the pool that questions take them from."""
        self._slots: queue.Queue[SlotT] = queue.Queue()
        for slot in slots:
            self._slots.put(slot)

    @abstractmethod
    def build(self, slot: SlotT, item: Mapping[str, Any]) -> StepSolver:
        """A fresh agent for the question ``item`` on ``slot``."""

    @abstractmethod
    def step_events(self, agent: Any, step: ActionStep, shown: Sequence[StepEvent]) -> list[StepEvent]:
        """The events of one finished step (``shown``: the events of this question so far)."""

    @abstractmethod
    def record_fields(self, agent: Any | None) -> dict[str, Any]:
        """The agent's part of the results line: keyword arguments of
        :func:`madqa.agents.harness.record.build_record`."""

    def release(self, slot: SlotT) -> None:
        """Called when a question is done with ``slot`` (before it is reused)."""

    def close_slot(self, slot: SlotT) -> None:
        """Free what ``slot`` holds (at :meth:`close`)."""

    def answer(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The results line of one question row."""
        events = list(self.stream(str(item["question"]), item))
        event = events[-1] if events else None
        if not isinstance(event, AnswerEvent):
            raise RuntimeError("the stream ended without an answer event")
        return dict(event.record)

    def stream(
        self, question: str, item: Mapping[str, Any] | None = None, *, stop: Callable[[], bool] | None = None
    ) -> Iterator[StepEvent]:
        """Answer ``question`` on a free slot, yielding each step's events, then the AnswerEvent (none when ``stop``
        ended it between steps: see :meth:`.protocol.PreparedAgent.stream`)."""
        item = item if item is not None else {"id": "", "question": question}
        slot = self._slots.get()
        try:
            start = time.perf_counter()
            agent: Any = None
            output: dict[str, Any] | None = None
            error: str | None = None
            kind: str | None = None
            shown: list[StepEvent] = []
            # Made current around each step only: the caller may resume this stream on another thread (the Space).
            deadline = Deadline(self.config.question_timeout)
            run: Generator[ActionStep, None, dict[str, Any]] | None = None
            stopped = False
            try:
                with active(deadline):
                    agent = self.build(slot, item)
                    run = agent.solve_steps(question)
                while True:
                    try:
                        with active(deadline):
                            step = next(run)
                    except StopIteration as stop:
                        output = stop.value
                        break
                    events = self.step_events(agent, step, shown)
                    shown.extend(events)
                    yield from events
                    if not (step.is_final_answer or isinstance(step.error, AgentMaxStepsError)):
                        if stop is not None and stop():  # asked after every step, also one that showed nothing
                            stopped = True
                            break
                        deadline.check()  # an answer in hand is kept, even if it came in late
            except Exception as exc:  # noqa: BLE001 - recorded in the line; one failing question must not stop the run
                if agent is not None:
                    mark_failed_step(agent, exc)
                if deadline.expired():  # e.g. a model call cut by the budget: the budget is the cause
                    exc = QuestionTimeoutError(deadline.seconds or 0.0)
                error, kind = short_error(exc), classify(exc)
                logger.warning("question %s failed (%s): %s", item.get("id"), kind, error)
            finally:
                if run is not None:  # a question stopped between steps: end smolagents' run now, not at GC
                    with contextlib.suppress(Exception):
                        run.close()
            # Built before the slot is released: the agent's part may read the slot (e.g. a worker's restarts).
            record = (
                None
                if stopped
                else build_record(
                    item,
                    agent_name=self.config.agent,
                    model=self.config.model,
                    elapsed_s=time.perf_counter() - start,
                    output=output,
                    agent=agent,
                    error=error,
                    error_kind=kind,
                    calls=deadline.calls.as_dict() if deadline.calls.attempts else None,
                    config=self.settings,
                    dataset=self.dataset,
                    costs=self.costs,
                    **self.record_fields(agent),
                )
            )
        finally:
            try:
                self.release(slot)
            finally:
                self._slots.put(slot)
        if record is not None:  # None: the caller's stop ended it between steps (no line, no answer event)
            yield answer_event(record)

    def close(self) -> None:
        """Free every slot."""
        while True:
            try:
                slot = self._slots.get_nowait()
            except queue.Empty:
                return
            self.close_slot(slot)


def answer_event(record: Mapping[str, Any]) -> AnswerEvent:
    """The :class:`AnswerEvent` of a results line."""
    cites: Iterable[Mapping[str, Any]] = record.get("citations") or []
    return AnswerEvent(
        answer=tuple(record.get("answer") or ()),
        citations=tuple(Citation(str(c["document"]), int(c["page"])) for c in cites),
        steps=int(record.get("steps") or 0),
        elapsed_s=float(record.get("elapsed_s") or 0.0),
        error=record.get("error"),
        record=record,
    )


def drain(steps: Generator[Any, None, dict[str, Any]]) -> dict[str, Any]:
    """Run a ``solve_steps`` generator to its end; its return value (the answer)."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return dict(stop.value)

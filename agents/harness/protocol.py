"""The one interface of everything that produces results lines, and the typed step events a UI renders.

An :class:`Agent` is registered by name (:mod:`.registry`); the runner (:mod:`.run`) and the Space look it up and
never know which agent it is. ``prepare`` runs once per run (models, corpus, worker processes) and returns a
:class:`PreparedAgent`, whose ``answer(item)`` gives one results line
(:func:`madqa.agents.harness.record.build_record`)
and whose ``stream(question)`` yields :data:`StepEvent` values for a UI, ending with one :class:`AnswerEvent` that
carries the same results line. The interface is deliberately small: every method is one that every agent (a
model-driven one, a human baseline, a distributed worker) can honour.

>>> event = SearchEvent(step=1, query="invoice total", pages=(Citation("a.pdf", 2),), count=1)
>>> event.error is None, event.pages[0].page
(True, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from madqa.agents.harness.config import RunConfig, RunError
from madqa.agents.harness.options import AgentOptions
from madqa.metric.schema import Citation

__all__ = [
    "Agent",
    "AgentUnavailableError",
    "AnswerEvent",
    "Citation",
    "CodeEvent",
    "Host",
    "PreparedAgent",
    "SearchEvent",
    "StepEvent",
]


class AgentUnavailableError(RunError):
    """This host cannot run the agent as it demands (e.g. the code agent's OS isolation is missing)."""


@dataclass(frozen=True)
class Host:
    """What the host of a run demands; agents honour the parts that concern them and ignore the rest.

    Attributes:
        require_isolation: refuse (:class:`AgentUnavailableError`, at ``prepare``) to run model-written code
            without its kernel walls, instead of warning (the Space).
        protected_paths: files model-written code must never be able to read, on top of ``MADQA_HOME``.
        sandbox_per_question: start a fresh sandbox process for every question instead of reusing one per
            thread, so that questions of different visitors never share a process (the Space).
        progress: show progress bars while building an index.
    """

    require_isolation: bool = False
    protected_paths: tuple[str, ...] = ()
    sandbox_per_question: bool = False
    progress: bool = True


@dataclass(frozen=True)
class SearchEvent:
    """The agent searched.

    Attributes:
        step: the model call (1-based) that asked for the search.
        query: the query as written.
        pages: the result pages shown, best first.
        count: number of pages returned.
        error: why the search returned nothing usable (the observation the agent got), else ``None``.
    """

    step: int
    query: str
    pages: tuple[Citation, ...] = ()
    count: int = 0
    error: str | None = None


@dataclass(frozen=True)
class CodeEvent:
    """The agent ran one code step.

    Attributes:
        step: the model call (1-based) that wrote the code.
        code: the code run.
        output: what the step printed and returned, as the agent saw it.
        error: the step's error (a refused import, a limit hit, an exception), else ``None``.
    """

    step: int
    code: str
    output: str = ""
    error: str | None = None


@dataclass(frozen=True)
class AnswerEvent:
    """The run ended (always the last event of a stream).

    Attributes:
        answer: the answer strings (empty when there is none).
        citations: the cited pages.
        steps: the effort recorded in the results line (``steps``: searches of the search agent, model calls of
            the code agent).
        elapsed_s: wall time of the question.
        error: why there is no usable answer (the results line's ``error``), else ``None``.
        record: the results line of the question, as ``answer`` returns it.
    """

    answer: tuple[str, ...]
    citations: tuple[Citation, ...]
    steps: int
    elapsed_s: float
    error: str | None = None
    record: Mapping[str, Any] = field(default_factory=dict, repr=False)


#: Every event a stream yields.
StepEvent = SearchEvent | CodeEvent | AnswerEvent


class PreparedAgent(Protocol):
    """An agent ready to answer (models loaded, corpus built); ``answer`` and ``stream`` may run on ``slots`` threads.

    Attributes:
        settings: the results lines' ``config`` (the run's settings, defaults resolved).
    """

    settings: dict[str, Any]

    def answer(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The results line of one question row (``id``, ``question``); a failure becomes the line's ``error``."""
        ...

    def stream(
        self, question: str, item: Mapping[str, Any] | None = None, *, stop: Callable[[], bool] | None = None
    ) -> Iterator[StepEvent]:
        """Answer ``question`` (``item``: its row, when it has one), yielding events; the last is an AnswerEvent.

        ``stop`` is asked after every step of the agent, whether or not the step yielded events (a step that shows
        nothing must not run on past a visitor's Stop): once it says ``True`` before an answer, the stream ends
        there, without an AnswerEvent.
        """
        ...

    def close(self) -> None:
        """Release models' worker processes and other resources (the object is unusable afterwards)."""
        ...


class Agent(Protocol):
    """A registered agent: its options class, its own checks, and its preparation for a run.

    Attributes:
        name: the name ``madqa run --agent`` takes (and results lines' ``agent``).
        options: its options class (:class:`~madqa.agents.harness.options.AgentOptions`): the settings beyond the
            runner's, their defaults, help and validation; its recorded fields follow
            :data:`~madqa.agents.harness.config.COMMON_FIELDS` in its results lines' ``config``.
    """

    name: str
    options: type[AgentOptions]

    def check(self, config: RunConfig) -> None:
        """Raise :class:`~madqa.agents.harness.config.RunError` for settings this agent cannot run that its options
        class cannot judge alone (e.g. a model spec); the framework has checked the options already."""
        ...

    def prepare(
        self,
        config: RunConfig,
        *,
        slots: int = 1,
        model_options: Mapping[str, Any] | None = None,
        dataset: Mapping[str, Any] | None = None,
        host: Host = Host(),  # noqa: B008 - a frozen value
    ) -> PreparedAgent:
        """Load what a run of ``config`` needs, for ``slots`` concurrent questions.

        Args:
            config: the run's settings (already checked).
            slots: questions that may be answered at the same time (threads).
            model_options: options for the model objects (:func:`madqa.agents.models.factory.make_model`).
            dataset: ``{"name", "revision"}`` stored in every results line.
            host: what the host demands.

        Raises:
            AgentUnavailableError: the host's demands cannot be met.
            ValueError: an invalid model spec or a missing model dependency.
        """
        ...

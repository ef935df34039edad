"""The batch runner: a split × an agent × a model → one results line per question (``madqa run``).

The agent is looked up by name (:func:`madqa.agents.registry.get_agent`) and prepared once
(:class:`madqa.agents.protocol.PreparedAgent`: models, corpus, worker processes); questions then run on
``workers`` threads, each calling ``answer(item)``. Each finished question is appended to the output at once
(:class:`madqa.agents.record.ResultsWriter`: one write, flush, fsync), so a killed run loses at most the questions
in flight. ``resume`` skips the ids already in the file (after dropping a torn last line); an exception while
answering one question becomes that line's ``error`` (the agent records it) and the run goes on.

Where questions are answered is a :class:`Backend`: this process's threads by default (:class:`LocalBackend`), or
a Ray cluster (:class:`madqa.agents.ray_run.RayBackend`, ``madqa run --ray``). Either way this process alone writes
the file, in completion order, so resume and the crash-safety above do not depend on the backend.

Running accuracy is not computed here (agents may import only ``madqa.metric.schema``): :class:`Progress` receives
every record and the command line (``cli/run_cmd.py``) scores it with the metric's ANLS*.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .config import RunConfig, RunError
from .models import parse_spec
from .record import ResultsWriter, read_finished, rewrite_without
from .registry import get_agent

__all__ = ["Answering", "Backend", "LocalBackend", "Progress", "RunConfig", "RunError", "RunSummary",
           "prepare_output", "run_benchmark", "select_items", "write_records"]

logger = logging.getLogger(__name__)


class Progress(Protocol):
    """Receives the run's progress (the command line shows it with tqdm)."""

    def start(self, total: int, finished: Sequence[Mapping[str, Any]]) -> None:
        """Called once: questions selected, and the records already in the file (resume)."""

    def update(self, record: Mapping[str, Any]) -> None:
        """Called after each new record is written."""


class Answering(Protocol):
    """A prepared agent behind a backend: answers questions, yielding each record as soon as it is done."""

    def answers(self, todo: Sequence[Mapping[str, Any]], workers: int) -> Iterator[dict[str, Any]]:
        """Answer ``todo`` with ``workers`` questions in flight; records come in completion order (closing the
        iterator stops the work)."""
        ...

    def close(self) -> None:
        """Release the agent (models, workers, cluster actors)."""
        ...


class Backend(Protocol):
    """Where the questions of a run are answered (the agent is prepared there, once per worker)."""

    def prepare(self, config: RunConfig, *, slots: int, model_options: Mapping[str, Any] | None,
                dataset: Mapping[str, Any] | None) -> Answering:
        """Prepare ``config``'s agent for ``slots`` concurrent questions; raises as ``Agent.prepare`` does."""
        ...


class _Threads:
    """:class:`Answering` on this process's threads, all sharing one prepared agent."""

    def __init__(self, prepared: Any) -> None:
        self.prepared = prepared

    def answers(self, todo: Sequence[Mapping[str, Any]], workers: int) -> Iterator[dict[str, Any]]:
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(todo)))) as pool:
            futures = [pool.submit(self.prepared.answer, it) for it in todo]
            try:
                for future in as_completed(futures):
                    yield future.result()
            except BaseException:  # also GeneratorExit: the writer stopped, drop what has not started
                for f in futures:
                    f.cancel()
                raise

    def close(self) -> None:
        self.prepared.close()


class LocalBackend:
    """The default :class:`Backend`: the agent prepared once in this process, questions on threads."""

    def prepare(self, config: RunConfig, *, slots: int, model_options: Mapping[str, Any] | None,
                dataset: Mapping[str, Any] | None) -> Answering:
        """Prepare the registered agent here (see :meth:`Backend.prepare`)."""
        return _Threads(get_agent(config.agent).prepare(config, slots=slots, model_options=model_options,
                                                        dataset=dataset))


@dataclass
class RunSummary:
    """What a run did.

    Attributes:
        output: the results file.
        selected: questions selected (split, limit).
        skipped: already in the file (resume).
        written: lines written by this run.
        errors: written lines with an ``error``.
    """

    output: Path
    selected: int = 0
    skipped: int = 0
    written: int = 0
    errors: int = 0
    error_ids: list[str] = field(default_factory=list)


def prepare_output(
    path: Path, *, resume: bool, overwrite: bool, retry_errors: bool, config: RunConfig
) -> dict[str, Any]:
    """Check or reset the output file; returns the finished records by id (empty unless resuming)."""
    if not path.exists() or path.stat().st_size == 0:
        return {}
    if not resume:
        if overwrite:
            path.unlink()
            return {}
        raise RunError(f"{path} already exists: add --resume to complete it, or --overwrite to start again")
    finished = read_finished(path)
    other = {(r.get("agent"), r.get("model")) for r in finished.values()} - {(config.agent, config.model)}
    if other:
        agent, model = sorted(other, key=str)[0]
        raise RunError(f"{path} holds results of agent {agent!r} with model {model!r}; resume with the same "
                       "--agent and --model, or write to another file")  # fmt: skip
    if retry_errors:
        failed = {rid for rid, r in finished.items() if r.get("error")}
        if failed:
            logger.info("retrying %d question(s) that ended with an error", len(failed))
            rewrite_without(path, failed)
            finished = {rid: r for rid, r in finished.items() if rid not in failed}
    return finished


def select_items(config: RunConfig) -> list[dict[str, Any]]:
    """The questions to run (``id``, ``question``), in split order."""
    from madqa.loading_script.load import load_questions

    items = load_questions(config.split, config.dataset)
    return items[: config.limit] if config.limit is not None else items


def run_benchmark(
    config: RunConfig,
    output: str | os.PathLike[str],
    *,
    resume: bool = False,
    overwrite: bool = False,
    retry_errors: bool = False,
    workers: int = 1,
    progress: Progress | None = None,
    model_options: Mapping[str, Any] | None = None,
    backend: Backend | None = None,
) -> RunSummary:
    """Run ``config`` and append one results line per question to ``output``.

    ``backend`` answers the questions (default :class:`LocalBackend`: threads of this process); ``workers`` is the
    number of questions in flight either way.

    Raises:
        RunError: bad settings, an unknown agent, an output file that exists without ``resume``/``overwrite``, or
            one that cannot be resumed (other model, invalid lines).
        ValueError: an invalid model spec or a missing model dependency (:func:`madqa.agents.models.make_model`).
        madqa.loading_script.load.DatasetUnavailableError: the split cannot be read.
    """
    agent = get_agent(config.agent)
    config.check()
    agent.check(config)
    parse_spec(config.model)
    if workers < 1:
        raise RunError("workers must be at least 1")
    path = Path(output)
    try:
        finished = prepare_output(path, resume=resume, overwrite=overwrite, retry_errors=retry_errors, config=config)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    items = select_items(config)
    from madqa.loading_script.release import dataset_provenance

    provenance = dataset_provenance(config.dataset)
    todo = [it for it in items if str(it["id"]) not in finished]
    summary = RunSummary(path, selected=len(items), skipped=len(items) - len(todo))
    if summary.skipped:
        logger.info("resuming %s: %d of %d question(s) already done", path, summary.skipped, len(items))
    if not todo:
        return summary
    answering = (backend or LocalBackend()).prepare(config, slots=min(workers, len(todo)),
                                                    model_options=model_options, dataset=provenance)
    try:
        if progress is not None:
            progress.start(len(items), [finished[str(it["id"])] for it in items if str(it["id"]) in finished])
        return write_records(path, answering.answers(todo, workers), summary, progress)
    finally:
        answering.close()


def write_records(path: Path, records: Iterator[dict[str, Any]], summary: RunSummary,
               progress: Progress | None) -> RunSummary:
    """Append each record to ``path`` as soon as it comes (closing ``records`` on the way out, error or not).

    The runner's one writing loop; ``madqa bench scale`` times it with its own answering.
    """
    with ResultsWriter(path) as writer, contextlib.closing(records):  # type: ignore[type-var]
        for record in records:
            writer.write(record)
            summary.written += 1
            if record["error"]:
                summary.errors += 1
                summary.error_ids.append(record["id"])
            if progress is not None:
                progress.update(record)
    return summary

"""The batch runner: a split × an agent × a model → one results line per question (``madqa run``).

The agent is looked up by name (:func:`madqa.agents.harness.registry.get_agent`) and prepared once
(:class:`madqa.agents.harness.protocol.PreparedAgent`: models, corpus, worker processes); questions then run on
``workers`` threads, each calling ``answer(item)``; a question starts only when a thread is free. Each finished
question is appended to the output at once (:class:`madqa.agents.harness.record.ResultsWriter`: one write, flush,
fsync), so
a killed run loses at most the questions in flight. ``resume`` skips the ids already in the file (after dropping a
torn last line); an exception while answering one question becomes that line's ``error`` (the agent records it)
and the run goes on.

Resuming refuses a file whose lines were written with other settings (:func:`mixed_settings`; ``allow_mixed``
allows it). ``retry_errors`` runs again only the lines of an infrastructure failure (``error_kind`` in
:data:`madqa.agents.harness.errors.RETRYABLE`), never a model's own missing answer; each line counts its ``attempts``.
A
:class:`madqa.agents.harness.deadline.StopRequest` (the first Ctrl+C of ``madqa run``) stops starting questions and
waits
a bounded time for those in flight; every finished line is kept.

Where questions are answered is a :class:`Backend`: this process's threads by default (:class:`LocalBackend`), or
a Ray cluster (:class:`madqa.agents.harness.ray_run.RayBackend`, ``madqa run --ray``). Either way this process alone
writes
the file, in completion order, so resume and the crash-safety above do not depend on the backend.

Running accuracy is not computed here (agents may import only ``madqa.metric.schema``): :class:`Progress` receives
every record and the command line (``cli/run_cmd.py``) scores it with the metric's ANLS*.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from madqa.agents.harness.agent_base import Preparation
from madqa.agents.harness.config import Repeat, RunConfig, RunError, check_settings, public_options
from madqa.agents.harness.deadline import StopRequest
from madqa.agents.harness.errors import RETRYABLE, kind_of_line
from madqa.agents.harness.record import ResultsWriter, read_lines, rewrite_without
from madqa.agents.harness.registry import check_config, get_agent
from madqa.agents.models.factory import effective_options, parse_spec

__all__ = [
    "Answering",
    "Backend",
    "LocalBackend",
    "Progress",
    "Resumed",
    "RunConfig",
    "RunError",
    "RunSummary",
    "StopRequest",
    "prepare_output",
    "run_benchmark",
    "select_items",
    "write_records",
]

logger = logging.getLogger(__name__)

#: Seconds between two looks at the stop request while questions are in flight.
POLL_S = 0.25


class Progress(Protocol):
    """Receives the run's progress (the command line shows it with tqdm)."""

    def start(self, total: int, finished: Sequence[Mapping[str, Any]]) -> None:
        """Called once: questions selected, and the records already in the file (resume)."""

    def update(self, record: Mapping[str, Any]) -> None:
        """Called after each new record is written."""


class Answering(Protocol):
    """A prepared agent behind a backend: answers questions, yielding each record as soon as it is done."""

    settings: dict[str, Any]  # the results lines' config (defaults resolved), known once prepared

    def answers(
        self, todo: Sequence[Mapping[str, Any]], workers: int, stop: StopRequest | None = None
    ) -> Iterator[dict[str, Any]]:
        """Answer ``todo`` with ``workers`` questions in flight; records come in completion order (closing the
        iterator stops the work). Once ``stop`` is set, no question starts and those in flight are waited for as
        :meth:`StopRequest.waiting` allows."""
        ...

    def close(self) -> None:
        """Release the agent (models, workers, cluster actors)."""
        ...


class Backend(Protocol):
    """Where the questions of a run are answered (the agent is prepared there, once per worker)."""

    def prepare(self, request: Preparation) -> Answering:
        """Prepare ``request.config``'s agent for ``request.slots`` concurrent questions; raises as
        ``Agent.prepare`` does."""
        ...


class _Threads:
    """:class:`Answering` on this process's threads, all sharing one prepared agent."""

    def __init__(self, prepared: Any) -> None:
        self.prepared = prepared
        self.settings: dict[str, Any] = dict(getattr(prepared, "settings", {}))

    def answers(
        self, todo: Sequence[Mapping[str, Any]], workers: int, stop: StopRequest | None = None
    ) -> Iterator[dict[str, Any]]:
        limit = max(1, min(workers, len(todo)))
        pending = list(reversed(todo))  # popped from the end: split order
        flight: set[Future[dict[str, Any]]] = set()
        pool = ThreadPoolExecutor(max_workers=limit)
        abandon = False
        try:
            while pending or flight:
                # Submitted one by one as threads free up, so a stop leaves nothing queued behind the pool.
                while pending and len(flight) < limit and not (stop and stop.is_set()):
                    flight.add(pool.submit(self.prepared.answer, pending.pop()))
                if stop is not None and stop.is_set():
                    pending.clear()
                    if not stop.waiting(len(flight)):
                        abandon = bool(flight)
                        return
                done, flight = wait(flight, timeout=POLL_S, return_when=FIRST_COMPLETED)  # polls the stop
                for future in done:
                    yield future.result()
        finally:  # also GeneratorExit (the writer stopped): wait for the questions in flight, unless abandoned
            pool.shutdown(wait=not abandon, cancel_futures=True)

    def close(self) -> None:
        self.prepared.close()


class LocalBackend:
    """The default :class:`Backend`: the agent prepared once in this process, questions on threads."""

    def prepare(self, request: Preparation) -> Answering:
        """Prepare the registered agent here (see :meth:`Backend.prepare`)."""
        prepared = get_agent(request.config.agent).prepare(
            request.config,
            slots=request.slots,
            model_options=request.model_options,
            dataset=request.dataset,
            host=request.host,
        )
        return _Threads(prepared)


@dataclass
class RunSummary:
    """What a run did.

    Attributes:
        output: the results file.
        selected: questions selected (split, limit).
        skipped: already in the file (resume).
        written: lines written by this run.
        errors: written lines with an ``error``.
        error_ids: their ids.
        retryable_ids: the ids of those that failed for an infrastructure reason (``--retry-errors`` reruns them).
        interrupted: the run was stopped (:class:`StopRequest`) before every question was answered.
        abandoned: questions still in flight when the stop's wait ran out (not written).
    """

    output: Path
    selected: int = 0
    skipped: int = 0
    written: int = 0
    errors: int = 0
    error_ids: list[str] = field(default_factory=list)
    retryable_ids: list[str] = field(default_factory=list)
    interrupted: bool = False
    abandoned: int = 0


@dataclass
class Resumed:
    """What ``--resume`` found in the file: the lines kept, by id, and the ids to run again (``--retry-errors``)
    with the attempts their lines had."""

    finished: dict[str, dict[str, Any]] = field(default_factory=dict)
    retry: dict[str, int] = field(default_factory=dict)


def prepare_output(
    path: Path,
    *,
    resume: bool,
    overwrite: bool,
    retry_errors: bool,
    config: RunConfig,
    settings: Mapping[str, Any] | None = None,
    allow_mixed: bool = False,
    selected: set[str] | None = None,
    repeat: int | None = None,
) -> Resumed:
    """Check or reset the output file; what it holds when resuming (nothing is rewritten here).

    ``settings``: this run's lines' ``config`` as far as known before the agent is prepared (compared with the
    lines' own, fields left ``None`` excepted; :func:`run_benchmark` compares again once they are resolved).
    ``selected``: the ids this run may answer (``--retry-errors`` leaves the failed lines of others as they are).
    ``repeat``: the repeat this run writes (``madqa run --repeats``): only its lines count as finished, and a file
    of repeated runs is never mixed with an ordinary run's lines.
    """
    if not path.exists() or path.stat().st_size == 0:
        return Resumed()
    if not resume:
        if overwrite:
            path.unlink()
            return Resumed()
        raise RunError(f"{path} already exists: add --resume to complete it, or --overwrite to start again")
    lines = read_lines(path)
    _check_repeat_kind(path, {r for _, r in lines}, repeat)
    finished = {rid: r for (rid, r_repeat), r in lines.items() if r_repeat == repeat}
    other = {(r.get("agent"), r.get("model")) for r in finished.values()} - {(config.agent, config.model)}
    if other:
        agent, model = sorted(other, key=str)[0]
        raise RunError(
            f"{path} holds results of agent {agent!r} with model {model!r}; resume with the same "
            "--agent and --model, or write to another file"
        )
    retry: dict[str, int] = {}
    if retry_errors:
        # Infrastructure failures only: rerunning a model's own missing answer would be a best-of-N for failed items.
        retry = {
            rid: int(r.get("attempts") or 1)
            for rid, r in finished.items()
            if kind_of_line(r) in RETRYABLE and (selected is None or rid in selected)
        }
        kept = sum(1 for r in finished.values() if kind_of_line(r) == "model")
        if kept:
            logger.info(
                "keeping %d line(s) where the model gave no usable answer (--retry-errors reruns only "
                "provider, transport, timeout and worker failures)",
                kept,
            )
    resumed = Resumed({rid: r for rid, r in finished.items() if rid not in retry}, retry)
    if settings is not None:
        check_settings(path, resumed.finished, settings, allow_mixed=allow_mixed, resolved=False)
    return resumed


def _check_repeat_kind(path: Path, found: set[int | None], repeat: int | None) -> None:
    """Refuse to add an ordinary run's lines to a file of repeated runs, or the converse."""
    if repeat is None and found - {None}:
        raise RunError(
            f"{path} holds repeated runs (lines with 'repeat', written by --repeats); resume it with --repeats "
            f"{max(r for r in found if r is not None) + 1} (or more), or write to another file"
        )
    if repeat is not None and None in found:
        raise RunError(f"{path} holds lines of a run without --repeats; write the repeated runs to another file")


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
    allow_mixed_settings: bool = False,
    stop: StopRequest | None = None,
    repeat: Repeat | None = None,
) -> RunSummary:
    """Run ``config`` and append one results line per question to ``output``.

    ``repeat``: this run is one repeat of ``madqa run --repeats`` (:mod:`madqa.agents.harness.repeats` runs them):
    its seed is the model's ``seed`` option, and each line records ``repeat`` and ``seed``; resuming considers only
    that repeat's lines.

    ``backend`` answers the questions (default :class:`LocalBackend`: threads of this process); ``workers`` is the
    number of questions in flight either way. ``model_options`` (secrets removed) are recorded in each line's
    ``config["model_options"]``. ``stop``, once set, ends the run early (:attr:`RunSummary.interrupted`).

    Raises:
        RunError: bad settings, an unknown agent, an output file that exists without ``resume``/``overwrite``, or
            one that cannot be resumed (other model, other settings without ``allow_mixed_settings``, invalid lines).
        ValueError: an invalid model spec or a missing model dependency
        (:func:`madqa.agents.models.factory.make_model`).
        madqa.loading_script.load.DatasetUnavailableError: the split cannot be read.
    """
    check_config(config)
    agent = get_agent(config.agent)
    parse_spec(config.model)
    if workers < 1:
        raise RunError("workers must be at least 1")
    path = Path(output)
    if repeat is not None:
        model_options = {**(model_options or {}), "seed": repeat.seed}
    # What the model runs with (the endpoint's defaults filled in), so that --resume compares real settings.
    options = public_options(effective_options(config.model, model_options))
    settings = {**config.settings(agent.options), "model_options": options}
    items = select_items(config)
    try:
        resumed = prepare_output(
            path,
            resume=resume,
            overwrite=overwrite,
            retry_errors=retry_errors,
            config=config,
            settings=settings,
            allow_mixed=allow_mixed_settings,
            selected={str(it["id"]) for it in items},
            repeat=None if repeat is None else repeat.index,
        )
    except ValueError as exc:
        raise RunError(str(exc)) from None
    finished, retry = resumed.finished, resumed.retry
    from madqa.loading_script.release import dataset_provenance

    provenance = dataset_provenance(config.dataset)
    todo = [it for it in items if str(it["id"]) not in finished]
    summary = RunSummary(path, selected=len(items), skipped=len(items) - len(todo))
    if summary.skipped:
        logger.info("resuming %s: %d of %d question(s) already done", path, summary.skipped, len(items))
    if not todo:
        return summary
    # Loading the corpus, the search index and the model can take a minute: say so before (each stage logs its own).
    logger.info("preparing the %s agent for %d question(s)…", config.agent, len(todo))
    answering = (backend or LocalBackend()).prepare(
        Preparation(config, slots=min(workers, len(todo)), model_options=model_options, dataset=provenance)
    )
    try:
        # Now with the defaults the agent resolved from the model (observe, page_chars, sub_calls, …).
        check_settings(
            path, finished, {**answering.settings, "model_options": options}, allow_mixed=allow_mixed_settings
        )
        if retry:
            logger.info("retrying %d question(s) that failed for an infrastructure reason", len(retry))
            rewrite_without(path, set(retry), None if repeat is None else repeat.index)
        logger.info("answering %d question(s), %d at a time…", len(todo), min(workers, len(todo)))
        if progress is not None:
            progress.start(len(items), [finished[str(it["id"])] for it in items if str(it["id"]) in finished])
        records = _stamped(answering.answers(todo, workers, stop), options, retry, repeat)
        return write_records(path, records, summary, progress, stop)
    finally:
        answering.close()


def _stamped(
    records: Iterator[dict[str, Any]],
    options: Mapping[str, Any],
    retry: Mapping[str, int],
    repeat: Repeat | None = None,
) -> Iterator[dict[str, Any]]:
    """Each record with the run's model options in its ``config``, its ``attempts`` (one more than the line it
    replaces) and, for a repeat, its ``repeat`` and ``seed``."""
    try:
        for record in records:
            record["config"] = {**(record.get("config") or {}), "model_options": dict(options)}
            record["attempts"] = retry.get(str(record["id"]), 0) + 1
            if repeat is not None:
                record["repeat"], record["seed"] = repeat.index, repeat.seed
            yield record
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()


def write_records(
    path: Path,
    records: Iterator[dict[str, Any]],
    summary: RunSummary,
    progress: Progress | None,
    stop: StopRequest | None = None,
) -> RunSummary:
    """Append each record to ``path`` as soon as it comes (closing ``records`` on the way out, error or not).

    The runner's one writing loop; ``madqa bench scale`` times it with its own answering. ``stop`` is told the
    writer (:meth:`StopRequest.writes_held`) and decides :attr:`RunSummary.interrupted`.
    """
    with ResultsWriter(path) as writer, contextlib.closing(records):  # type: ignore[type-var]
        if stop is not None:
            stop.writer = writer
        for record in records:
            writer.write(record)
            summary.written += 1
            if record["error"]:
                summary.errors += 1
                summary.error_ids.append(record["id"])
                if kind_of_line(record) in RETRYABLE:
                    summary.retryable_ids.append(record["id"])
            if progress is not None:
                progress.update(record)
    if stop is not None and stop.is_set():
        summary.interrupted = summary.written + summary.skipped < summary.selected
        summary.abandoned = stop.abandoned
    return summary

"""Results lines: built from an agent run, appended crash-safely, read back for ``--resume``.

One line per question, in the public harness's format that ``madqa evaluate`` reads (:mod:`madqa.metric.inputs`):
``id``, ``question``, ``answer`` (list of strings), ``citations`` (``[{document, page}]``), for a search agent
``search_history`` (one ``{query, results, count, error}`` per search), and ``steps`` (the agent's effort: the
number of searches of a search agent, the model calls of the code agent), plus ``agent``,
``model``, ``usage`` (``{input_tokens, output_tokens}`` over all model calls, and ``by_role``, the token ledger
per role: :mod:`madqa.metric.ledger`), ``elapsed_s``, ``error`` (why the
item has no answer, ``Type: message`` cut short: a failed model call, or no final answer after the last step),
``error_kind`` (:mod:`madqa.agents.harness.errors`: ``provider``, ``transport``, ``timeout``, ``worker``, ``search``,
``model`` or ``None``), ``attempts`` (1, plus one per ``--retry-errors`` rerun of the question), ``calls`` (the
question's HTTP attempts to the model server, ``retries`` among them and ``waited_s`` before them:
:class:`madqa.agents.harness.deadline.CallTally`; API models only), ``final_state``,
``config`` (the run's settings, a search agent's search limits included), ``trajectory`` (one entry per model
call: tool calls, observation, tokens, seconds), and the line's provenance:
``schema_version`` (:data:`madqa.metric.schema.RECORD_SCHEMA_VERSION`) and ``dataset`` (``{name, revision}``,
from :func:`madqa.loading_script.release.dataset_provenance`), which ``madqa evaluate`` compares with the gold's;
``costs`` (the run's non-model costs where the agent knows them: corpus and OCR pages, index build seconds).

:class:`ResultsWriter` appends each line with a single ``write`` and ``fsync``; :func:`read_finished` reads a file
back, truncating a torn last line (a kill in the middle of a write) so that a resumed run neither loses nor
duplicates an id.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from smolagents.memory import ActionStep, AgentMemory
from smolagents.utils import AgentGenerationError, AgentMaxStepsError, make_json_serializable

from madqa.agents.harness.errors import cut, kind_of_line, recognised_kind, short_error
from madqa.metric.ledger import reported_details, tally_of, totals
from madqa.metric.schema import RECORD_SCHEMA_VERSION, Citation, Prediction

logger = logging.getLogger(__name__)

#: Longest observation kept per trajectory entry (page texts can be long; the pages are in search_history).
MAX_OBSERVATION_CHARS = 2000
MAX_MODEL_OUTPUT_CHARS = 4000


class SolvedAgent(Protocol):
    """What a results line reads of a smolagents agent after its run (both agents' classes have these).

    Attributes:
        memory: the run's steps.
        max_steps: T.
        final_state: how the run ended (``"answered"``, ``"forced"``, ``"no_answer"``, …; ``None`` before a run).
        forced_error: why no answer could be had, when ``final_state == "no_answer"``.
    """

    memory: AgentMemory
    max_steps: int
    final_state: str | None
    forced_error: str | None


def trajectory(agent: SolvedAgent) -> list[dict[str, Any]]:
    """One JSON-ready entry per ``ActionStep`` of the agent's last run (images are counted, not stored)."""
    out = []
    for step in agent.memory.steps:
        if not isinstance(step, ActionStep):
            continue
        usage = step.token_usage
        out.append(
            {
                "step": step.step_number,
                "model_output": _cut(step.model_output, MAX_MODEL_OUTPUT_CHARS),
                "tool_calls": [
                    {"name": c.name, "arguments": make_json_serializable(c.arguments)} for c in step.tool_calls or []
                ],
                "observation": _cut(step.observations, MAX_OBSERVATION_CHARS),
                "images": len(step.observations_images or []),
                "error": step_error(step.error) if step.error else None,
                "input_tokens": usage.input_tokens if usage else None,
                "output_tokens": usage.output_tokens if usage else None,
                "duration_s": round(step.timing.duration, 3) if step.timing.duration is not None else None,
                "final": bool(step.is_final_answer),
            }
        )
    return out


def step_error(error: BaseException) -> str:
    """A trajectory step's error: a failed model call as short as the line's error, others cut like observations."""
    if isinstance(error, AgentGenerationError):
        return short_error(error)
    return f"{type(error).__name__}: {_cut(str(error), MAX_OBSERVATION_CHARS)}"


def mark_failed_step(agent: SolvedAgent, error: BaseException) -> None:
    """Put ``error`` on the step whose model call or tool call raised it.

    When ``generate`` raises, smolagents still appends that step to memory (in a ``finally``), without a model
    message and with ``error`` left ``None``, then re-raises; so the last step, if it has neither, is the one that
    failed. The same holds for a tool call that raises past the step (a search's safety net,
    :class:`~madqa.agents.corpus.search.SearchTimeoutError`): that step has a model message but no observation. A step
    that
    finished (e.g. before a question ran out of time) is left as it is.
    """
    steps = [s for s in agent.memory.steps if isinstance(s, ActionStep)]
    if not steps or steps[-1].error is not None:
        return
    last = steps[-1]
    if last.model_output_message is None or (last.observations is None and not last.is_final_answer):
        last.error = error  # type: ignore[assignment]  # smolagents types it AgentError; shown by step_error


def _cut(value: Any, limit: int) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(make_json_serializable(value), ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f" […] ({len(text)} characters)"


def usage_of(agent: SolvedAgent) -> dict[str, Any]:
    """Total input and output tokens of the agent's last run (steps without usage count as 0), and its ledger
    (``by_role``: the ``agent`` role, :mod:`madqa.metric.ledger`).

    A step's cached and reasoning tokens come from its reply's ``raw`` (where the provider reported them); the
    step smolagents adds after the last one (a forced final answer) keeps no reply, so the agent's ``final_reply``
    (set by the agents that make that call) stands for it.
    """
    calls = []
    for step in agent.memory.steps:
        if not isinstance(step, ActionStep) or step.token_usage is None:
            continue
        reply = step.model_output_message
        if reply is None and isinstance(step.error, AgentMaxStepsError):
            reply = getattr(agent, "final_reply", None)
        raw = reply.raw if reply is not None else None
        calls.append(
            {"input_tokens": step.token_usage.input_tokens, "output_tokens": step.token_usage.output_tokens}
            | reported_details(raw)
        )
    by_role = {"agent": tally_of(calls)}
    return {**totals(by_role), "by_role": by_role}


def build_record(
    item: Mapping[str, Any],
    *,
    agent_name: str,
    model: str,
    elapsed_s: float,
    output: Mapping[str, Any] | None = None,
    agent: SolvedAgent | None = None,
    error: str | None = None,
    error_kind: str | None = None,
    attempts: int = 1,
    calls: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    dataset: Mapping[str, Any] | None = None,
    costs: Mapping[str, Any] | None = None,
    steps: int = 0,
    usage: Mapping[str, Any] | None = None,
    roles: Mapping[str, Mapping[str, Any]] | None = None,
    search_history: Sequence[Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The results line of one question.

    Args:
        item: the question row (``id``, ``question``).
        agent_name: the agent kind (``"bm25"``, ``"repl"``).
        model: the model spec.
        elapsed_s: wall time of the item.
        output: the normalised final answer (``{"answer", "citations"}``), ``None`` when the run failed.
        agent: the agent after its run, for final state, usage and trajectory (``None`` if it was never built).
        error: why the run failed, else ``None``.
        error_kind: the kind of ``error`` (:func:`madqa.agents.harness.errors.classify`); default: read from its text.
        attempts: how many times the question has been run, this time included.
        calls: the question's model calls (``{"attempts", "retries", "waited_s"}``); ``None``: the line has no such
            field.
        config: run settings stored with the line.
        dataset: ``{"name", "revision"}`` of the dataset the question came from (``None``: both unknown).
        costs: the run's non-model costs (corpus and OCR pages, index build seconds); ``None``: the line has no
            ``costs``.
        steps: the agent's effort (searches, or model calls).
        usage: ``{input_tokens, output_tokens[, cached_input_tokens][, by_role]}``; default: the agent's model
            calls (:func:`usage_of`).
        roles: more roles of the ledger (e.g. ``embedder``), added to ``usage["by_role"]``; their tokens are not
            added to the totals (:func:`madqa.metric.ledger.totals`).
        search_history: the searches (``{query, results, count, error}``); ``None``: the line has no such field.
        extra: the agent's own fields, added last.
    """
    output = output or {"answer": [], "citations": []}
    state = agent.final_state if agent is not None else None
    if error is None and agent is not None and agent.final_state == "no_answer":
        error, error_kind = f"no final answer after {agent.max_steps} steps: {cut(str(agent.forced_error))}", "model"
        # The last call itself failed at the provider (not a malformed reply): infrastructure, so --retry-errors
        # reruns it.
        forced = getattr(agent, "forced_exception", None)
        if forced is not None and recognised_kind(forced) is not None:
            error_kind = recognised_kind(forced)
    if error is not None and calls is not None and calls.get("retries"):
        # The retries spent before the provider was given up on belong in the line's reason.
        error += f" [after {calls['attempts']} model call attempts, {calls['waited_s']:g} s waited]"
    if usage is None:
        usage = usage_of(agent) if agent is not None else {"input_tokens": 0, "output_tokens": 0}
    usage = dict(usage)
    if roles:
        usage["by_role"] = {**usage.get("by_role", {}), **{r: dict(v) for r, v in roles.items()}}
    record: dict[str, Any] = {
        "schema_version": RECORD_SCHEMA_VERSION,
        "id": str(item["id"]),
        "question": str(item["question"]),
        "answer": list(output["answer"]),
        "citations": [{"document": c["document"], "page": int(c["page"])} for c in output["citations"]],
    }
    if search_history is not None:
        record["search_history"] = [dict(h) for h in search_history]
    record.update(
        {
            "steps": steps,
            "agent": agent_name,
            "model": model,
            "usage": usage,
            "elapsed_s": round(elapsed_s, 3),
            "error": error,
            "error_kind": (error_kind or kind_of_line({"error": error, "final_state": state})) if error else None,
            "attempts": attempts,
            **({"calls": dict(calls)} if calls is not None else {}),
            "final_state": state if error is None or state == "no_answer" else "error",
            "config": dict(config or {}),
            "dataset": {"name": (dataset or {}).get("name"), "revision": (dataset or {}).get("revision")},
            **({"costs": dict(costs)} if costs is not None else {}),
            "trajectory": trajectory(agent) if agent is not None else [],
        }
    )
    record.update(extra or {})
    return record


def as_prediction(record: Mapping[str, Any]) -> Prediction:
    """The metric's view of a results line (the contract with :mod:`madqa.metric.schema`).

    Effort is ``len(search_history)`` when the line has one (search agents), else ``steps`` (the REPL agent's
    model calls), as :func:`madqa.metric.inputs.parse_steps` reads it.
    """
    return Prediction(
        id=str(record["id"]),
        question=str(record["question"]),
        answer=tuple(record["answer"]),
        citations=tuple(Citation(str(c["document"]), int(c["page"])) for c in record["citations"]),
        steps=len(record["search_history"]) if "search_history" in record else int(record["steps"]),
    )


def json_safe(value: Any) -> Any:
    """``value`` with what strict JSON in UTF-8 cannot hold replaced: a non-finite float by its name as a string
    (``"NaN"``), a lone surrogate by ``?``.

    >>> json_safe({"page": float("nan"), "answer": ["\\ud83d!"]})
    {'page': 'NaN', 'answer': ['?!']}
    """
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, str):
        return value if value.isascii() else value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, Mapping):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


class ResultsWriter:
    """Append results lines to a JSONL file, each one written whole, flushed and fsynced before returning.

    Thread-safe; a context manager. Lines are written with one ``os.write`` on an ``O_APPEND`` descriptor, so a
    kill leaves at most one torn line, at the end (see :func:`read_finished`).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Open ``path`` for appending (created if missing)."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        # Reentrant: a signal handler on the writing thread may take it to exit at once (see `lock`).
        self._lock = threading.RLock()

    @property
    def lock(self) -> threading.RLock:
        """Held while a line is written: whoever holds it knows no line is half-written (except by its own thread,
        interrupted inside :meth:`write`: a torn last line, which :func:`read_finished` repairs)."""
        return self._lock

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as a JSON line and make it durable (values JSON cannot hold are made safe first)."""
        try:
            data = (json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        except (ValueError, UnicodeEncodeError):  # NaN/Infinity or a lone surrogate from a model: not the run's end
            data = (json.dumps(json_safe(record), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        with self._lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> ResultsWriter:
        """Use as a context manager."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close on exit."""
        self.close()


class ResultsFileError(ValueError):
    """A results file that cannot be resumed safely; the message says why and what to do."""


#: A results line's identity: its id, and its repeat (``madqa run --repeats``; ``None`` for an ordinary run).
LineKey = tuple[str, int | None]


def line_key(record: Mapping[str, Any], where: str = "a results line") -> LineKey:
    """``(id, repeat)`` of a results line; ``repeat`` is ``None`` when the line has none.

    Raises:
        ResultsFileError: a ``repeat`` that is not a non-negative integer (naming ``where``).
    """
    repeat = record.get("repeat")
    if repeat is not None and (isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0):
        raise ResultsFileError(f"{where}: 'repeat' must be a non-negative integer, got {repeat!r}")
    return str(record.get("id")), repeat


def read_lines(path: str | os.PathLike[str], *, repair: bool = True) -> dict[LineKey, dict[str, Any]]:
    """The records of an existing results file, by :func:`line_key` (for ``--resume``).

    Every line :class:`ResultsWriter` writes ends with a newline, in the same ``write``; a last line without one is
    a write cut short by a kill: with ``repair`` it is truncated away, so its item runs again. An invalid complete
    line, or a repeated ``(id, repeat)``, means the file was edited or mixed: that raises instead of guessing.

    Raises:
        ResultsFileError: an invalid complete line, a line without ``id``, a bad ``repeat``, a repeated key, or
            (without ``repair``) a torn last line.
    """
    path = Path(path)
    if not path.exists():
        return {}
    data = path.read_bytes()
    complete, _, tail = data.rpartition(b"\n")
    if tail:
        if not repair:
            raise ResultsFileError(f"{path}: the last line is incomplete (the run was killed while writing it)")
        logger.warning("%s: dropping a torn last line (%d bytes); its item runs again", path, len(tail))
        with open(path, "r+b") as fh:
            fh.truncate(len(data) - len(tail))
            os.fsync(fh.fileno())
    records: dict[LineKey, dict[str, Any]] = {}
    for number, raw in enumerate(complete.split(b"\n") if complete else [], 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError as exc:
            raise ResultsFileError(f"{path} line {number}: invalid JSON ({exc}); fix or remove the line") from None
        rid = record.get("id") if isinstance(record, dict) else None
        if rid is None:
            raise ResultsFileError(f"{path} line {number}: no 'id'; this file was not written by `madqa run`")
        key = line_key(record, f"{path} line {number}")
        if key in records:
            again = f"id {rid}" if key[1] is None else f"id {rid} of repeat {key[1]}"
            raise ResultsFileError(f"{path} line {number}: {again} appears twice; remove the duplicate line")
        records[key] = record
    return records


def read_finished(
    path: str | os.PathLike[str], *, repair: bool = True, repeat: int | None = None
) -> dict[str, dict[str, Any]]:
    """The records of one run in a results file, by id: the lines without ``repeat`` (an ordinary run), or those of
    repeat ``repeat`` (:func:`read_lines` reads, repairs and checks the whole file).

    Raises:
        ResultsFileError: as :func:`read_lines`.
    """
    return {rid: r for (rid, r_repeat), r in read_lines(path, repair=repair).items() if r_repeat == repeat}


def rewrite_without(path: str | os.PathLike[str], drop_ids: set[str], repeat: int | None = None) -> None:
    """Atomically rewrite a results file without the lines of ``drop_ids`` of repeat ``repeat`` (``None``: the lines
    without one) (for ``--retry-errors``)."""
    path = Path(path)
    dropped = {(i, repeat) for i in drop_ids}
    keep = [
        line
        for line in path.read_bytes().splitlines(keepends=True)
        if line.strip() and line_key(json.loads(line)) not in dropped
    ]
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.writelines(keep)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)

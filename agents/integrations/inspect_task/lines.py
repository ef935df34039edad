"""Inspect logs of the ``madqa/bm25`` task as our results lines (``madqa import-inspect``).

What the task's tools write into each sample's store (:data:`STORE_SEARCHES`, :data:`STORE_ANSWER`,
:data:`STORE_STATE`, :data:`STORE_FORCED`) is what a results line needs; the rest comes from the sample and the
log's header. One sample becomes one line through :func:`madqa.agents.harness.record.build_record` (the one builder):

* ``answer``, ``citations``: the accepted ``final_answer`` (``[]`` without one); ``search_history``: one
  ``{query, results, count, error}`` per ``search_documents`` call with the pages it returned; ``steps``: the
  number of searches, as the search agent counts them;
* ``model``: inspect's model name (``openai/gpt-4o``); ``usage``: the sample's ``model_usage`` summed over models
  (input tokens with cache reads and writes, output tokens); ``elapsed_s``: the sample's total time;
* ``error`` / ``error_kind``: the sample's error (kind read from its text), a limit it hit (``timeout`` for time
  limits, else ``model``), or no final answer after T steps (``model``); ``final_state``: ``answered``, ``forced``
  (a malformed last-step answer salvaged leniently), ``no_answer`` or ``error``;
* ``config``: the task's settings (from the task's metadata), ``harness: inspect_ai``, its version, the task name,
  the eval id; ``dataset``: the provenance the task recorded; ``trajectory``: one entry per model call.

This module does not import ``inspect_ai`` at module level: it reads the log objects by attribute.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from madqa.agents.harness.errors import cut
from madqa.agents.harness.record import MAX_MODEL_OUTPUT_CHARS, MAX_OBSERVATION_CHARS, build_record

#: Sample store keys the task's tools and solver write.
STORE_SEARCHES = "madqa_search_history"
STORE_ANSWER = "madqa_answer"
STORE_STATE = "madqa_final_state"
STORE_FORCED = "madqa_forced_error"
#: The key of the task's metadata (``Task(metadata=...)``) that holds its settings.
TASK_METADATA = "madqa"
#: The ``agent`` of imported lines: the task runs the search agent of the paper (G.1).
AGENT_NAME = "bm25"
#: Limits whose hit is a time-out (the rest: the model ran out of messages, tokens or money).
TIME_LIMITS = ("time", "working")


class LogError(ValueError):
    """An inspect log that cannot be turned into results lines; the message says why."""


def prediction_fields(store: Mapping[str, Any]) -> dict[str, Any]:
    """``answer``, ``citations``, ``search_history`` and ``steps`` of a sample's store (the scored part)."""
    output = store.get(STORE_ANSWER) or {}
    history = [dict(h) for h in store.get(STORE_SEARCHES) or []]
    return {
        "answer": list(output.get("answer") or []),
        "citations": [dict(c) for c in output.get("citations") or []],
        "search_history": history,
        "steps": len(history),
    }


def task_settings(log: Any) -> dict[str, Any]:
    """The task's settings recorded in the log header; :class:`LogError` when the log is not of this task."""
    metadata = getattr(log.eval, "metadata", None) or {}
    settings = metadata.get(TASK_METADATA)
    if not isinstance(settings, Mapping):
        raise LogError(f"it is a log of task {log.eval.task!r}, not of the MADQA inspect task (madqa/bm25)")
    return dict(settings)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(getattr(part, "text", "")) for part in content or [] if getattr(part, "type", "") == "text")


def _images(content: Any) -> int:
    return 0 if isinstance(content, str) else sum(1 for p in content or [] if getattr(p, "type", "") == "image")


def trajectory(messages: Sequence[Any], events: Iterable[Any]) -> list[dict[str, Any]]:
    """One entry per assistant message (model call): its text, tool calls, the tools' observations and errors, and
    the call's tokens and seconds from inspect's model events (when there is one event per call)."""
    calls = [e for e in events if getattr(e, "event", None) == "model" and getattr(e, "error", None) is None]
    results = {m.tool_call_id: m for m in messages if m.role == "tool"}
    assistants = [m for m in messages if m.role == "assistant"]
    out = []
    for step, message in enumerate(assistants, 1):
        tool_calls = list(message.tool_calls or [])
        replies = [results[c.id] for c in tool_calls if c.id in results]
        usage = calls[step - 1].output.usage if len(calls) == len(assistants) else None
        errors = [r.error.message for r in replies if r.error is not None]
        observation = "\n".join(_text(r.content) for r in replies if r.error is None)
        out.append(
            {
                "step": step,
                "model_output": _cut(message.text, MAX_MODEL_OUTPUT_CHARS) or None,
                "tool_calls": [{"name": c.function, "arguments": c.arguments} for c in tool_calls],
                "observation": _cut(observation, MAX_OBSERVATION_CHARS) or None,
                "images": sum(_images(r.content) for r in replies),
                "error": cut("; ".join(errors), MAX_OBSERVATION_CHARS) if errors else None,
                "input_tokens": _input_tokens(usage) if usage is not None else None,
                "output_tokens": usage.output_tokens if usage is not None else None,
                "duration_s": round(calls[step - 1].working_time, 3)
                if usage is not None and calls[step - 1].working_time is not None
                else None,
                "final": any(c.function == "final_answer" for c in tool_calls) and not errors,
            }
        )
    return out


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" […] ({len(text)} characters)"


def _input_tokens(usage: Any) -> int:
    return int(usage.input_tokens) + int(usage.input_tokens_cache_read or 0) + int(usage.input_tokens_cache_write or 0)


def usage_of(sample: Any) -> dict[str, int]:
    """Input and output tokens of a sample, summed over its models."""
    usages = list((sample.model_usage or {}).values())
    return {
        "input_tokens": sum(_input_tokens(u) for u in usages),
        "output_tokens": sum(int(u.output_tokens) for u in usages),
    }


def _failure(sample: Any, store: Mapping[str, Any], max_steps: int) -> tuple[str | None, str | None, str | None]:
    """``(error, error_kind, final_state)`` of a sample."""
    state = store.get(STORE_STATE)
    if sample.error is not None:
        return cut(str(sample.error.message)), None, "error"
    if store.get(STORE_ANSWER) is not None:
        return None, None, state or "answered"
    if sample.limit is not None:
        kind = "timeout" if sample.limit.type in TIME_LIMITS else "model"
        reason = sample.limit.reason or f"{sample.limit.type} limit {sample.limit.limit:g}"
        return cut(f"inspect {sample.limit.type} limit: {reason}"), kind, "error"
    why = store.get(STORE_FORCED) or "the model did not call final_answer"
    return f"no final answer after {max_steps} steps: {cut(str(why))}", "model", "no_answer"


def sample_line(sample: Any, log: Any, settings: Mapping[str, Any], source: str = "") -> dict[str, Any]:
    """The results line of one sample of ``log`` (``settings``: :func:`task_settings`)."""
    store = dict(sample.store or {})
    fields = prediction_fields(store)
    error, kind, state = _failure(sample, store, int(settings.get("max_steps") or 0))
    question = sample.input if isinstance(sample.input, str) else _text(sample.input[0].content)
    spec = log.eval
    generate = spec.model_generate_config.model_dump(exclude_none=True) if spec.model_generate_config else {}
    config = {
        "model": spec.model,
        "agent": AGENT_NAME,
        "split": settings.get("split"),
        "dataset": settings.get("dataset"),
        "max_steps": settings.get("max_steps"),
        "question_timeout": None,
        "top_k": settings.get("top_k"),
        "observe": settings.get("observe"),
        "page_chars": settings.get("page_chars"),
        "search_timeout": settings.get("search_timeout"),
        "search_max_terms": settings.get("search_max_terms"),
        "search_max_postings": settings.get("search_max_postings"),
        "model_options": generate,
        "harness": "inspect_ai",
        "inspect_ai": (spec.packages or {}).get("inspect_ai"),
        "task": spec.task,
        "eval_id": spec.eval_id,
        "log": source,
    }
    output = {"answer": fields["answer"], "citations": fields["citations"]}
    record = build_record(
        {"id": sample.id, "question": question},
        agent_name=AGENT_NAME,
        model=spec.model,
        elapsed_s=float(sample.total_time or 0.0),
        output=output,
        error=error,
        error_kind=kind,
        config=config,
        dataset=settings.get("provenance"),
        steps=fields["steps"],
        usage=usage_of(sample),
        search_history=fields["search_history"],
        extra={"final_state": state, "trajectory": trajectory(sample.messages, sample.events or [])},
    )
    return record


def read_log(path: str | Path) -> Any:
    """An inspect log read from ``path`` (``.eval`` or ``.json``), samples included.

    Raises:
        LogError: no such file, or not an inspect log.
    """
    from inspect_ai.log import read_eval_log

    path = Path(path)
    if not path.is_file():
        raise LogError("no such file" if not path.exists() else "not a file")
    try:
        return read_eval_log(str(path), resolve_attachments=True)
    except Exception as exc:  # noqa: BLE001 - inspect raises many kinds (zip, JSON, validation): all mean "not a log"
        raise LogError(f"not an inspect log ({type(exc).__name__}: {cut(str(exc), 200)})") from None


def log_lines(log: Any, *, split: str | None = None, epoch: int = 1, source: str = "") -> list[dict[str, Any]]:
    """The results lines of one log's samples of ``epoch`` (in the log's order).

    Raises:
        LogError: not a log of this task, a log of another split than ``split``, or a log without samples.
    """
    settings = task_settings(log)
    if split is not None and settings.get("split") != split:
        raise LogError(f"it is a log of split {settings.get('split')!r}, not {split!r}")
    if not log.samples:
        raise LogError("the log holds no samples (written with --no-log-samples, or the run stopped before any)")
    return [sample_line(s, log, settings, source) for s in log.samples if s.epoch == epoch]

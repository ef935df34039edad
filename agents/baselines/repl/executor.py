"""The code agent's side of its worker process: the smolagents executor proxy and the sub-model calls.

:class:`ReplExecutor` is the ``PythonExecutor`` smolagents runs each code step with; it sends the step to a
:class:`~madqa.agents.sandbox.worker.ReplWorker` and clips what comes back. :class:`SubLLM` answers the code's
``llm_query`` calls (proxied by the worker) with the sub-model, within a per-call cap and a per-question budget.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from smolagents import ChatMessage, MessageRole, Model
from smolagents.local_python_executor import CodeOutput, PythonExecutor

from madqa.agents.harness import deadline
from madqa.agents.harness.answer import normalise_answer
from madqa.agents.models.llamacpp import LlamaCppModel
from madqa.agents.sandbox.worker import ReplWorker, SubCallError
from madqa.metric.ledger import Tally

logger = logging.getLogger(__name__)

#: Sub-call defaults: API models (the paper's sub-LMs take ~500K characters) and the bundled 8K-token local model.
DEFAULT_SUB_CALLS, DEFAULT_SUB_CALL_CHARS = 50, 200_000
LOCAL_SUB_CALLS, LOCAL_SUB_CALL_CHARS = 5, 3_000
#: Longest observation (printed logs, last output, error) one code step adds to the root prompt, in characters. The
#: local model's 8K-token context holds about 25K characters in all, so its observations are kept short.
DEFAULT_OBSERVATION_CHARS, LOCAL_OBSERVATION_CHARS = 20_000, 1_500
#: Concurrent sub-calls of one ``llm_query_batched``.
BATCH_THREADS = 4


def clip_observation(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters (its head and tail), saying how much was cut and what to do."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut:,} characters cut: print less, e.g. a slice or a count ...]\n{text[-half:]}"


def default_observation_chars(model: Model) -> int:
    """Longest observation of one code step shown to ``model`` (characters): shorter for the local model."""
    return LOCAL_OBSERVATION_CHARS if isinstance(model, LlamaCppModel) else DEFAULT_OBSERVATION_CHARS


def default_sub_limits(model: Model) -> tuple[int, int]:
    """``(sub-calls per question, characters per sub-call)`` for a sub-model: smaller for the local model."""
    if isinstance(model, LlamaCppModel):
        return LOCAL_SUB_CALLS, LOCAL_SUB_CALL_CHARS
    return DEFAULT_SUB_CALLS, DEFAULT_SUB_CALL_CHARS


@dataclass
class SubLLM:
    """Answers the code's ``llm_query`` calls with a sub-model, within a per-call cap and a per-question budget.

    Attributes:
        model: the sub-model.
        max_calls: sub-calls allowed per question.
        max_chars: longest prompt of one sub-call (characters).
        calls: sub-calls made; ``input_tokens``/``output_tokens``: their token usage.
        ledger: the sub-calls' replies counted for the ``sub_model`` role (:mod:`madqa.metric.ledger`: cached and
            reasoning tokens where the provider reported them).
    """

    model: Model
    max_calls: int = DEFAULT_SUB_CALLS
    max_chars: int = DEFAULT_SUB_CALL_CHARS
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    ledger: Tally = field(default_factory=Tally, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, prompts: list[str], batched: bool) -> list[str]:
        """Answer ``prompts`` in order; raises :class:`SubCallError` (shown to the code) for a cap or the budget."""
        name = "llm_query_batched" if batched else "llm_query"
        for i, prompt in enumerate(prompts):
            if len(prompt) > self.max_chars:
                where = f"prompt {i} of {name}" if batched else name
                raise SubCallError(
                    f"{where} got {len(prompt):,} characters; the limit is {self.max_chars:,} per "
                    "call. Split the text into smaller chunks."
                )
        with self._lock:
            left = self.max_calls - self.calls
            if len(prompts) > left:
                raise SubCallError(
                    f"{name} asked for {len(prompts)} sub-call(s) but only {max(left, 0)} of "
                    f"{self.max_calls} are left for this question. Aggregate what you have and "
                    "answer."
                )
            self.calls += len(prompts)
        if len(prompts) == 1:
            return [self._one(prompts[0])]
        budget = deadline.current()  # the question's budget: the pool's threads would not inherit it

        def one(prompt: str) -> str:
            with deadline.active(budget):
                return self._one(prompt)

        with ThreadPoolExecutor(max_workers=min(BATCH_THREADS, len(prompts))) as pool:
            return list(pool.map(one, prompts))

    def _one(self, prompt: str) -> str:
        message = ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": prompt}])
        start = time.perf_counter()
        reply = self.model.generate([message])
        usage = reply.token_usage
        self.ledger.add_message(reply)
        logger.debug("sub-call: %d characters in, %s tokens, %.1f s", len(prompt), usage, time.perf_counter() - start)
        with self._lock:
            self.input_tokens += usage.input_tokens if usage else 0
            self.output_tokens += usage.output_tokens if usage else 0
        return str(reply.content or "")


class ReplExecutor(PythonExecutor):
    """A smolagents ``PythonExecutor`` that runs every code step in a :class:`ReplWorker` process.

    Only the corpus variables cross to the worker (tools stay here; ``final_answer`` is defined in the worker). A
    structured final answer is validated here: a malformed one is an error the model sees and can fix.
    """

    def __init__(
        self,
        worker: ReplWorker,
        sub_llm: SubLLM | None,
        variables: Iterable[str],
        observation_chars: int = DEFAULT_OBSERVATION_CHARS,
    ) -> None:
        """Use ``worker`` (its ``llm_handler`` becomes ``sub_llm``); ``variables``: state keys sent to the worker;
        logs, errors and outputs longer than ``observation_chars`` are clipped (:func:`clip_observation`)."""
        self.worker, self.variables, self.observation_chars = worker, tuple(variables), observation_chars
        self.restarts_at_start = worker.restarts
        worker.llm_handler = sub_llm
        self.state: dict[str, Any] = {"_print_outputs": ""}

    def send_tools(self, tools: Mapping[str, Any]) -> None:
        """Tools are not sent: the worker defines ``final_answer``, ``llm_query`` and ``llm_query_batched``."""

    def send_variables(self, variables: Mapping[str, Any]) -> None:
        """Reset the worker's namespace to the corpus variables (once per question)."""
        self.worker.load({k: variables[k] for k in self.variables if k in variables})

    def __call__(self, code_action: str) -> CodeOutput:
        """Run one step in the worker; errors are raised with the worker's message (smolagents shows them)."""
        start = time.perf_counter()
        result = self.worker.execute(code_action)
        logger.debug(
            "code step (%d characters): %.1f s, error: %.200s",
            len(code_action),
            time.perf_counter() - start,
            result.error,
        )
        logs = clip_observation(result.logs, self.observation_chars)
        self.state["_print_outputs"] = logs
        if result.error is not None:
            raise RuntimeError(clip_observation(result.error, self.observation_chars))
        output = result.output
        if result.is_final_answer and isinstance(output, Mapping) and "answer" in output:
            output = normalise_answer(output.get("answer"), output.get("citations"), strict=True)
        elif not result.is_final_answer and output is not None and len(str(output)) > self.observation_chars:
            output = clip_observation(str(output), self.observation_chars)
        return CodeOutput(output=output, logs=logs, is_final_answer=result.is_final_answer)

    def cleanup(self) -> None:
        """Stop the worker."""
        self.worker.close()

"""The code-REPL agent (the paper's recursive-language-model baseline, G.5) on smolagents' ``CodeAgent``.

The root model writes Python; every code step runs in a walled worker process (:mod:`.repl_worker`), never in this
one. The code sees the corpus as variables, sent to the worker once per question and never pasted into the prompt:

* ``context``: every page of every document, as ``[FILE: name.pdf]`` then ``[PAGE N] … [END PAGE N]`` blocks;
* ``pages``: ``{document: [text of page 1, text of page 2, …]}``; ``documents``: the sorted document names;
* ``llm_query(prompt)`` / ``llm_query_batched(prompts)``: sub-model calls proxied to this process (:class:`SubLLM`),
  with a per-call input cap (characters) and a per-question budget of sub-calls, both shown as errors to the code.

The run ends with ``final_answer(answer=[…], citations=[{"document", "page"}])``; a free-text final answer (or none
by the last step) is turned into that structure by one extraction call of the root model, counted as a step.
:meth:`ReplAgent.effort` gives the exact cost: root calls, sub-calls, extraction calls and their tokens.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from smolagents import ChatMessage, CodeAgent, MessageRole, Model
from smolagents.agents import populate_template
from smolagents.local_python_executor import CodeOutput, PythonExecutor
from smolagents.memory import ActionStep
from smolagents.monitoring import LogLevel, TokenUsage
from smolagents.utils import AgentMaxStepsError

from .models import LlamaCppModel
from .repl_worker import ALLOWED_IMPORTS, ReplWorker, SubCallError, WorkerLimits
from .search_agent import load_prompts
from .tools import MAX_ANSWER_ITEM_CHARS, FinalAnswerTool, normalise_answer

logger = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 10
#: Sub-call defaults: API models (the paper's sub-LMs take ~500K characters) and the bundled 8K-token local model.
DEFAULT_SUB_CALLS, DEFAULT_SUB_CALL_CHARS = 50, 200_000
LOCAL_SUB_CALLS, LOCAL_SUB_CALL_CHARS = 5, 3_000
#: Longest observation (printed logs, last output, error) one code step adds to the root prompt, in characters. The
#: local model's 8K-token context holds about 25K characters in all, so its observations are kept short.
DEFAULT_OBSERVATION_CHARS, LOCAL_OBSERVATION_CHARS = 20_000, 1_500
#: Markdown fences with their newlines. smolagents stops generation at the closing tag only when it does not occur
#: in the opening one: with plain "```" a model writes on past its code block (the local model: to its token limit).
CODE_BLOCK_TAGS = ("```python\n", "\n```\n")
#: Concurrent sub-calls of one ``llm_query_batched``.
BATCH_THREADS = 4
#: Schema of the extraction call (bounded, so that a small model's constrained output stays short and complete).
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "array", "items": {"type": "string", "maxLength": 60}, "maxItems": 3},
        "citations": {"type": "array", "maxItems": 3, "items": {
            "type": "object", "properties": {"document": {"type": "string", "maxLength": 80},
                                             "page": {"type": "integer"}},
            "required": ["document", "page"]}},
    },
    "required": ["answer", "citations"],
}  # fmt: skip


def build_corpus(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The REPL variables of a pages corpus (rows with ``document``, ``page``, ``text``): context, pages, documents.

    >>> c = build_corpus([{"document": "b.pdf", "page": 2, "text": "two"}, {"document": "b.pdf", "page": 1,
    ...                   "text": "one"}])
    >>> c["pages"], c["documents"]
    ({'b.pdf': ['one', 'two']}, ['b.pdf'])
    >>> print(c["context"])
    [FILE: b.pdf]
    [PAGE 1]
    one
    [END PAGE 1]
    [PAGE 2]
    two
    [END PAGE 2]
    """
    by_doc: dict[str, dict[int, str]] = {}
    for row in rows:
        by_doc.setdefault(str(row["document"]), {})[int(row["page"])] = str(row.get("text") or "")
    pages = {doc: [texts.get(n, "") for n in range(1, max(texts) + 1)] for doc, texts in sorted(by_doc.items())}
    parts = []
    for doc, texts in pages.items():
        parts.append(f"[FILE: {doc}]")
        parts.extend(f"[PAGE {n}]\n{text.strip()}\n[END PAGE {n}]" for n, text in enumerate(texts, 1))
    return {"context": "\n".join(parts), "pages": pages, "documents": list(pages)}


def salvage_answer(text: str) -> dict[str, Any] | None:
    """The complete answer strings and citations of a JSON answer cut short, or ``None`` if it holds none.

    >>> salvage_answer('{"answer": ["12", "3.4.5.6')
    {'answer': ['12'], 'citations': []}
    """

    def unquote(value: str) -> str:
        try:
            return str(json.loads(f'"{value}"'))
        except ValueError:
            return value

    found = re.search(r'"answer"\s*:\s*\[(.*?)(?:\]|$)', text, flags=re.DOTALL)
    answers = [unquote(v) for v in re.findall(r'"((?:[^"\\]|\\.)*)"', found.group(1))] if found else []
    cites = [{"document": unquote(d), "page": int(p)} for d, p in
             re.findall(r'"document"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"page"\s*:\s*(\d+)', text)]  # fmt: skip
    return {"answer": answers, "citations": cites} if answers or cites else None


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
    """

    model: Model
    max_calls: int = DEFAULT_SUB_CALLS
    max_chars: int = DEFAULT_SUB_CALL_CHARS
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, prompts: list[str], batched: bool) -> list[str]:
        """Answer ``prompts`` in order; raises :class:`SubCallError` (shown to the code) for a cap or the budget."""
        name = "llm_query_batched" if batched else "llm_query"
        for i, prompt in enumerate(prompts):
            if len(prompt) > self.max_chars:
                where = f"prompt {i} of {name}" if batched else name
                raise SubCallError(f"{where} got {len(prompt):,} characters; the limit is {self.max_chars:,} per "
                                   "call. Split the text into smaller chunks.")  # fmt: skip
        with self._lock:
            left = self.max_calls - self.calls
            if len(prompts) > left:
                raise SubCallError(f"{name} asked for {len(prompts)} sub-call(s) but only {max(left, 0)} of "
                                   f"{self.max_calls} are left for this question. Aggregate what you have and "
                                   "answer.")  # fmt: skip
            self.calls += len(prompts)
        if len(prompts) == 1:
            return [self._one(prompts[0])]
        with ThreadPoolExecutor(max_workers=min(BATCH_THREADS, len(prompts))) as pool:
            return list(pool.map(self._one, prompts))

    def _one(self, prompt: str) -> str:
        message = ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": prompt}])
        start = time.perf_counter()
        reply = self.model.generate([message])
        usage = reply.token_usage
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

    def __init__(self, worker: ReplWorker, sub_llm: SubLLM | None, variables: Iterable[str],
                 observation_chars: int = DEFAULT_OBSERVATION_CHARS) -> None:  # fmt: skip
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
        logger.debug("code step (%d characters): %.1f s, error: %.200s", len(code_action), time.perf_counter() - start,
                     result.error)  # fmt: skip
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


class ReplAgent(CodeAgent):
    """A ``CodeAgent`` over the corpus variables whose code runs out of process (use :func:`build_repl_agent`).

    Attributes:
        final_state: ``"answered"`` (structured final answer), ``"extracted"`` (free-text final answer turned into
            the structure), ``"forced"`` (no final answer by the last step: extracted from the transcript) or
            ``"no_answer"``; ``None`` before a run.
        forced_error: why no answer could be extracted.
        sub_llm: the sub-call handler of the current question.
        search_tool: always ``None`` (the record builder's hook for search agents).
    """

    search_tool = None

    def __init__(self, *, model: Model, executor: ReplExecutor, sub_llm: SubLLM, corpus: Mapping[str, Any],
                 prompts: Mapping[str, Any], max_steps: int) -> None:  # fmt: skip
        """Assemble the agent."""
        self.texts: dict[str, str] = dict(prompts["madqa"])
        self.sub_llm, self.corpus = sub_llm, corpus
        self.final_state: str | None = None
        self.forced_error: str | None = None
        self.extraction_usage: list[TokenUsage | None] = []
        templates = {k: v for k, v in prompts.items() if k != "madqa"}
        super().__init__(tools=[FinalAnswerTool()], model=model, prompt_templates=templates,  # type: ignore[arg-type]
                         max_steps=max_steps, executor=executor, code_block_tags=CODE_BLOCK_TAGS,
                         verbosity_level=LogLevel.OFF)  # fmt: skip

    def initialize_system_prompt(self) -> str:
        """The system prompt: our instructions with the limits and the corpus size (never the corpus itself)."""
        variables = {
            "max_steps": self.max_steps, "imports": ", ".join(ALLOWED_IMPORTS),
            "sub_calls": self.sub_llm.max_calls, "sub_call_chars": self.sub_llm.max_chars,
            "n_documents": len(self.corpus["documents"]),
            "n_pages": sum(len(p) for p in self.corpus["pages"].values()),
            "context_chars": len(self.corpus["context"]), "custom_instructions": self.instructions,
        }  # fmt: skip
        return populate_template(self.prompt_templates["system_prompt"], variables=variables)

    def provide_final_answer(self, task: str) -> ChatMessage:
        """No final answer by the last step: one extraction call over the transcript."""
        messages = [ChatMessage(role=MessageRole.SYSTEM, content=[{"type": "text", "text":
                                self.prompt_templates["final_answer"]["pre_messages"]}])]  # fmt: skip
        messages += self.write_memory_to_messages()[1:]
        post = populate_template(self.prompt_templates["final_answer"]["post_messages"], variables={"task": task})
        messages.append(ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": post}]))
        content = self._extract(messages)
        self.final_state = "forced" if content is not None else "no_answer"
        answer: Any = content or {"answer": [], "citations": []}
        return ChatMessage(role=MessageRole.ASSISTANT, content=answer, token_usage=self.extraction_usage[-1])

    def _extract(self, messages: list[ChatMessage]) -> dict[str, Any] | None:
        """One structured-output call of the root model; ``None`` (and :attr:`forced_error`) when it fails."""
        fmt = {"type": "json_schema", "json_schema": {"name": "final_answer", "schema": ANSWER_SCHEMA}}
        try:
            reply = self.model.generate(messages, response_format=fmt)
        except Exception as exc:  # noqa: BLE001 - recorded; the run still ends with a record
            self.extraction_usage.append(None)
            self.forced_error = f"{type(exc).__name__}: {exc}"
            return None
        self.extraction_usage.append(reply.token_usage)
        text = str(reply.content or "")
        match = re.search(r"\{.*\}", text, flags=re.DOTALL)
        try:
            data = json.loads(match.group(0) if match else text)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            data = salvage_answer(text)  # e.g. JSON cut by the generation limit: keep its complete values
            if data is None:
                self.forced_error = f"the extraction reply is not JSON ({exc}): {text[:200]}"
                return None
        return normalise_answer(data.get("answer"), data.get("citations"), strict=False)

    def solve(self, question: str) -> dict[str, Any]:
        """Run the agent on one question; returns ``{"answer": [...], "citations": [...]}``.

        Raises:
            smolagents.utils.AgentGenerationError: a root-model call failed (network, credentials, …).
        """
        self.final_state, self.forced_error, self.extraction_usage = None, None, []
        self.state.clear()
        self.state.update(self.corpus)
        task = populate_template(self.texts["task"], variables={"question": question})
        output = self.run(task)
        if self.final_state in ("forced", "no_answer"):
            return dict(output) if isinstance(output, Mapping) else {"answer": [], "citations": []}
        if isinstance(output, Mapping) and "citations" in output:
            self.final_state = "answered"
            return normalise_answer(output.get("answer"), output.get("citations"), strict=False)
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
        prompt = populate_template(self.texts["extract"], variables={"question": question, "text": text})
        content = self._extract([ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": prompt}])])
        self.final_state = "extracted"
        if content is None:  # keep the free text rather than nothing
            return {"answer": [text.strip()[:MAX_ANSWER_ITEM_CHARS]] if text.strip() else [], "citations": []}
        return content

    def effort(self) -> dict[str, int]:
        """Model calls and tokens of the last run: root, sub and extraction calls (``steps`` = their sum)."""
        roots = [s for s in self.memory.steps if isinstance(s, ActionStep) and s.model_output_message is not None
                 and not isinstance(s.error, AgentMaxStepsError)]  # fmt: skip
        root_in = sum(s.token_usage.input_tokens for s in roots if s.token_usage)
        root_out = sum(s.token_usage.output_tokens for s in roots if s.token_usage)
        ext_in = sum(u.input_tokens for u in self.extraction_usage if u)
        ext_out = sum(u.output_tokens for u in self.extraction_usage if u)
        sub = self.sub_llm
        return {
            "steps": len(roots) + sub.calls + len(self.extraction_usage),
            "root_calls": len(roots), "sub_calls": sub.calls, "extraction_calls": len(self.extraction_usage),
            "input_tokens": root_in + sub.input_tokens + ext_in,
            "output_tokens": root_out + sub.output_tokens + ext_out,
            "root_input_tokens": root_in, "root_output_tokens": root_out,
            "sub_input_tokens": sub.input_tokens, "sub_output_tokens": sub.output_tokens,
        }  # fmt: skip


def build_repl_agent(
    model: Model,
    corpus: Mapping[str, Any],
    sub_model: Model | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    *,
    sub_calls: int | None = None,
    sub_call_chars: int | None = None,
    observation_chars: int | None = None,
    limits: WorkerLimits | None = None,
    worker: ReplWorker | None = None,
    prompts: str = "repl",
) -> ReplAgent:
    """The code-REPL agent for one question at a time (call :meth:`ReplAgent.solve`, then ``agent.cleanup()``).

    Args:
        model: the root model (:func:`madqa.agents.models.make_model`).
        corpus: the REPL variables (:func:`build_corpus`).
        sub_model: the model behind ``llm_query``; default: ``model``.
        max_steps: the most root-model calls; then one extraction call over the transcript.
        sub_calls: sub-calls per question; ``sub_call_chars``: longest sub-call prompt (characters); ``None``:
            :func:`default_sub_limits` of the sub-model.
        observation_chars: longest observation of a code step; ``None``: :func:`default_observation_chars`.
        limits: the worker's limits (memory, CPU and wall-clock time per step).
        worker: reuse this worker process (its namespace is reset per question); ``cleanup()`` then stops it.
        prompts: prompt file name under ``agents/prompts``.

    Raises:
        ValueError: bad numbers or a corpus without ``context``/``pages``/``documents``.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps}")
    missing = {"context", "pages", "documents"} - set(corpus)
    if missing:
        raise ValueError(f"the corpus lacks {sorted(missing)}: build it with build_corpus(rows)")
    sub_model = sub_model or model
    calls, chars = default_sub_limits(sub_model)
    sub = SubLLM(sub_model, max_calls=calls if sub_calls is None else sub_calls,
                 max_chars=chars if sub_call_chars is None else sub_call_chars)  # fmt: skip
    if sub.max_calls < 0 or sub.max_chars < 1:
        raise ValueError("sub_calls must be at least 0 and sub_call_chars at least 1")
    clip = default_observation_chars(model) if observation_chars is None else observation_chars
    if clip < 100:
        raise ValueError(f"observation_chars must be at least 100, got {clip}")
    executor = ReplExecutor(worker or ReplWorker(limits or WorkerLimits()), sub, variables=corpus,
                            observation_chars=clip)  # fmt: skip
    return ReplAgent(model=model, executor=executor, sub_llm=sub, corpus=corpus, prompts=load_prompts(prompts),
                     max_steps=max_steps)  # fmt: skip


def repl_record_fields(agent: ReplAgent) -> dict[str, Any]:
    """What a REPL results line adds to (or replaces in) the common line: effort and the worker's walls."""
    effort = agent.effort()
    executor = agent.python_executor
    worker = executor.worker if isinstance(executor, ReplExecutor) else None
    restarts = worker.restarts - executor.restarts_at_start if worker else 0
    return {
        "steps": effort["steps"],
        "usage": {"input_tokens": effort["input_tokens"], "output_tokens": effort["output_tokens"]},
        "effort": effort,
        "repl": {"walls": dict(worker.walls) if worker else {}, "restarts": restarts},
    }

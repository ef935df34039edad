"""The code-REPL agent (the paper's recursive-language-model baseline, G.5) on smolagents' ``CodeAgent``.

The root model writes Python; every code step runs in a walled worker process (:mod:`.worker`), never in this
one. The code sees the corpus as variables, sent to the worker once per question and never pasted into the prompt:

* ``context``: every page of every document, as ``[FILE: name.pdf]`` then ``[PAGE N] … [END PAGE N]`` blocks;
* ``pages``: ``{document: [text of page 1, text of page 2, …]}``; ``documents``: the sorted document names;
* ``llm_query(prompt)`` / ``llm_query_batched(prompts)``: sub-model calls proxied to this process
  (:class:`~madqa.agents.baselines.repl.executor.SubLLM`), with a per-call input cap (characters) and a per-question
  budget of
  sub-calls, both shown as errors to the code.

The run ends with ``final_answer(answer=[…], citations=[{"document", "page"}])``; a free-text final answer (or none
by the last step) is turned into that structure by one extraction call of the root model, counted as a step.
:meth:`ReplAgent.effort` gives the exact cost: root calls, sub-calls, extraction calls and their tokens.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Generator, Mapping
from typing import Any

from smolagents import ChatMessage, CodeAgent, MessageRole, Model
from smolagents.agents import populate_template
from smolagents.memory import ActionStep, FinalAnswerStep
from smolagents.monitoring import LogLevel, TokenUsage
from smolagents.utils import AgentMaxStepsError

from madqa.agents.baselines.repl.executor import ReplExecutor, SubLLM, default_observation_chars, default_sub_limits
from madqa.agents.harness.answer import MAX_ANSWER_ITEM_CHARS, FinalAnswerTool, normalise_answer, salvage_answer
from madqa.agents.harness.config import DEFAULT_MAX_STEPS
from madqa.agents.harness.errors import chain, http_status
from madqa.agents.harness.smolagents_loop import drain
from madqa.agents.prompts import load_prompts
from madqa.agents.sandbox.worker import ALLOWED_IMPORTS, ReplWorker, WorkerLimits
from madqa.metric.ledger import message_usage, tally_of

logger = logging.getLogger(__name__)

#: Markdown fences with their newlines. smolagents stops generation at the closing tag only when it does not occur
#: in the opening one: with plain "```" a model writes on past its code block (the local model: to its token limit).
CODE_BLOCK_TAGS = ("```python\n", "\n```\n")
#: Schema of the extraction call (bounded, so that a small model's constrained output stays short and complete).
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "array", "items": {"type": "string", "maxLength": 60}, "maxItems": 3},
        "citations": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {"document": {"type": "string", "maxLength": 80}, "page": {"type": "integer"}},
                "required": ["document", "page"],
            },
        },
    },
    "required": ["answer", "citations"],
}


class ReplAgent(CodeAgent):
    """A ``CodeAgent`` over the corpus variables whose code runs out of process (use :func:`build_repl_agent`).

    Attributes:
        final_state: ``"answered"`` (structured final answer), ``"extracted"`` (free-text final answer turned into
            the structure), ``"forced"`` (no final answer by the last step: extracted from the transcript) or
            ``"no_answer"``; ``None`` before a run.
        forced_error: why no answer could be extracted.
        sub_llm: the sub-call handler of the current question.
    """

    def __init__(
        self,
        *,
        model: Model,
        executor: ReplExecutor,
        sub_llm: SubLLM,
        corpus: Mapping[str, Any],
        prompts: Mapping[str, Any],
        max_steps: int,
    ) -> None:
        """Assemble the agent."""
        self.texts: dict[str, str] = dict(prompts["madqa"])
        self.sub_llm, self.corpus = sub_llm, corpus
        self.final_state: str | None = None
        self.forced_error: str | None = None
        self.extraction_usage: list[TokenUsage | None] = []
        self.extraction_replies: list[ChatMessage | None] = []  # for the ledger's cached and reasoning tokens
        templates = {k: v for k, v in prompts.items() if k != "madqa"}
        super().__init__(
            tools=[FinalAnswerTool()],
            model=model,
            prompt_templates=templates,  # type: ignore[arg-type]
            max_steps=max_steps,
            executor=executor,
            code_block_tags=CODE_BLOCK_TAGS,
            verbosity_level=LogLevel.OFF,
        )

    def initialize_system_prompt(self) -> str:
        """The system prompt: our instructions with the limits and the corpus size (never the corpus itself)."""
        variables = {
            "max_steps": self.max_steps,
            "imports": ", ".join(ALLOWED_IMPORTS),
            "sub_calls": self.sub_llm.max_calls,
            "sub_call_chars": self.sub_llm.max_chars,
            "n_documents": len(self.corpus["documents"]),
            "n_pages": sum(len(p) for p in self.corpus["pages"].values()),
            "context_chars": len(self.corpus["context"]),
            "custom_instructions": self.instructions,
        }
        return populate_template(self.prompt_templates["system_prompt"], variables=variables)

    def provide_final_answer(self, task: str) -> ChatMessage:
        """No final answer by the last step: one extraction call over the transcript."""
        messages = [
            ChatMessage(
                role=MessageRole.SYSTEM,
                content=[{"type": "text", "text": self.prompt_templates["final_answer"]["pre_messages"]}],
            )
        ]
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
            try:
                reply = self.model.generate(messages, response_format=fmt)
            except Exception as exc:  # noqa: BLE001 - a server that refuses the format: ask for the JSON in plain text
                if not _refused_format(exc):
                    raise
                logger.warning("the model refused a JSON-schema response format (%.200s); extracting without it", exc)
                reply = self.model.generate(messages)
        except Exception as exc:  # noqa: BLE001 - recorded; the run still ends with a record
            self.extraction_usage.append(None)
            self.extraction_replies.append(None)
            self.forced_error = f"{type(exc).__name__}: {exc}"
            self.forced_exception = exc
            return None
        self.extraction_usage.append(reply.token_usage)
        self.extraction_replies.append(reply)
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

    def solve_steps(self, question: str) -> Generator[ActionStep, None, dict[str, Any]]:
        """Run the agent on one question, yielding each finished step; returns ``{"answer", "citations"}``.

        Raises:
            smolagents.utils.AgentGenerationError: a root-model call failed (network, credentials, …).
        """
        self.final_state, self.forced_error, self.extraction_usage, self.extraction_replies = None, None, [], []
        self.forced_exception: BaseException | None = None
        self.state.clear()
        self.state.update(self.corpus)
        task = populate_template(self.texts["task"], variables={"question": question})
        output = None
        for step in self.run(task, stream=True):
            if isinstance(step, ActionStep):
                yield step
            elif isinstance(step, FinalAnswerStep):
                output = step.output
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

    def solve(self, question: str) -> dict[str, Any]:
        """Run the agent on one question; returns ``{"answer": [...], "citations": [...]}`` (:meth:`solve_steps`)."""
        return drain(self.solve_steps(question))

    def effort(self) -> dict[str, int]:
        """Model calls and tokens of the last run: root, sub and extraction calls (``steps`` = their sum)."""
        roots = [
            s
            for s in self.memory.steps
            if isinstance(s, ActionStep)
            and s.model_output_message is not None
            and not isinstance(s.error, AgentMaxStepsError)
        ]
        root_in = sum(s.token_usage.input_tokens for s in roots if s.token_usage)
        root_out = sum(s.token_usage.output_tokens for s in roots if s.token_usage)
        ext_in = sum(u.input_tokens for u in self.extraction_usage if u)
        ext_out = sum(u.output_tokens for u in self.extraction_usage if u)
        sub = self.sub_llm
        return {
            "steps": len(roots) + sub.calls + len(self.extraction_usage),
            "root_calls": len(roots),
            "sub_calls": sub.calls,
            "extraction_calls": len(self.extraction_usage),
            "input_tokens": root_in + sub.input_tokens + ext_in,
            "output_tokens": root_out + sub.output_tokens + ext_out,
            "root_input_tokens": root_in,
            "root_output_tokens": root_out,
            "sub_input_tokens": sub.input_tokens,
            "sub_output_tokens": sub.output_tokens,
        }

    def ledger(self) -> dict[str, dict[str, int]]:
        """The last run's token ledger (:mod:`madqa.metric.ledger`): ``agent`` (root and extraction calls, the calls
        :meth:`effort` counts) and ``sub_model`` (the ``llm_query`` calls)."""
        roots = [
            s.model_output_message
            for s in self.memory.steps
            if isinstance(s, ActionStep)
            and s.model_output_message is not None
            and not isinstance(s.error, AgentMaxStepsError)
        ]
        agent = tally_of([message_usage(m) for m in [*roots, *self.extraction_replies]])
        return {"agent": agent, "sub_model": self.sub_llm.ledger.as_dict()}


def _refused_format(exc: BaseException) -> bool:
    """Whether a failed call looks like a refusal of the request's response format (not a transport failure)."""
    for err in chain(exc):  # smolagents may wrap the provider's error
        text = str(err).lower()
        if http_status(err) in (400, 422) or "response_format" in text or "json_schema" in text:
            return True
    return False


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
        model: the root model (:func:`madqa.agents.models.factory.make_model`).
        corpus: the REPL variables (:func:`madqa.agents.baselines.repl.corpus.build_corpus`).
        sub_model: the model behind ``llm_query``; default: ``model``.
        max_steps: the most root-model calls; then one extraction call over the transcript.
        sub_calls: sub-calls per question; ``sub_call_chars``: longest sub-call prompt (characters); ``None``:
            :func:`default_sub_limits` of the sub-model.
        observation_chars: longest observation of a code step; ``None``: :func:`default_observation_chars`.
        limits: the worker's limits (memory, CPU and wall-clock time per step).
        worker: reuse this worker process (its namespace is reset per question); ``cleanup()`` then stops it.
        prompts: prompt file name under ``agents/prompts`` (:func:`madqa.agents.prompts.load_prompts`).

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
    sub = SubLLM(
        sub_model,
        max_calls=calls if sub_calls is None else sub_calls,
        max_chars=chars if sub_call_chars is None else sub_call_chars,
    )
    if sub.max_calls < 0 or sub.max_chars < 1:
        raise ValueError("sub_calls must be at least 0 and sub_call_chars at least 1")
    clip = default_observation_chars(model) if observation_chars is None else observation_chars
    if clip < 100:
        raise ValueError(f"observation_chars must be at least 100, got {clip}")
    executor = ReplExecutor(
        worker or ReplWorker(limits or WorkerLimits()), sub, variables=corpus, observation_chars=clip
    )
    return ReplAgent(
        model=model, executor=executor, sub_llm=sub, corpus=corpus, prompts=load_prompts(prompts), max_steps=max_steps
    )

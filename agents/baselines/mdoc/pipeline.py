"""MDocAgent's five agents (Han et al. 2025) on one smolagents model: one model call each, recorded as steps.

Given the question's retrieved pages (their texts, and their images for a vision model), the pipeline calls, in
order, with the prompts of ``agents/prompts/mdoc.yaml``:

1. the **general agent**: all retrieved pages (texts and images), a first answer;
2. the **critical agent**: the question, the pages and the general answer; it names the critical textual and
   visual cues, as JSON ``{"text": …, "image": …}`` (a reply that is not JSON is used whole for both);
3. the **text agent**: the text-retrieved pages' texts and the textual cues;
4. the **image agent**: the image-retrieved pages (images; their texts for a text-only model) and the visual cues;
5. the **summarising agent**: the three answers and the pages' names; its JSON answer with citations is the final
   answer (parsed leniently, as the code agent's extraction).

Each call becomes one ``ActionStep`` of :attr:`MDocPipeline.memory` (its prompt summary as the observation, the
reply as the model output, token usage and time), so a results line's ``trajectory`` has the five agents in
order. A failed model call stops the pipeline (the line's ``error``), as any agent's failed call does.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from smolagents import ChatMessage, MessageRole, Model
from smolagents.agents import populate_template
from smolagents.memory import ActionStep, AgentMemory, ToolCall
from smolagents.monitoring import Timing

from madqa.agents.harness.answer import normalise_answer, salvage_answer

#: The agents, in calling order (their prompt keys under ``madqa`` in ``mdoc.yaml``).
ROLES = ("general", "critical", "text", "image", "summarize")


def parse_cues(text: str) -> dict[str, str]:
    """The critical agent's ``{"text", "image"}`` cues; a reply that is not such JSON is used whole for both.

    >>> parse_cues('Here: {"text": "the 2020 column", "image": "the bar chart"}')
    {'text': 'the 2020 column', 'image': 'the bar chart'}
    >>> parse_cues("look at totals")
    {'text': 'look at totals', 'image': 'look at totals'}
    """
    match = re.search(r"\{.*\}", text, flags=re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        data = None
    if isinstance(data, dict) and ("text" in data or "image" in data):
        return {k: _as_text(data.get(k, "")) for k in ("text", "image")}
    return {"text": text.strip(), "image": text.strip()}


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def parse_final(text: str) -> dict[str, Any] | None:
    """The summarising agent's ``{"answer", "citations"}``, normalised leniently; ``None`` when it holds none.

    >>> parse_final('```json\\n{"answer": ["12"], "citations": [{"file": "a.pdf", "page": 2}]}\\n```')
    {'answer': ['12'], 'citations': [{'document': 'a.pdf', 'page': 2}]}
    """
    match = re.search(r"\{.*\}", text, flags=re.DOTALL)
    try:
        data = json.loads(match.group(0) if match else text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except ValueError:
        data = salvage_answer(text)
        if data is None:
            return None
    return normalise_answer(data.get("answer"), data.get("citations"), strict=False)


class MDocPipeline:
    """One question's run of the five agents (use :meth:`solve_steps`; one pipeline per question).

    Args:
        model: the model every agent calls.
        prompts: ``mdoc.yaml`` (:func:`madqa.agents.prompts.load_prompts`).
        text_pages: the text-retrieved pages, ``{"document", "page", "text"}``, best first.
        image_pages: the image-retrieved pages, ``{"document", "page", "text"}``, best first.
        images: the image-retrieved pages' renders (in order), or ``None`` for a text-only model.

    Attributes:
        memory: one ``ActionStep`` per agent called.
        final_state: ``"answered"`` (the summary parsed), ``"no_answer"`` (it did not); ``None`` before a run.
        forced_error: why the summary gave no answer.
    """

    max_steps = len(ROLES)

    def __init__(
        self,
        model: Model,
        prompts: Mapping[str, Any],
        text_pages: Sequence[Mapping[str, Any]],
        image_pages: Sequence[Mapping[str, Any]],
        images: Sequence[Any] | None,
    ) -> None:
        """Hold the inputs; nothing is called yet."""
        self.model, self.texts = model, dict(prompts["madqa"])
        self.system = str(prompts["system_prompt"])
        self.text_pages, self.image_pages, self.images = list(text_pages), list(image_pages), images
        self.memory = AgentMemory(self.system)
        self.final_state: str | None = None
        self.forced_error: str | None = None

    def _call(self, n: int, role: str, variables: Mapping[str, Any], images: Sequence[Any] | None) -> ActionStep:
        """One agent's model call as a finished step (appended to memory even when the call raises)."""
        prompt = populate_template(self.texts[role], variables=dict(variables))
        content: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
        content += [{"type": "image", "image": img} for img in images or []]
        messages = [
            ChatMessage(role=MessageRole.SYSTEM, content=[{"type": "text", "text": self.system}]),
            ChatMessage(role=MessageRole.USER, content=content),
        ]
        pages = [f"{p['document']} p.{p['page']}" for p in variables.get("pages") or []]
        step = ActionStep(
            step_number=n,
            timing=Timing(start_time=time.time()),
            model_input_messages=messages,
            tool_calls=[ToolCall(name=f"{role}_agent", arguments={"pages": pages}, id=f"mdoc_{n}")],
            observations=prompt,
            observations_images=list(images) if images else None,
        )
        try:
            reply = self.model.generate(messages)
            step.model_output_message = reply
            step.model_output = str(reply.content or "")
            step.token_usage = reply.token_usage
        finally:
            step.timing.end_time = time.time()
            self.memory.steps.append(step)
        return step

    def solve_steps(self, question: str) -> Generator[ActionStep, None, dict[str, Any]]:
        """Call the five agents in turn, yielding each step; returns ``{"answer", "citations"}``."""
        both = _unique(self.text_pages + self.image_pages)
        vision = self.images is not None
        general = self._call(1, "general", {"question": question, "pages": both, "vision": vision}, self.images)
        yield general
        critical = self._call(
            2,
            "critical",
            {"question": question, "pages": both, "vision": vision, "general": general.model_output},
            self.images,
        )
        yield critical
        cues = parse_cues(str(critical.model_output or ""))
        text = self._call(3, "text", {"question": question, "pages": self.text_pages, "cues": cues["text"]}, None)
        yield text
        image = self._call(
            4,
            "image",
            {"question": question, "pages": self.image_pages, "vision": vision, "cues": cues["image"]},
            self.images,
        )
        yield image
        answers = {"general": general.model_output, "text": text.model_output, "image": image.model_output}
        summary = self._call(5, "summarize", {"question": question, "pages": both, **answers}, None)
        summary.is_final_answer = True
        output = parse_final(str(summary.model_output or ""))
        if output is None:
            self.final_state = "no_answer"
            self.forced_error = f"the summary is not JSON: {str(summary.model_output)[:200]!r}"
        else:
            self.final_state = "answered"
        summary.action_output = output
        yield summary
        return output or {"answer": [], "citations": []}


def _unique(pages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    seen: set[tuple[str, int]] = set()
    out = []
    for page in pages:
        key = (str(page["document"]), int(page["page"]))
        if key not in seen:
            seen.add(key)
            out.append(page)
    return out

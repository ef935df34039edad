"""The "Try an agent" tab: run the BM25 search agent on a dev question (or a typed one) and stream its trajectory.

Each search shows its query and result pages as thumbnails rendered from the PDFs; the final answer lists its
citations with the cited page images; step count and time close the run. For a dev question the gold answer (dev
labels are public) and the item's score are shown. Test labels are never read here.

The code-REPL agent (``agents/repl_agent.py``) writes Python that runs in its out-of-process worker
(``agents/repl_worker.py``: minimal environment, read-only view of Python's own files under Landlock, no sockets or
processes under seccomp), never in the Space's process; its code steps and their printed output are streamed. Where
the host lacks Landlock or seccomp, the tab refuses to run it (``require_isolation=True``: fail closed).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import gradio as gr

from . import content
from .config import SpaceConfig

logger = logging.getLogger(__name__)

BM25, REPL = "BM25 search agent", "code-REPL agent"
AGENTS = (BM25, REPL)
MAX_CODE_CHARS = 1500
THUMB_SIDE = 320
MAX_STEPS = 6
REPL_REFUSED = ("The code-REPL agent is switched off on this Space: this host does not provide the OS isolation "
                "(Landlock and seccomp) that model-written code must run under, so no code is run. The BM25 search "
                "agent works.")  # fmt: skip


class AgentRuntime:
    """Lazily opened index, renderer and models (one agent run at a time: agents and llama.cpp are not thread-safe)."""

    def __init__(self, config: SpaceConfig) -> None:
        self.config = config
        self.lock = threading.Lock()
        self._index: Any = None
        self._renderer: Any = None
        self._models: dict[str, Any] = {}
        self._repl_corpus: Any = None

    def corpus(self) -> tuple[Any, Any]:
        if self._index is None:
            from madqa.agents.render import PageRenderer
            from madqa.agents.search import open_index
            from madqa.loading_script.load import load_pages

            pages = load_pages(self.config.dataset)
            self._index = open_index(pages, progress=False)
            self._renderer = PageRenderer(self.config.dataset, pages=pages)
        return self._index, self._renderer

    def repl_corpus(self) -> Any:
        if self._repl_corpus is None:
            from madqa.agents.repl_agent import build_corpus
            from madqa.loading_script.load import load_pages

            self._repl_corpus = build_corpus(load_pages(self.config.dataset))
        return self._repl_corpus

    def model(self, spec: str) -> Any:
        if spec not in self._models:
            from madqa.agents.models import make_model

            self._models[spec] = make_model(spec)
        return self._models[spec]


def dev_questions(config: SpaceConfig) -> dict[str, dict[str, Any]]:
    """Public dev questions with their (public) labels, by id; empty when the dataset is unavailable."""
    try:
        from madqa.loading_script.load import load_questions

        return {str(q["id"]): q for q in load_questions("dev", config.dataset)}
    except Exception as exc:  # noqa: BLE001 - the tab still works with typed questions
        logger.warning("no dev questions for the agent tab: %s", exc)
        return {}


def item_score(dev_row: Mapping[str, Any], output: Mapping[str, Any], steps: int) -> dict[str, Any]:
    """Score one dev answer with the metric (``anls`` mode)."""
    from madqa.metric.inputs import parse_prediction, parse_reference
    from madqa.metric.report import score_predictions

    ref = parse_reference(dict(dev_row), "dev question")
    answer, citations = list(output.get("answer") or []), list(output.get("citations") or [])
    pred = parse_prediction({"id": ref.id, "answer": answer, "citations": citations, "steps": steps}, "agent answer")
    item = score_predictions([pred], [ref]).items[0]
    return {"score": item.score, "anls": item.anls, "page_f1": item.page_f1, "doc_f1": item.doc_f1}


def _thumb(renderer: Any, document: str, page: int) -> Any:
    img = renderer.image(document, page).copy()
    img.thumbnail((THUMB_SIDE, THUMB_SIDE))
    return img


def run_agent(runtime: AgentRuntime, dev: Mapping[str, dict[str, Any]], dev_id: str | None, typed: str | None,
              agent_name: str, model_spec: str) -> Iterator[list[Any]]:  # fmt: skip
    """Stream the chat history of one agent run (a generator of message lists)."""
    question = (typed or "").strip()
    row = None if question else dev.get(str(dev_id or ""))
    if row is not None:
        question = str(row["question"])
    history: list[Any] = []
    if not question:
        yield [gr.ChatMessage(role="assistant", content="Pick a dev question or type one.")]
        return
    if agent_name not in AGENTS:
        yield [gr.ChatMessage(role="assistant", content=f"Unknown agent {agent_name!r}.")]
        return
    history.append(gr.ChatMessage(role="user", content=question))
    yield history
    if not runtime.lock.acquire(timeout=300):
        history.append(gr.ChatMessage(role="assistant", content="The agent is busy; try again in a minute."))
        yield history
        return
    try:
        stream = _stream_repl if agent_name == REPL else _stream
        yield from stream(runtime, row, question, model_spec, history)
    finally:
        runtime.lock.release()


def _stream(runtime: AgentRuntime, row: Mapping[str, Any] | None, question: str, model_spec: str,
            history: list[Any]) -> Iterator[list[Any]]:  # fmt: skip
    from smolagents.agents import populate_template
    from smolagents.memory import ActionStep, FinalAnswerStep

    from madqa.agents.run import default_min_searches, default_page_chars
    from madqa.agents.search_agent import DEFAULT_TOP_K, build_search_agent
    from madqa.agents.tools import normalise_answer

    start = time.perf_counter()
    try:
        index, renderer = runtime.corpus()
        model = runtime.model(model_spec)
        agent = build_search_agent(model, index, renderer, max_steps=MAX_STEPS, top_k=DEFAULT_TOP_K,
                                   page_chars=default_page_chars(model, DEFAULT_TOP_K, MAX_STEPS),
                                   min_searches=max(1, default_min_searches(model)))  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - shown as a message (no labels are involved here)
        yield _start_failed(history, exc)
        return
    output: dict[str, Any] = {"answer": [], "citations": []}
    steps = 0
    task = populate_template(agent.texts["task"], variables={"question": question})
    seen = 0
    try:
        for event in agent.run(task, stream=True):
            if isinstance(event, ActionStep):
                steps = event.step_number
                records = agent.search_tool.history if agent.search_tool is not None else []
                for rec in records[seen:]:
                    pages = list(getattr(rec, "results", []) or [])
                    history.append(gr.ChatMessage(
                        role="assistant", content=f"`{rec.query}` → {len(pages)} page(s)",
                        metadata={"title": f"step {steps}: search", "status": "done"}))  # fmt: skip
                    for hit in pages[:5]:
                        history.append(gr.ChatMessage(role="assistant", content=gr.Image(
                            value=_thumb(renderer, hit["document"], int(hit["page"])),
                            label=f"{hit['document']} p. {hit['page']}")))  # fmt: skip
                seen = len(records)
                yield history
            elif isinstance(event, FinalAnswerStep) and isinstance(event.output, Mapping):
                output = normalise_answer(event.output.get("answer"), event.output.get("citations"), strict=False)
    except Exception as exc:  # noqa: BLE001 - a failing model must not break the Space
        logger.warning("agent run failed: %s", exc)
        history.append(gr.ChatMessage(role="assistant", content=f"The agent failed: {type(exc).__name__}"))
    yield from _finish(renderer, row, output, steps, time.perf_counter() - start, history)


def _start_failed(history: list[Any], exc: Exception) -> list[Any]:
    """Log an agent set-up failure (details stay in the server log) and tell the user its kind."""
    logger.exception("agent set-up failed")
    history.append(gr.ChatMessage(role="assistant", content=f"Could not start the agent: {type(exc).__name__}"))
    return history


def _finish(renderer: Any, row: Mapping[str, Any] | None, output: Mapping[str, Any], steps: int, elapsed: float,
            history: list[Any]) -> Iterator[list[Any]]:  # fmt: skip
    """Final answer, cited page images, and for a dev question its gold answer and score."""
    answer = "; ".join(output["answer"]) or "(no answer)"
    history.append(gr.ChatMessage(role="assistant", content=f"**Final answer:** {answer}\n\n"
                                  f"{steps} step(s), {elapsed:.1f} s"))  # fmt: skip
    for cite in output["citations"][:5]:
        try:
            image = renderer.image(cite["document"], int(cite["page"]))
        except Exception:  # noqa: BLE001 - a hallucinated citation has no page to show
            history.append(gr.ChatMessage(role="assistant", content=f"cited {cite['document']} p. {cite['page']} "
                                          "(no such page)"))  # fmt: skip
            continue
        history.append(gr.ChatMessage(role="assistant", content=gr.Image(
            value=image, label=f"cited: {cite['document']} p. {cite['page']}")))  # fmt: skip
    if row is not None:
        gold = " | ".join("; ".join(v) for v in row["answer_variants"])
        s = item_score(row, output, steps)
        history.append(gr.ChatMessage(role="assistant", content=(
            f"**Gold (dev):** {gold}\n\nscore {s['score']} · ANLS* {s['anls']:.2f} · Page F1 {s['page_f1']:.2f} · "
            f"Doc F1 {s['doc_f1']:.2f}")))  # fmt: skip
    yield history


def _stream_repl(runtime: AgentRuntime, row: Mapping[str, Any] | None, question: str, model_spec: str,
                 history: list[Any]) -> Iterator[list[Any]]:  # fmt: skip
    """Run the code-REPL agent's own ``solve`` in a thread and stream its code steps from its memory."""
    from smolagents.memory import ActionStep

    from madqa.agents.repl_agent import build_repl_agent
    from madqa.agents.repl_worker import IsolationUnavailableError, ReplWorker

    start = time.perf_counter()
    # Fail closed: without its Landlock and seccomp walls (see agents/repl_walls.py) no model code runs here.
    worker = ReplWorker(require_isolation=True,
                        protected_paths=(str(runtime.config.db_path), str(runtime.config.labels_path)))  # fmt: skip
    try:
        worker.start()
        _, renderer = runtime.corpus()
        agent = build_repl_agent(runtime.model(model_spec), runtime.repl_corpus(), max_steps=MAX_STEPS,
                                 worker=worker)  # fmt: skip
    except IsolationUnavailableError as exc:
        logger.warning("code-REPL agent refused: %s", exc)
        history.append(gr.ChatMessage(role="assistant", content=REPL_REFUSED))
        yield history
        return
    except Exception as exc:  # noqa: BLE001 - shown as a message (no labels are involved here)
        worker.close()
        yield _start_failed(history, exc)
        return
    result: dict[str, Any] = {"answer": [], "citations": []}

    def work() -> None:
        try:
            result.update(agent.solve(question))
        except Exception as exc:  # noqa: BLE001 - reported below
            logger.warning("REPL agent run failed: %s", exc)
            result["error"] = type(exc).__name__

    thread = threading.Thread(target=work, name="space-repl-agent", daemon=True)
    thread.start()
    shown = 0
    try:
        while True:
            alive = thread.is_alive()
            steps = [s for s in list(agent.memory.steps) if isinstance(s, ActionStep)]
            for step in steps[shown:]:
                code = (getattr(step, "code_action", None) or "")[:MAX_CODE_CHARS]
                seen = str(step.observations or "")[:MAX_CODE_CHARS]
                history.append(gr.ChatMessage(role="assistant", content=f"```python\n{code}\n```\n\n{seen}",
                                              metadata={"title": f"step {step.step_number}: code",
                                                        "status": "done"}))  # fmt: skip
            if len(steps) > shown:
                shown = len(steps)
                yield history
            if not alive:
                break
            thread.join(timeout=0.3)
    finally:
        thread.join()
        agent.cleanup()
    if "error" in result:
        history.append(gr.ChatMessage(role="assistant", content=f"The agent failed: {result['error']}"))
    steps_used = agent.effort()["steps"]
    yield from _finish(renderer, row, result, steps_used, time.perf_counter() - start, history)


def build_agent_tab(config: SpaceConfig) -> None:
    """Add the tab's components to the current Blocks context."""
    dev = dev_questions(config)
    runtime = AgentRuntime(config)
    gr.Markdown(content.AGENT_HELP)
    choices = [(f"{qid}: {q['question'][:90]}", qid) for qid, q in dev.items()]
    with gr.Row():
        dev_pick = gr.Dropdown(label="Dev question", choices=choices, value=choices[0][1] if choices else None,
                               elem_id="dev-pick", scale=3)  # fmt: skip
        typed = gr.Textbox(label="…or type a question", elem_id="typed", scale=3)
        agent = gr.Dropdown(label="Agent", choices=list(AGENTS), value=AGENTS[0], elem_id="agent-pick", scale=1)
        model = gr.Dropdown(label="Model", choices=list(config.agent_models), value=config.agent_model, scale=1)
    go = gr.Button("Run agent", variant="primary", elem_id="run-agent")
    chat = gr.Chatbot(height=560, elem_id="trajectory", label="Trajectory")

    def handler(dev_id: str | None, question: str | None, agent_name: str, spec: str) -> Iterator[list[Any]]:
        if spec not in config.agent_models:  # only configured models run (an API call may send any string)
            offered = ", ".join(config.agent_models)
            yield [gr.ChatMessage(role="assistant", content=f"This Space runs only its configured models: {offered}.")]
            return
        yield from run_agent(runtime, dev, dev_id, question, agent_name, spec)

    go.click(handler, [dev_pick, typed, agent, model], chat, api_name="run_agent", concurrency_limit=1)

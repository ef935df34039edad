"""The "Try an agent" tab: run an agent on a dev question (or a typed one) and render its step events.

The agents are looked up in the agent registry and prepared once per (agent, model) for this Space
(:class:`madqa.agents.protocol.PreparedAgent`); the tab only renders the events their ``stream`` yields: each search
as its query and result pages (thumbnails rendered from the PDFs), each code step as its code and printed output,
and the final answer with its citations and the cited page images; step count and time close the run. For a dev
question the gold answer (dev labels are public) and the item's score are shown. Test labels are never read here.

The code-REPL agent writes Python that runs in its out-of-process worker (``agents/repl/worker.py``: minimal
environment, read-only view of Python's own files under Landlock, no sockets or processes under seccomp), never in
the Space's process, and in a fresh worker for every question. Where the host lacks Landlock or seccomp, the tab
refuses to run it (``Host(require_isolation=True)``: fail closed).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import gradio as gr

from . import content
from .config import SpaceConfig

logger = logging.getLogger(__name__)

BM25, REPL, RAG = "BM25 search agent", "code-REPL agent", "static RAG (one retrieval)"
MDOC, SHELL = "MDocAgent (five agents)", "shell agent (search, grep, cat)"
#: The agents offered, by label: their registry names.
AGENTS = {BM25: "bm25", REPL: "repl", RAG: "rag", MDOC: "mdoc", SHELL: "shell"}
#: The retriever of the static RAG and shell agents here: the page index, which needs nothing beyond the Space's
#: own packages.
SPACE_RAG_RETRIEVER = "bm25"
MAX_CODE_CHARS = 1500
THUMB_SIDE = 320
MAX_STEPS = 6
REPL_REFUSED = ("The code-REPL agent is switched off on this Space: this host does not provide the OS isolation "
                "(Landlock and seccomp) that model-written code must run under, so no code is run. The BM25 search "
                "agent works.")  # fmt: skip


class AgentRuntime:
    """Agents prepared on first use, per (agent, model), and a page renderer for the images shown.

    One agent run at a time (:attr:`lock`): agents and llama.cpp are not thread-safe.
    """

    def __init__(self, config: SpaceConfig) -> None:
        self.config = config
        self.lock = threading.Lock()
        self._prepared: dict[tuple[str, str], Any] = {}
        self._renderer: Any = None

    def prepared(self, name: str, spec: str) -> Any:
        """The prepared agent ``name`` on model ``spec`` (a search must come before an answer).

        Raises:
            madqa.agents.protocol.AgentUnavailableError: this host cannot run the agent safely.
        """
        if (name, spec) not in self._prepared:
            from madqa.agents.config import RunConfig
            from madqa.agents.protocol import Host
            from madqa.agents.registry import get_agent

            run = RunConfig(model=spec, agent=name, dataset=self.config.dataset, max_steps=MAX_STEPS, min_searches=1,
                            retriever=SPACE_RAG_RETRIEVER if name in ("rag", "shell") else None)  # fmt: skip
            host = Host(require_isolation=True, sandbox_per_question=True, progress=False,
                        protected_paths=(str(self.config.db_path), str(self.config.labels_path)))  # fmt: skip
            agent = get_agent(name)
            run.check()
            agent.check(run)
            self._prepared[(name, spec)] = agent.prepare(run, host=host)
        return self._prepared[(name, spec)]

    def renderer(self) -> Any:
        """The page renderer of the Space's dataset (thumbnails and cited pages)."""
        if self._renderer is None:
            from madqa.agents.render import PageRenderer

            self._renderer = PageRenderer(self.config.dataset)
        return self._renderer


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
        yield from _stream(runtime, row, question, AGENTS[agent_name], model_spec, history)
    finally:
        runtime.lock.release()


def _stream(runtime: AgentRuntime, row: Mapping[str, Any] | None, question: str, name: str, model_spec: str,
            history: list[Any]) -> Iterator[list[Any]]:  # fmt: skip
    from madqa.agents.protocol import AgentUnavailableError, AnswerEvent, CodeEvent, SearchEvent

    try:
        prepared = runtime.prepared(name, model_spec)
        renderer = runtime.renderer()
    except AgentUnavailableError as exc:  # fail closed: without its walls no model code runs here
        logger.warning("%s agent refused: %s", name, exc)
        history.append(gr.ChatMessage(role="assistant", content=REPL_REFUSED))
        yield history
        return
    except Exception as exc:  # noqa: BLE001 - shown as a message (no labels are involved here)
        yield _start_failed(history, exc)
        return
    for event in prepared.stream(question, row):
        if isinstance(event, SearchEvent):
            history.append(gr.ChatMessage(
                role="assistant", content=f"`{event.query}` → {len(event.pages)} page(s)",
                metadata={"title": f"step {event.step}: search", "status": "done"}))  # fmt: skip
            for page in event.pages[:5]:
                history.append(gr.ChatMessage(role="assistant", content=gr.Image(
                    value=_thumb(renderer, page.document, int(page.page)),
                    label=f"{page.document} p. {page.page}")))  # fmt: skip
        elif isinstance(event, CodeEvent):
            seen = (event.output or event.error or "")[:MAX_CODE_CHARS]
            fence = "" if event.code.startswith("$ ") else "python"  # the shell agent's commands
            history.append(gr.ChatMessage(role="assistant", content=f"```{fence}\n{event.code[:MAX_CODE_CHARS]}\n```"
                                          f"\n\n{seen}", metadata={"title": f"step {event.step}: code",
                                                                    "status": "done"}))  # fmt: skip
        elif isinstance(event, AnswerEvent):
            if event.error:  # its kind only: details stay in the server log
                logger.warning("agent run failed: %s", event.error)
                kind = event.error.split(":")[0]
                history.append(gr.ChatMessage(role="assistant", content=f"The agent failed: {kind}"))
            yield from _finish(renderer, row, event, history)
            return
        yield history


def _start_failed(history: list[Any], exc: Exception) -> list[Any]:
    """Log an agent set-up failure (details stay in the server log) and tell the user its kind."""
    logger.exception("agent set-up failed")
    history.append(gr.ChatMessage(role="assistant", content=f"Could not start the agent: {type(exc).__name__}"))
    return history


def _finish(renderer: Any, row: Mapping[str, Any] | None, event: Any, history: list[Any]) -> Iterator[list[Any]]:
    """Final answer, cited page images, and for a dev question its gold answer and score."""
    output = {"answer": list(event.answer),
              "citations": [{"document": c.document, "page": c.page} for c in event.citations]}  # fmt: skip
    answer = "; ".join(output["answer"]) or "(no answer)"
    history.append(gr.ChatMessage(role="assistant", content=f"**Final answer:** {answer}\n\n"
                                  f"{event.steps} step(s), {event.elapsed_s:.1f} s"))  # fmt: skip
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
        s = item_score(row, output, event.steps)
        history.append(gr.ChatMessage(role="assistant", content=(
            f"**Gold (dev):** {gold}\n\nscore {s['score']} · ANLS* {s['anls']:.2f} · Page F1 {s['page_f1']:.2f} · "
            f"Doc F1 {s['doc_f1']:.2f}")))  # fmt: skip
    yield history


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
        agent = gr.Dropdown(label="Agent", choices=list(AGENTS), value=BM25, elem_id="agent-pick", scale=1)
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

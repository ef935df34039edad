"""The "Try an agent" tab: run an agent on a dev question (or a typed one) and render its step events.

The agents are looked up in the agent registry and prepared once per (agent, model) for this Space
(:class:`madqa.agents.harness.protocol.PreparedAgent`); the tab only renders the events their ``stream`` yields: each
search
as its query and result pages (thumbnails rendered from the PDFs), each code step as its code and printed output,
and the final answer with its citations and the cited page images; step count and time close the run. For a dev
question the gold answer (dev labels are public) and the item's score are shown. Test labels are never read here.

The code-REPL agent writes Python that runs in its out-of-process worker (``agents/sandbox/worker.py``: minimal
environment, read-only view of Python's own files under Landlock, no sockets or processes under seccomp), never in
the Space's process, and in a fresh worker for every question. Where the host lacks Landlock or seccomp, the tab
refuses to run it (``Host(require_isolation=True)``: fail closed).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import gradio as gr

from . import agent_runtime, content
from .agent_layout import PAGE_SIDE, pickers, trajectory
from .agent_runtime import AgentRuntime, RunRefused
from .config import SpaceConfig
from .identity import identity_key

logger = logging.getLogger(__name__)

BM25, REPL, RAG = "BM25 search agent", "code-REPL agent", "static RAG (one retrieval)"
MDOC, SHELL = "MDocAgent (five agents)", "shell agent (search, grep, cat)"
#: The built-in agents offered, by label: their registry names (file-search is not: see its module).
AGENTS = {BM25: "bm25", REPL: "repl", RAG: "rag", MDOC: "mdoc", SHELL: "shell"}
MAX_CODE_CHARS = 1500
RUN, RUNNING = "Run agent", "Running… (see the status below)"
STOP, STOPPING = "Stop", "Stopping…"
#: How long a run waits for another visitor's run to end before giving up (seconds).
LOCK_WAIT_S = 300
#: How often the status line is refreshed while the run waits (seconds).
STATUS_EVERY_S = 1.0
#: What Run's click leaves in the session's state for its handler.
ADMITTED, REFUSED = "admitted", "refused"
REPL_REFUSED = (
    "The code-REPL agent is switched off on this Space: this host does not provide the OS isolation "
    "(Landlock and seccomp) that model-written code must run under, so no code is run. The BM25 search "
    "agent works."
)


def agent_choices() -> dict[str, str]:
    """The agents offered, by label: the built-ins of :data:`AGENTS`, then every plugin agent (entry point group
    ``madqa.agents``), labelled by its name and its options class's summary."""
    from madqa.agents.harness.registry import RunError, options_class, plugins

    offered = dict(AGENTS)
    for name in plugins():
        try:
            summary = options_class(name).summary
        except RunError as exc:
            logger.warning("agent plugin %r left out of the agent tab: %s", name, exc)
            continue
        offered[f"{name}: {summary}" if summary else name] = name
    return offered


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
    img.thumbnail((PAGE_SIDE, PAGE_SIDE))
    return img


def run_agent(
    runtime: AgentRuntime,
    dev: Mapping[str, dict[str, Any]],
    dev_id: str | None,
    typed: str | None,
    agent_name: str,
    model_spec: str,
    stop: threading.Event | None = None,
) -> Iterator[list[Any]]:
    """Stream the chat history of one agent run (a generator of message lists).

    ``stop``, once set, ends the run at its next step boundary: a model call in progress is not cut (neither a
    provider's HTTP call nor llama.cpp can be), so the run stops when that call returns, and says so.
    """
    stop = stop if stop is not None else threading.Event()
    question = (typed or "").strip()
    row = None if question else dev.get(str(dev_id or ""))
    if row is not None:
        question = str(row["question"])
    history: list[Any] = []
    if not question:
        yield [gr.ChatMessage(role="assistant", content="Pick a dev question or type one.")]
        return
    offered = agent_choices()
    if agent_name not in offered:
        yield [gr.ChatMessage(role="assistant", content=f"Unknown agent {agent_name!r}.")]
        return
    history.append(gr.ChatMessage(role="user", content=question))
    yield history
    waited = 0
    while not (stopped := stop.is_set()) and not runtime.lock.acquire(timeout=1.0):
        waited += 1  # another run holds the agent: wait for it, but let this visitor's Stop end the wait
        if waited >= LOCK_WAIT_S:
            history.append(gr.ChatMessage(role="assistant", content="The agent is busy; try again in a minute."))
            yield history
            return
        yield [
            *history,
            gr.ChatMessage(
                role="assistant", content="", metadata={"title": queued_title(waited), "status": "pending"}
            ),
        ]
    if not stopped and stop.is_set():  # Stop came while the lock was being taken: the run has not started
        runtime.lock.release()
        stopped = True
    if stopped:
        history.append(gr.ChatMessage(role="assistant", content=stopped_text("before it started")))
        yield history
        return
    # The agent runs on its own thread, which releases the lock when the agent has really finished: a visitor who
    # leaves (gradio closes this generator) cannot start a second run beside one still calling the model, and the
    # run they left stops at its next step instead of running on for nobody.
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    worker = threading.Thread(
        target=_produce,
        args=(runtime, offered[agent_name], model_spec, question, row, events, stop),
        name="agent-tab-run",
        daemon=True,
    )
    try:
        worker.start()
    except BaseException:
        runtime.lock.release()
        raise
    try:
        yield from _render(events, row, history, stop)
    finally:
        stop.set()  # a visitor who left (gradio closed this generator) frees the agent at its next step


def _produce(
    runtime: AgentRuntime,
    name: str,
    model_spec: str,
    question: str,
    row: Mapping[str, Any] | None,
    out: queue.Queue[tuple[str, Any]],
    stop: threading.Event,
) -> None:
    """Prepare the agent and put its events on ``out`` (then ``("end", None)``); releases the runtime's lock.

    ``stop`` is read after set-up and after each event: closing the agent's stream there ends smolagents' run between
    steps (``PreparedAgent.stream`` closes it in its ``finally``), and ``("stopped", steps)`` tells the renderer.
    """
    from madqa.agents.harness.protocol import AgentUnavailableError, AnswerEvent

    stream: Any = None
    try:
        prepared = runtime.prepared(name, model_spec)
        out.put(("ready", runtime.renderer()))
        if stop.is_set():
            out.put(("stopped", 0))
            return
        stream = prepared.stream(question, row, stop=stop.is_set)  # asked after every step, shown or not
        step, answered = 0, False
        for event in stream:
            out.put(("event", event))
            answered = isinstance(event, AnswerEvent)
            step = event.steps if isinstance(event, AnswerEvent) else event.step
            if stop.is_set() and not answered:
                out.put(("stopped", step))
                break
        else:
            if not answered:  # the stream ended at the stop, after a step that showed nothing
                out.put(("stopped", step))
    except AgentUnavailableError as exc:  # fail closed: without its walls no model code runs here
        logger.warning("%s agent refused: %s", name, exc)
        out.put(("refused", exc))
    except Exception as exc:  # noqa: BLE001 - shown as a message (no labels are involved here)
        out.put(("failed", exc))
    finally:
        try:
            if stream is not None:
                stream.close()  # now, on this thread, before the lock lets another run start
        finally:
            runtime.lock.release()
            out.put(("end", None))


def status_title(phase: str, step: int, waited_s: float) -> str:
    """The live status line shown while nothing new has come: what the run is waiting for, and for how long.

    >>> status_title("model", 2, 12.4)
    'step 2: waiting for the model… 12 s'
    """
    doing = (
        "starting the agent (loading the model and the index)…"
        if phase == "start"
        else (f"step {step}: waiting for the model…")
    )
    return f"{doing} {waited_s:.0f} s"


def queued_title(waited_s: float) -> str:
    """The status line while the run waits for another visitor's run to end.

    >>> queued_title(7)
    "waiting for another visitor's run to end… 7 s (Stop cancels this one)"
    """
    return f"waiting for another visitor's run to end… {waited_s:.0f} s (Stop cancels this one)"


#: The last message of a run that answered although its visitor had pressed Stop (the answer is shown above it,
#: under :data:`LATE_ANSWER`, never as a normal finish).
TOO_LATE = (
    "Stop came too late: the agent had already given this answer when the run could stop (a run stops only "
    "between the agent's steps, and a model call in progress cannot be cut)."
)
LATE_ANSWER = "Answer given before your Stop took effect"


def stopped_text(when: str) -> str:
    """The run's last message after Stop.

    >>> stopped_text("after step 2")
    'Stopped at your request after step 2: no answer.'
    """
    return f"Stopped at your request {when}: no answer."


def stopping_title(title: str) -> str:
    """The status line once Stop was pressed: the run ends when the pending call returns.

    >>> stopping_title("step 2: waiting for the model… 12 s")
    'step 2: waiting for the model… 12 s (stopping when this call returns)'
    """
    return f"{title} (stopping when this call returns)"


def _render(
    events: queue.Queue[tuple[str, Any]], row: Mapping[str, Any] | None, history: list[Any], stop: threading.Event
) -> Iterator[list[Any]]:
    """The chat history as the events arrive, with a pending status message while the run waits."""
    from madqa.agents.harness.protocol import AnswerEvent, CodeEvent, SearchEvent

    renderer: Any = None
    phase, step, since = "start", 1, time.monotonic()
    while True:
        try:
            kind, value = events.get(timeout=STATUS_EVERY_S)
        except queue.Empty:
            title = status_title(phase, step, time.monotonic() - since)
            title = stopping_title(title) if stop.is_set() else title
            yield [
                *history,
                gr.ChatMessage(role="assistant", content="", metadata={"title": title, "status": "pending"}),
            ]
            continue
        if kind == "end":
            yield history
            return
        if kind == "stopped":
            when = f"after step {value}" if value else "before its first step"
            history.append(gr.ChatMessage(role="assistant", content=stopped_text(when)))
        elif kind == "refused":
            history.append(gr.ChatMessage(role="assistant", content=REPL_REFUSED))
        elif kind == "failed":
            history = _start_failed(history, value)
        elif kind == "ready":
            renderer, phase, since = value, "model", time.monotonic()
        elif isinstance(value, SearchEvent):
            # shown open, not in a collapsed accordion: the query is what a reader follows
            history.append(
                gr.ChatMessage(
                    role="assistant",
                    content=f"**step {value.step}: search** `{value.query}` → {len(value.pages)} page(s)",
                )
            )
            for page in value.pages[:5]:
                history.append(
                    gr.ChatMessage(
                        role="assistant",
                        content=gr.Image(
                            value=_thumb(renderer, page.document, int(page.page)),
                            label=f"{page.document} p. {page.page}",
                        ),
                    )
                )
            step, since = value.step + 1, time.monotonic()
        elif isinstance(value, CodeEvent):
            seen = (value.output or value.error or "")[:MAX_CODE_CHARS]
            fence = "" if value.code.startswith("$ ") else "python"  # the shell agent's commands
            history.append(
                gr.ChatMessage(
                    role="assistant",
                    content=f"```{fence}\n{value.code[:MAX_CODE_CHARS]}\n```\n\n{seen}",
                    metadata={"title": f"step {value.step}: code", "status": "done"},
                )
            )
            step, since = value.step + 1, time.monotonic()
        elif isinstance(value, AnswerEvent):
            if value.error:  # its kind only: details stay in the server log
                logger.warning("agent run failed: %s", value.error)
                history.append(
                    gr.ChatMessage(role="assistant", content=f"The agent failed: {value.error.split(':')[0]}")
                )
            # Stop pressed before this answer is shown: it says so, and the answer is not presented as a normal finish
            yield from _finish(renderer, row, value, history, late=stop.is_set())
            continue  # the worker's "end" follows
        yield history


def _start_failed(history: list[Any], exc: Exception) -> list[Any]:
    """Log an agent set-up failure (details stay in the server log) and tell the user its kind."""
    logger.exception("agent set-up failed")
    history.append(gr.ChatMessage(role="assistant", content=f"Could not start the agent: {type(exc).__name__}"))
    return history


def _finish(
    renderer: Any, row: Mapping[str, Any] | None, event: Any, history: list[Any], *, late: bool = False
) -> Iterator[list[Any]]:
    """Final answer, cited page images, and for a dev question its gold answer and score; ``late``: Stop was pressed
    before the answer came, which the answer's heading and the last message say."""
    output = {
        "answer": list(event.answer),
        "citations": [{"document": c.document, "page": c.page} for c in event.citations],
    }
    answer = "; ".join(output["answer"]) or "(no answer)"
    heading = LATE_ANSWER if late else "Final answer"
    history.append(
        gr.ChatMessage(
            role="assistant", content=f"**{heading}:** {answer}\n\n{event.steps} step(s), {event.elapsed_s:.1f} s"
        )
    )
    for cite in output["citations"][:5]:
        try:
            image = renderer.image(cite["document"], int(cite["page"]))
        except Exception:  # noqa: BLE001 - a hallucinated citation has no page to show
            history.append(
                gr.ChatMessage(role="assistant", content=f"cited {cite['document']} p. {cite['page']} (no such page)")
            )
            continue
        history.append(
            gr.ChatMessage(
                role="assistant", content=gr.Image(value=image, label=f"cited: {cite['document']} p. {cite['page']}")
            )
        )
    if row is not None:
        gold = " | ".join("; ".join(v) for v in row["answer_variants"])
        s = item_score(row, output, event.steps)
        history.append(
            gr.ChatMessage(
                role="assistant",
                content=(
                    f"**Gold (dev):** {gold}\n\nscore {s['score']} · ANLS* {s['anls']:.2f} "
                    f"· Page F1 {s['page_f1']:.2f} · "
                    f"Doc F1 {s['doc_f1']:.2f}"
                ),
            )
        )
    if late:
        history.append(gr.ChatMessage(role="assistant", content=TOO_LATE))
    yield history


def build_agent_tab(config: SpaceConfig) -> None:
    """Add the tab's components to the current Blocks context."""
    dev = dev_questions(config)
    runtime = AgentRuntime(config)
    gr.Markdown(content.AGENT_HELP)
    dev_pick, typed, agent, model = pickers(dev, list(agent_choices()), BM25, config)
    with gr.Row():
        go = gr.Button(RUN, variant="primary", elem_id="run-agent", scale=4)
        halt = gr.Button(STOP, variant="stop", elem_id="stop-agent", interactive=False, scale=1)
    chat = trajectory()
    # Whether this session's last click was refused: its handler then runs nothing (None: no click, an API call).
    # Only this signal lives in gradio's per-session state, which gradio evicts past 10,000 sessions; the run and
    # its stop flag live in the runtime, where nothing evicts them.
    clicked = gr.State(None)

    def handler(
        dev_id: str | None,
        question: str | None,
        agent_name: str,
        spec: str,
        click: str | None,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ) -> Iterator[Any]:
        if click == REFUSED:  # the click's message is shown; nothing runs
            yield gr.skip()
            return
        try:  # the run the click admitted (with the flag its Stop sets); an API call, with no click, is admitted now
            run = runtime.claim(str(request.session_hash or ""), identity_key(request, profile))
        except RunRefused as exc:
            yield [gr.ChatMessage(role="assistant", content=str(exc))]
            return
        try:
            if spec not in config.agent_models:  # only configured models run (an API call may send any string)
                offered = ", ".join(config.agent_models)
                yield [
                    gr.ChatMessage(role="assistant", content=f"This Space runs only its configured models: {offered}.")
                ]
                return
            yield from run_agent(runtime, dev, dev_id, question, agent_name, spec, run.stop)
        finally:
            runtime.finish(run)

    def start(request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[Any, Any, Any, str]:
        """Admit the run at the click, not queued: a refusal is shown at once, in the trajectory (gradio 6 shows no
        toast for a ``gr.Error`` raised by an unqueued event), and nothing is queued for it."""
        try:
            runtime.admit(str(request.session_hash or ""), identity_key(request, profile))
        except RunRefused as exc:
            return gr.skip(), gr.skip(), [gr.ChatMessage(role="assistant", content=str(exc))], REFUSED
        running, stoppable = gr.update(interactive=False, value=RUNNING), gr.update(interactive=True, value=STOP)
        return running, stoppable, gr.skip(), ADMITTED

    def stop(request: gr.Request) -> Any:
        runtime.request_stop(str(request.session_hash or ""))
        return gr.update(interactive=False, value=STOPPING)

    # Run is disabled (and says so) and Stop enabled from the click until the run has ended, whatever way it ends.
    # Admitted runs wait for the agent inside the handler (where Stop reaches them and a status line counts the
    # wait), not in gradio's queue: its concurrency covers every run admitted, plus one to answer a refusal at once.
    busy = go.click(start, None, [go, halt, chat, clicked], api_name=False, queue=False)
    ran = busy.then(
        handler,
        [dev_pick, typed, agent, model, clicked],
        chat,
        api_name="run_agent",
        concurrency_limit=agent_runtime.MAX_WAITING_RUNS + 2,
    )
    ran.then(
        lambda: (gr.update(interactive=True, value=RUN), gr.update(interactive=False, value=STOP)),
        None,
        [go, halt],
        api_name=False,
        queue=False,
    )
    halt.click(stop, None, halt, api_name=False, queue=False)

"""The human-study app (Gradio): the interface of the paper's Figure 13 over :class:`~.service.HumanService`.

Question in a blue box at the top, the search bar, results as page images labelled document and page, a viewer
for any result's document (first / previous / next / last / jump), "Add as citation" / "Remove citation" for the
page in view, the answer box (one answer per line), and a sidebar with progress, citations and search history.

Per-browser state (``gr.State``) stays on the server and holds only the annotator, batch and the page in view; the
run itself lives in the service's registry, so a reload (the URL carries ``?annotator=…&batch=…``) re-attaches to
it. Embedded in the Space, a visitor's runs are named by a server-made secret (:func:`.registry.new_visitor_key`)
that only the visitor's browser holds (``gr.BrowserState``); the annotator id shown is a one-way digest of it, so
nothing shown or logged lets another session attach to the run. In test mode no handler returns anything derived
from labels: the service holds none, and feedback is only computed for practice splits.
"""

from __future__ import annotations

import logging
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from . import view
from .batches import BatchError
from .images import ImageFiles
from .registry import new_visitor_key, visitor_name
from .service import HumanService
from .study import StudyError, StudyRun

logger = logging.getLogger(__name__)

#: Client-side: put annotator and batch into the address bar, so a reload resumes the same run.
REMEMBER_JS = """(annotator, batch) => {
  const url = new URL(window.location.href);
  url.searchParams.set("annotator", annotator); url.searchParams.set("batch", batch);
  window.history.replaceState(null, "", url); return [annotator, batch];
}"""
NAV = ("first", "previous", "next", "last")
#: Searching and paging skip gradio's queue (a round trip less; measured by ``madqa bench human``) and its
#: progress overlay: they take milliseconds on the server. Only where the annotators are the study's own.
FAST: dict[str, Any] = {"queue": False, "show_progress": "hidden"}
#: Embedded in the Space, where anyone can send requests, the same events go through the queue and share one
#: concurrency group: a flood of searches or page turns waits its turn instead of taking every worker thread.
PUBLIC_ACTIONS_CONCURRENCY = 2
QUEUED: dict[str, Any] = {"show_progress": "hidden", "concurrency_id": "human-actions",
                          "concurrency_limit": PUBLIC_ACTIONS_CONCURRENCY}  # fmt: skip


@dataclass(frozen=True)
class HumanHandles:
    """What an embedding app may wire to: the per-browser state and the run it names (``None`` before Start)."""

    state: gr.State
    run_of: Callable[[dict[str, Any] | None], StudyRun | None]


def direct_client(request: Any, profile: Any = None) -> str:
    """A visitor's client for the practice limits: ``hf:<user>`` when logged in, else ``ip:<direct peer address>``
    (the Space passes its own :func:`madqa.space.identity.identity_key`, which decides the same way)."""
    username = getattr(profile, "username", None) if profile is not None else None
    if username:
        return f"hf:{username}"
    return f"ip:{getattr(getattr(request, 'client', None), 'host', None) or 'unknown'}"


def build_human_app(service: HumanService, *, title: str = "MADQA human study") -> gr.Blocks:
    """The standalone app over ``service`` (nothing is launched): sidebar, address-bar resume."""
    with gr.Blocks(title=title) as demo:
        human_interface(service, title=title, demo=demo)
    return demo


def human_interface(
    service: HumanService, *, title: str = "MADQA human study", demo: gr.Blocks | None = None,
    embedded: bool = False, api_prefix: str | None = "", client_of: Callable[[Any, Any], str] = direct_client,
) -> HumanHandles:  # fmt: skip
    """Build the interface into the current Blocks context.

    Args:
        service: the study's server side.
        title: heading of the start panel.
        demo: the standalone Blocks (its ``load`` resumes a run named in the address bar); ``None`` when embedded.
        embedded: inside another app (the Space's "Solve it yourself" tab): no page sidebar, no address-bar resume,
            runs named by a secret per browser kept in its local storage (a reload, then Start, resumes the run
            while the server keeps it), and a download of the visitor's own answers.
        api_prefix: prefix of the API endpoint names; ``None`` hides them from the API (the Space, whose every
            named endpoint is checked for label leaks, has its own ``search`` and ``submit``).
        client_of: ``(request, profile) -> str``, the client a new embedded run counts against (its limits are the
            service registry's, :class:`~.registry.StudyRegistry`).
    """
    plan = service.plan
    oracle = plan.mode == "oracle"
    state = gr.State(None)
    visitor = gr.BrowserState(None, storage_key="madqa-practice-key") if embedded else None
    with gr.Row(equal_height=False):
        side = gr.Column(scale=1, min_width=220, elem_id="sidebar") if embedded else gr.Sidebar(
            open=True, elem_id="sidebar")  # fmt: skip
        with side:
            progress = gr.Markdown("", elem_id="progress")
            citations = gr.Markdown("", elem_id="citations")
            history = gr.Markdown("", elem_id="history")
            download = gr.DownloadButton("Download my answers (JSONL)", visible=False, elem_id="download")
        with gr.Column(scale=4):
            with gr.Column(visible=True, elem_id="start-box") as start_box:
                gr.Markdown(f"## {title}: split {plan.split}" + (" (oracle)" if oracle else ""))
                annotator = gr.Textbox(label="Annotator ID", value=plan.annotator or "", elem_id="annotator",
                                       interactive=plan.annotator is None, visible=not embedded)  # fmt: skip
                batch = gr.Dropdown(label="Batch", choices=service.batch_names(), value=service.batch_names()[0],
                                    elem_id="batch", interactive=plan.batch is None)  # fmt: skip
                start = gr.Button("Start", variant="primary", elem_id="start")
                start_msg = gr.Markdown("", elem_id="start-msg")
            with gr.Column(visible=False, elem_id="main-box") as main_box:
                question = gr.Markdown("", elem_id="question")
                gr.Markdown(view.ORACLE_INSTRUCTIONS if oracle else view.INSTRUCTIONS, elem_id="instructions")
                with gr.Row(visible=not oracle, elem_id="search-row"):
                    query = gr.Textbox(label="Search", placeholder="e.g. water AND rate*", scale=5, elem_id="query")
                    search = gr.Button("Search", scale=1, elem_id="search")
                search_msg = gr.Markdown("", elem_id="search-msg")
                results = gr.Gallery(label="Results", columns=5, height=300, allow_preview=False, format="jpeg",
                                     interactive=False, elem_id="results")  # fmt: skip
                title_md = gr.Markdown(view.viewer_title(None, 0, 0, False), elem_id="viewer-title")
                page_img = gr.Image(label="Page", type="pil", format="jpeg", interactive=False, height=700,
                                    elem_id="viewer")  # fmt: skip
                with gr.Row():
                    nav = {kind: gr.Button(kind.capitalize(), elem_id=f"nav-{kind}", min_width=60) for kind in NAV}
                    jump = gr.Number(label="Page", value=1, precision=0, minimum=1, elem_id="jump", min_width=80)
                    go = gr.Button("Go", elem_id="nav-jump", min_width=60)
                with gr.Row():
                    cite = gr.Button("Add as citation", elem_id="cite")
                    uncite = gr.Button("Remove citation", elem_id="uncite")
                answer = gr.Textbox(label="Answer (one per line for several)", lines=3, elem_id="answer")
                with gr.Row():
                    submit = gr.Button("Submit answer", variant="primary", elem_id="submit-answer")
                    give_up = gr.Button("I can't find it", elem_id="give-up")
                feedback = gr.Markdown("", elem_id="feedback")

    # Page images go out as files already in Gradio's cache: encoded once per page, not once per response.
    thumb_files = ImageFiles(lambda d, p: service.corpus.thumbnail(d, p), results.GRADIO_CACHE)
    view_files = ImageFiles(lambda d, p: service.corpus.image(d, p), page_img.GRADIO_CACHE)
    outputs = [state, start_box, main_box, question, query, search_msg, results, title_md, page_img, jump,
               progress, citations, history, answer, feedback, start_msg]  # fmt: skip

    def unchanged() -> dict[Any, Any]:
        """No visible change (gradio reads an empty dict as one output value)."""
        return {start_msg: gr.skip()}

    def run_of(st: dict[str, Any] | None) -> StudyRun | None:
        if not st:
            return None
        if embedded:  # only the run of this session's own key, and never a new one (Start makes those)
            return service.registry.find(st["key"], st["batch"]) if st.get("key") else None
        try:
            return service.start(st["annotator"], st["batch"])
        except (StudyError, BatchError):
            return None

    def lost(st: dict[str, Any] | None) -> dict[Any, Any]:
        """An action on a run the server no longer keeps (dropped from memory): back to Start, saying so."""
        if not (embedded and st and st.get("key")):
            return unchanged()
        return {start_box: gr.update(visible=True), main_box: gr.update(visible=False),
                start_msg: "Your practice run is no longer kept on this server (it keeps a bounded number of runs "
                           "in memory). Press **Start** for a new one."}  # fmt: skip

    def sidebar(run: StudyRun, *, searches_only: bool = False) -> dict[Any, Any]:
        session = run.session()
        snap = session.snapshot() if session else {"searches": [], "citations": []}
        out = {history: view.history_markdown(snap["searches"])}
        if not searches_only:  # a search changes the history only: the rest is not sent again
            out.update({progress: view.progress_markdown(run.position(), run.total, run.annotator, run.batch),
                        citations: view.citations_markdown(snap["citations"])})  # fmt: skip
        return out

    def show_page(run: StudyRun, st: dict[str, Any]) -> dict[Any, Any]:
        doc, page = st.get("doc"), int(st.get("page") or 0)
        if not doc:
            return {title_md: view.viewer_title(None, 0, 0, False), page_img: None, jump: 1}
        session = run.session()
        cited = bool(session and session.is_cited(doc, page))
        return {title_md: view.viewer_title(doc, page, service.corpus.pages(doc), cited),
                page_img: view_files.path(doc, page), jump: page}  # fmt: skip

    def gallery(pages: list[tuple[str, int]]) -> list[tuple[Any, str]]:
        return [(thumb_files.path(d, p), view.caption(d, p)) for d, p in pages]

    def fresh_question(run: StudyRun, st: dict[str, Any]) -> dict[Any, Any]:
        """Everything for the current question, as after a (re)load: sidebar, question, results, viewer."""
        item = run.current_item()
        session = run.session()
        st = {**st, "qid": item["id"] if item else None}
        pages = service.oracle_pages(run) if oracle else []
        if session is not None and not oracle and session.searches:
            pages = [(r["document"], r["page"]) for r in session.searches[-1]["results"]]
        st["results"] = pages
        if not st.get("doc") or st.get("qid_of_doc") != st["qid"]:
            st.update(doc=None, page=0)
        out = {state: st, start_box: gr.update(visible=False), main_box: gr.update(visible=True),
               question: view.question_markdown(run.position(), run.total, item, run.batch),
               results: gallery(pages), start_msg: ""}  # fmt: skip
        out.update(sidebar(run))
        out.update(show_page(run, st))
        return out

    def on_start(name: str, batch_name: str, st: dict[str, Any] | None) -> dict[Any, Any]:
        try:
            run = service.start(name, batch_name)
        except (StudyError, BatchError) as exc:
            return {start_msg: f"**Cannot start:** {exc}", start_box: gr.update(visible=True)}
        return fresh_question(run, {"annotator": run.annotator, "batch": run.batch})

    def on_load(request: gr.Request) -> dict[Any, Any]:
        params = dict(request.query_params) if request is not None else {}
        name = plan.annotator or params.get("annotator")
        batch_name = plan.batch or params.get("batch")
        if name and batch_name:
            return on_start(name, batch_name, None)
        return {start_box: gr.update(visible=True), main_box: gr.update(visible=False)}

    def on_search(text: str, st: dict[str, Any] | None) -> dict[Any, Any]:
        run = run_of(st)
        if run is None or st is None or oracle:
            return lost(st) if run is None else unchanged()
        outcome = service.search(run, text)
        st = {**st, "results": list(outcome.pages)}
        out = {state: st, results: gallery(list(outcome.pages)), search_msg: outcome.error or
               f"{len(outcome.pages)} page(s) for `{text.strip()}`"}  # fmt: skip
        out.update(sidebar(run, searches_only=True))
        return out

    def open_page(st: dict[str, Any] | None, doc: str | None, page: int, via: str) -> dict[Any, Any]:
        run = run_of(st)
        if run is None or st is None or not doc:
            return lost(st) if run is None else unchanged()
        in_view = (st["doc"], int(st.get("page") or 0)) if st.get("doc") else None
        shown = service.view(run, doc, page, via, shown=in_view)
        if shown is None:
            return unchanged()
        st = {**st, "doc": shown[0], "page": shown[1], "qid_of_doc": st.get("qid")}
        return {state: st, **show_page(run, st)}

    def on_select(evt: gr.SelectData, st: dict[str, Any] | None) -> dict[Any, Any]:
        pages = (st or {}).get("results") or []
        index = evt.index if isinstance(evt.index, int) else 0
        if not 0 <= index < len(pages):
            return unchanged()
        doc, page = pages[index]
        return open_page(st, doc, page, "oracle" if oracle else "result")

    def on_nav(kind: str, st: dict[str, Any] | None) -> dict[Any, Any]:
        doc, page = (st or {}).get("doc"), int((st or {}).get("page") or 1)
        if not doc:
            return unchanged()
        target = {"first": 1, "previous": page - 1, "next": page + 1, "last": service.corpus.pages(doc)}[kind]
        return open_page(st, doc, target, kind)

    def on_jump(number: float | None, st: dict[str, Any] | None) -> dict[Any, Any]:
        doc = (st or {}).get("doc")
        if not doc or number is None or not math.isfinite(number):  # the API takes Infinity and NaN too
            return unchanged()
        return open_page(st, doc, int(number), "jump")

    def on_cite(add: bool, st: dict[str, Any] | None) -> dict[Any, Any]:
        run = run_of(st)
        if run is None or st is None or not st.get("doc"):
            return lost(st) if run is None else unchanged()
        service.cite(run, st["doc"], int(st["page"]), add)
        return {**sidebar(run), **show_page(run, st)}

    def on_submit(text: str, gave_up: bool, st: dict[str, Any] | None) -> dict[Any, Any]:
        run = run_of(st)
        if run is None or st is None:
            return lost(st)
        record, fb = service.submit(run, str(st.get("qid")), text, gave_up=gave_up)
        if record is None:  # a double click or a stale tab: the question was already answered
            return fresh_question(run, st)
        from .feedback import format_feedback

        out = fresh_question(run, {**st, "doc": None, "page": 0})
        out.update({query: "", answer: "", search_msg: "", feedback: format_feedback(fb) if fb else
                    f"Saved your answer to question {record['id']}."})  # fmt: skip
        return out

    def api(name: str) -> str | bool:
        return False if api_prefix is None else f"{api_prefix}{name}"

    def on_start_embedded(batch_name: str, st: dict[str, Any] | None, known: Any = None,
                          request: gr.Request | None = None,
                          profile: gr.OAuthProfile | None = None) -> dict[Any, Any]:  # fmt: skip
        """A visitor of the Space: runs named by a secret this server made, kept in the browser's local storage.

        The session's state (server side) keeps the key it was given; a key from the browser is taken only if the
        registry holds a run under it (a key it handed out), else the visitor gets a new key and a new run."""
        key = (st or {}).get("key")
        if not key:
            key = known if isinstance(known, str) and service.registry.holds(known) else new_visitor_key()
        try:
            run = service.start(visitor_name(key), batch_name, key=key, client=client_of(request, profile))
        except (StudyError, BatchError) as exc:
            return {start_msg: f"**Cannot start:** {exc}", start_box: gr.update(visible=True)}
        out = fresh_question(run, {"key": key, "annotator": run.annotator, "batch": run.batch})
        out[download] = gr.update(visible=True)
        out[visitor] = key
        return out

    def on_download(st: dict[str, Any] | None) -> Any:
        run = run_of(st)
        if run is None:
            return None
        folder = Path(tempfile.mkdtemp(prefix="madqa-human-"))
        path = folder / f"human-{plan.split}-{run.batch.lower()}.jsonl"
        path.write_text(run.jsonl(), encoding="utf-8")
        return str(path)

    if embedded:
        start.click(on_start_embedded, [batch, state, visitor], [*outputs, download, visitor], api_name=api("start"))
        download.click(on_download, [state], download, api_name=False)
    else:
        if demo is not None:
            demo.load(on_load, None, outputs, api_name=False)
        start.click(on_start, [annotator, batch, state], outputs, api_name=api("start")).then(
            None, [annotator, batch], None, js=REMEMBER_JS, api_name=False)  # fmt: skip
    quick = QUEUED if embedded else FAST
    search.click(on_search, [query, state], outputs, api_name=api("search"), **quick)
    query.submit(on_search, [query, state], outputs, api_name=False, **quick)
    results.select(on_select, [state], outputs, api_name=api("open_result"), **quick)
    for kind, button in nav.items():
        button.click(lambda st, kind=kind: on_nav(kind, st), [state], outputs, api_name=api(f"nav_{kind}"), **quick)
    go.click(on_jump, [jump, state], outputs, api_name=api("jump"), **quick)
    cite.click(lambda st: on_cite(True, st), [state], outputs, api_name=api("cite"), **quick)
    uncite.click(lambda st: on_cite(False, st), [state], outputs, api_name=api("uncite"), **quick)
    submit.click(lambda text, st: on_submit(text, False, st), [answer, state], outputs, api_name=api("submit"))
    give_up.click(lambda st: on_submit("", True, st), [state], outputs, api_name=api("give_up"))
    return HumanHandles(state, run_of)


def launch_human(service: HumanService, *, host: str | None = None, port: int | None = None, **kwargs: Any) -> Any:
    """Build, queue and launch the app; extra ``kwargs`` go to ``Blocks.launch`` (blocks unless told otherwise)."""
    demo = build_human_app(service)
    demo.queue(default_concurrency_limit=8)
    kwargs.setdefault("css", view.CSS)  # gradio 6 takes the page CSS at launch
    demo.launch(server_name=host, server_port=port, **kwargs)
    return demo

"""The human-study app (Gradio): the interface of the paper's Figure 13 over :class:`~.service.HumanService`.

The page viewer on the left (first / previous / next / last / jump, zoom); on the right the question in a blue box,
the search bar, results as whole-page thumbnails captioned by title and page, the answer box (one answer per line),
"Add as citation" / "Remove citation" for the page in view, the citations and the search history
(:mod:`.layout`). Keys: Enter submits, ←/→ turn pages, ``c`` cites (:data:`.view.INSTALL_JS`).

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
from gradio.context import Context

from madqa.space.gradio_launch import launch as launch_gradio
from madqa.space.human import view
from madqa.space.human.batches import BatchError
from madqa.space.human.images import ImageFiles
from madqa.space.human.layout import build_parts
from madqa.space.human.registry import new_visitor_key, visitor_name
from madqa.space.human.service import HumanService
from madqa.space.human.study import StudyError, StudyRun

logger = logging.getLogger(__name__)

#: Client-side: put annotator and batch into the address bar, so a reload resumes the same run.
REMEMBER_JS = """(annotator, batch) => {
  const url = new URL(window.location.href);
  url.searchParams.set("annotator", annotator); url.searchParams.set("batch", batch);
  window.history.replaceState(null, "", url); return [annotator, batch];
}"""
#: Searching and paging skip gradio's queue (a round trip less; measured by ``madqa bench human``) and its
#: progress overlay: they take milliseconds on the server. Only where the annotators are the study's own.
FAST: dict[str, Any] = {"queue": False, "show_progress": "hidden"}
#: Embedded in the Space, where anyone can send requests, the same events go through the queue and share one
#: concurrency group: a flood of searches or page turns waits its turn instead of taking every worker thread.
PUBLIC_ACTIONS_CONCURRENCY = 2
#: Loading, Start and Submit show no progress either: gradio 6.31's status tracker then announces the untranslated key
#: "common.complete" to screen readers (its live region, when an event ends); the new question is the feedback.
QUIET: dict[str, Any] = {"show_progress": "hidden"}
QUEUED: dict[str, Any] = {
    "show_progress": "hidden",
    "concurrency_id": "human-actions",
    "concurrency_limit": PUBLIC_ACTIONS_CONCURRENCY,
}


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
    """The standalone app over ``service`` (nothing is launched): address-bar resume."""
    with gr.Blocks(title=title) as demo:
        human_interface(service, title=title, demo=demo)
    return demo


def human_interface(
    service: HumanService,
    *,
    title: str = "MADQA human study",
    demo: gr.Blocks | None = None,
    embedded: bool = False,
    api_prefix: str | None = "",
    client_of: Callable[[Any, Any], str] = direct_client,
) -> HumanHandles:
    """Build the interface into the current Blocks context.

    Args:
        service: the study's server side.
        title: heading of the start panel.
        demo: the standalone Blocks (its ``load`` resumes a run named in the address bar); ``None`` when embedded.
        embedded: inside another app (the Space's "Solve it yourself" tab): no address-bar resume,
            runs named by a secret per browser kept in its local storage (a reload, then Start, resumes the run
            while the server keeps it), and a download of the visitor's own answers.
        api_prefix: prefix of the API endpoint names; ``None`` hides them from the API (the Space, whose every
            named endpoint is checked for label leaks, has its own ``search`` and ``submit``).
        client_of: ``(request, profile) -> str``, the client a new embedded run counts against (its limits are the
            service registry's, :class:`~.registry.StudyRegistry`).
    """
    plan = service.plan
    oracle = plan.mode == "oracle"
    ui = build_parts(
        title=title,
        split=plan.split,
        oracle=oracle,
        embedded=embedded,
        annotator=plan.annotator,
        batches=service.batch_names(),
        fixed_batch=plan.batch is not None,
    )
    state, visitor, download, start, batch = ui.state, ui.visitor, ui.download, ui.start, ui.batch
    annotator = ui.annotator
    start_box, main_box, question, query, search_msg, results = (
        ui.start_box,
        ui.main_box,
        ui.question,
        ui.query,
        ui.search_msg,
        ui.results,
    )
    title_md, page_img, jump, viewer_msg = ui.title_md, ui.page_img, ui.jump, ui.viewer_msg
    # What acts on the page in view: usable only while a document is open (issue 44, item 22).
    page_controls = [*ui.nav.values(), jump, ui.go, ui.cite, ui.uncite]
    progress, citations, history, answer, feedback, start_msg = (
        ui.progress,
        ui.citations,
        ui.history,
        ui.answer,
        ui.feedback,
        ui.start_msg,
    )

    # Page images go out as files already in Gradio's cache: encoded once per page, not once per response.
    thumb_files = ImageFiles(lambda d, p: service.corpus.thumbnail(d, p), results.GRADIO_CACHE)
    view_files = ImageFiles(lambda d, p: service.corpus.image(d, p), page_img.GRADIO_CACHE)
    outputs = [
        state,
        start_box,
        main_box,
        question,
        query,
        search_msg,
        results,
        title_md,
        page_img,
        jump,
        progress,
        citations,
        history,
        answer,
        feedback,
        start_msg,
        viewer_msg,
        *page_controls,
    ]

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
        return {
            start_box: gr.update(visible=True),
            main_box: gr.update(visible=False),
            start_msg: "Your practice run is no longer kept on this server (it keeps a bounded number of runs "
            "in memory). Press **Start** for a new one.",
        }

    def sidebar(run: StudyRun, *, searches_only: bool = False) -> dict[Any, Any]:
        session = run.session()
        snap = session.snapshot() if session else {"searches": [], "citations": [], "refused": []}
        out = {history: view.history_markdown(snap["searches"], len(snap["refused"]))}
        if not searches_only:  # a search changes the history only: the rest is not sent again
            out.update(
                {
                    progress: view.progress_markdown(run.position(), run.total, run.annotator, run.batch),
                    citations: view.citations_markdown(snap["citations"]),
                }
            )
        return out

    def show_page(run: StudyRun, st: dict[str, Any]) -> dict[Any, Any]:
        doc, page = st.get("doc"), int(st.get("page") or 0)
        usable = {control: gr.update(interactive=bool(doc)) for control in page_controls if control is not jump}
        if not doc:
            closed = {title_md: view.viewer_title(None, 0, 0, False), page_img: None, viewer_msg: ""}
            return {**closed, **usable, jump: gr.update(value=1, interactive=False)}
        session = run.session()
        cited = bool(session and session.is_cited(doc, page))
        return {
            title_md: view.viewer_title(doc, page, service.corpus.pages(doc), cited),
            page_img: view_files.path(doc, page),
            viewer_msg: "",
            **usable,
            jump: gr.update(value=page, interactive=True),
        }

    def gallery(pages: list[tuple[str, int]], query_text: str = "") -> list[tuple[Any, str]]:
        labels = view.captions(pages, lambda d, p: service.corpus.snippet(d, p, query_text))
        return [(thumb_files.path(d, p), label) for (d, p), label in zip(pages, labels, strict=True)]

    def fresh_question(run: StudyRun, st: dict[str, Any]) -> dict[Any, Any]:
        """Everything for the current question, as after a (re)load: sidebar, question, results, viewer."""
        item = run.current_item()
        session = run.session()
        st = {**st, "qid": item["id"] if item else None}
        pages = service.oracle_pages(run) if oracle else []
        last_query = ""
        if session is not None and not oracle and session.searches:
            pages = [(r["document"], r["page"]) for r in session.searches[-1]["results"]]
            last_query = str(session.searches[-1]["query"])
        st["results"] = pages
        if not st.get("doc") or st.get("qid_of_doc") != st["qid"]:
            st.update(doc=None, page=0)
        out = {
            state: st,
            start_box: gr.update(visible=False),
            main_box: gr.update(visible=True),
            question: view.question_markdown(run.position(), run.total, item, run.batch),
            results: gr.update(value=gallery(pages, last_query), visible=bool(pages)),
            start_msg: "",
        }
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
        # Nothing to resume: the start panel is already what the page shows. Returning its visibility here would
        # undo a Start clicked before this response came (a slow machine): the run's panel would vanish.
        return unchanged()

    def on_search(text: str, st: dict[str, Any] | None) -> dict[Any, Any]:
        run = run_of(st)
        if run is None or st is None or oracle:
            return lost(st) if run is None else unchanged()
        outcome = service.search(run, text)
        st = {**st, "results": list(outcome.pages)}
        out = {
            state: st,
            results: gr.update(value=gallery(list(outcome.pages), text), visible=bool(outcome.pages)),
            search_msg: view.search_message(text, len(outcome.pages), outcome.error),
        }
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
        problem = view.jump_problem(int(number), service.corpus.pages(doc))
        if problem is not None:  # said, not clamped: the page in view stays, and no page view is logged
            return {viewer_msg: problem, jump: int((st or {}).get("page") or 1)}
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
        from madqa.space.human.feedback import format_feedback

        out = fresh_question(run, {**st, "doc": None, "page": 0})
        out.update(
            {
                query: "",
                answer: "",
                search_msg: "",
                feedback: format_feedback(fb) if fb else f"Saved your answer to question {record['id']}.",
            }
        )
        if embedded:  # in the same response as the next question: no moment where the button holds the old file
            out[download] = on_download(out[state])
        return out

    def api(name: str) -> str | bool:
        return False if api_prefix is None else f"{api_prefix}{name}"

    def on_start_embedded(
        batch_name: str,
        st: dict[str, Any] | None,
        known: Any = None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> dict[Any, Any]:
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
        out[download] = on_download(out[state])  # a resumed run's answers are there at once
        out[visitor] = key
        return out

    def on_download(st: dict[str, Any] | None) -> Any:
        """The visitor's answers as a file, made again in the response to Start and to every answer: the button
        always holds the current ones, so one click downloads them (a click handler would make the file after the
        browser took the old one)."""
        run = run_of(st)
        if run is None or not run.answered:
            return gr.update(value=None, visible=run is not None)
        folder = Path(tempfile.mkdtemp(prefix="madqa-human-"))
        path = folder / f"human-{plan.split}-{run.batch.lower()}.jsonl"
        path.write_text(run.jsonl(), encoding="utf-8")
        return gr.update(value=str(path), visible=True)

    root = demo if demo is not None else Context.root_block
    if root is not None:  # the look and the keys, the same in both homes
        root.load(None, None, None, js=view.INSTALL_JS, api_name=False)
    if embedded:
        start.click(
            on_start_embedded, [batch, state, visitor], [*outputs, download, visitor], api_name=api("start"), **QUIET
        )
    else:
        if demo is not None:
            demo.load(on_load, None, outputs, api_name=False, **QUIET)
        start.click(on_start, [annotator, batch, state], outputs, api_name=api("start"), **QUIET).then(
            None, [annotator, batch], None, js=REMEMBER_JS, api_name=False
        )
    quick = QUEUED if embedded else FAST
    ui.search.click(on_search, [query, state], outputs, api_name=api("search"), **quick)
    query.submit(on_search, [query, state], outputs, api_name=False, **quick)
    results.select(on_select, [state], outputs, api_name=api("open_result"), **quick).then(
        None, None, None, js=view.SHOW_PAGE_JS, api_name=False
    )
    for kind, button in ui.nav.items():
        button.click(lambda st, kind=kind: on_nav(kind, st), [state], outputs, api_name=api(f"nav_{kind}"), **quick)
    ui.go.click(on_jump, [jump, state], outputs, api_name=api("jump"), **quick)
    ui.cite.click(lambda st: on_cite(True, st), [state], outputs, api_name=api("cite"), **quick)
    ui.uncite.click(lambda st: on_cite(False, st), [state], outputs, api_name=api("uncite"), **quick)
    answer_outputs = [*outputs, download] if embedded else outputs
    answered = [
        ui.submit.click(
            lambda text, st: on_submit(text, False, st),
            [answer, state],
            answer_outputs,
            api_name=api("submit"),
            **QUIET,
        ),
        ui.give_up.click(
            lambda st: on_submit("", True, st), [state], answer_outputs, api_name=api("give_up"), **QUIET
        ),
    ]
    for event in answered:
        event.then(None, None, None, js=view.SCROLL_JS, api_name=False)
    return HumanHandles(state, run_of)


def launch_human(service: HumanService, *, host: str | None = None, port: int | None = None, **kwargs: Any) -> Any:
    """Build, queue and launch the app; extra ``kwargs`` go to ``Blocks.launch`` (blocks unless told otherwise)."""
    demo = build_human_app(service)
    demo.queue(default_concurrency_limit=8)
    launch_gradio(demo, server_name=host, server_port=port, **kwargs)
    return demo

"""The components of the human interface and where they sit (no handlers: :mod:`.app` wires them).

At desktop widths the page viewer is on the left and the work on the right: the question, the search bar and its
results, the answer box, the citation buttons and the citations, so the page and the answer are on one screen
(1440×900); the search history and (in the Space) the download of the visitor's answers follow below. On a phone
one column: the question, the search and its results, then the page viewer, then the answer box and the rest, so
that a page and the answer box fit on one screen (390×844; the CSS of :data:`.view.CSS` reorders them).
``madqa human`` and the Space's tab have the same layout (no page sidebar in either).
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from madqa.space.human import view

NAV = ("first", "previous", "next", "last")


@dataclass(frozen=True)
class Parts:
    """Every component a handler reads or writes."""

    state: gr.State
    visitor: gr.BrowserState | None
    progress: gr.Markdown
    citations: gr.Markdown
    history: gr.Markdown
    download: gr.DownloadButton
    start_box: gr.Column
    annotator: gr.Textbox
    batch: gr.Dropdown
    start: gr.Button
    start_msg: gr.Markdown
    main_box: gr.Column
    question: gr.Markdown
    query: gr.Textbox
    search: gr.Button
    search_msg: gr.Markdown
    results: gr.Gallery
    title_md: gr.Markdown
    viewer_msg: gr.Markdown
    page_img: gr.Image
    nav: dict[str, gr.Button]
    jump: gr.Number
    go: gr.Button
    cite: gr.Button
    uncite: gr.Button
    answer: gr.Textbox
    submit: gr.Button
    give_up: gr.Button
    feedback: gr.Markdown


def build_parts(
    *,
    title: str,
    split: str,
    oracle: bool,
    embedded: bool,
    annotator: str | None,
    batches: list[str],
    fixed_batch: bool,
) -> Parts:
    """Lay the interface out in the current Blocks context (see the module docstring)."""
    state = gr.State(None)
    visitor = gr.BrowserState(None, storage_key="madqa-practice-key") if embedded else None
    with gr.Column(visible=True, elem_id="start-box") as start_box:
        gr.Markdown(f"## {title}: split {split}" + (" (oracle)" if oracle else ""))
        annotator_box = gr.Textbox(
            label="Annotator ID",
            value=annotator or "",
            elem_id="annotator",
            interactive=annotator is None,
            visible=not embedded,
        )
        batch = gr.Dropdown(
            label="Batch", choices=batches, value=batches[0], elem_id="batch", interactive=not fixed_batch
        )
        start = gr.Button("Start", variant="primary", elem_id="start")
        start_msg = gr.Markdown("", elem_id="start-msg")
        gr.Markdown(
            view.START_ORACLE_INSTRUCTIONS if oracle else view.START_INSTRUCTIONS, elem_id="start-instructions"
        )
    with gr.Row(visible=False, equal_height=False, elem_id="main-box") as main_box:
        with gr.Column(scale=3, min_width=320, elem_id="viewer-col"):
            title_md = gr.Markdown(view.viewer_title(None, 0, 0, False), elem_id="viewer-title")
            with gr.Row(elem_id="nav-row"):
                nav = {
                    k: gr.Button(k.capitalize(), elem_id=f"nav-{k}", min_width=60, size="sm", interactive=False)
                    for k in NAV
                }
                jump = gr.Number(
                    label="Page",
                    value=1,
                    precision=0,
                    elem_id="jump",
                    min_width=70,
                    show_label=False,
                    interactive=False,
                )
                go = gr.Button("Go to page", elem_id="nav-jump", min_width=60, size="sm", interactive=False)
            viewer_msg = gr.Markdown("", elem_id="viewer-msg")
            page_img = gr.Image(
                label="Page",
                type="pil",
                format="jpeg",
                interactive=False,
                height=700,
                buttons=["fullscreen"],
                elem_id="viewer",
            )
            gr.Markdown(view.KEYS_HELP, elem_id="keys-help")
        with gr.Column(scale=2, min_width=320, elem_id="work-col"):
            question = gr.Markdown("", elem_id="question")
            progress = gr.Markdown("", elem_id="progress")
            with gr.Accordion("How to answer", open=False, elem_id="instructions-box"):
                gr.Markdown(view.ORACLE_INSTRUCTIONS if oracle else view.INSTRUCTIONS, elem_id="instructions")
            with gr.Row(visible=not oracle, elem_id="search-row"):
                query = gr.Textbox(
                    label="Search", placeholder="e.g. water AND rate*", scale=5, lines=1, elem_id="query"
                )
                search = gr.Button("Search", scale=1, elem_id="search", min_width=70)
            search_msg = gr.Markdown("", elem_id="search-msg")
            results = gr.Gallery(
                label="Results",
                columns=4,
                height="auto",
                allow_preview=False,
                format="jpeg",
                object_fit="contain",
                interactive=False,
                buttons=[],
                visible=False,
                elem_id="results",
            )
            # The citation controls act on the page in view: before the answer and Submit, so that on a phone
            # they follow the page viewer and citing comes before answering.
            with gr.Row(elem_id="cite-row"):
                cite = gr.Button("Add as citation (c)", elem_id="cite", size="sm", min_width=100, interactive=False)
                uncite = gr.Button("Remove citation", elem_id="uncite", size="sm", min_width=100, interactive=False)
            citations = gr.Markdown("", elem_id="citations")
            answer = gr.Textbox(
                label="Answer (one per line for several; Enter submits, Shift+Enter starts a new line)",
                lines=2,
                elem_id="answer",
            )
            with gr.Row(elem_id="submit-row"):
                submit = gr.Button("Submit answer", variant="primary", elem_id="submit-answer")
                give_up = gr.Button("I can't find it", elem_id="give-up")
            feedback = gr.Markdown("", elem_id="feedback")
            history = gr.Markdown("", elem_id="history")
            download = gr.DownloadButton("Download my answers (JSONL)", visible=False, elem_id="download")
    return Parts(
        state=state,
        visitor=visitor,
        progress=progress,
        citations=citations,
        history=history,
        download=download,
        start_box=start_box,
        annotator=annotator_box,
        batch=batch,
        start=start,
        start_msg=start_msg,
        main_box=main_box,
        question=question,
        query=query,
        search=search,
        search_msg=search_msg,
        results=results,
        title_md=title_md,
        viewer_msg=viewer_msg,
        page_img=page_img,
        nav=nav,
        jump=jump,
        go=go,
        cite=cite,
        uncite=uncite,
        answer=answer,
        submit=submit,
        give_up=give_up,
        feedback=feedback,
    )

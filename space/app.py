"""The MADQA Space: leaderboard, submissions and the agent tab as one ``gr.Blocks`` (thin: logic lives in modules).

Run ``python app.py`` (on a Space) or ``madqa space``. Nothing is loaded at import: :func:`main` runs the start-up
sequence of :mod:`madqa.space.startup` (config, dataset, labels, services) and launches.
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any

# First, also where a hosted Space runs this file as `python app.py`: the package's __init__ keeps gradio's import
# from running its .pyi stub writer, a second of every start (madqa.space.gradio_stubs, issue 47).
import madqa.space  # noqa: F401

# isort: split
import gradio as gr

from madqa.space import content
from madqa.space.agent_layout import CSS as AGENT_CSS
from madqa.space.board_tab import CSS as BOARD_CSS
from madqa.space.board_tab import build_board
from madqa.space.frontier_plot import frontier_data, frontier_note, plot_frontiers
from madqa.space.gradio_launch import launch as launch_gradio
from madqa.space.identity import identity_key
from madqa.space.leaderboard import board_frame, official_caption, official_frame, official_heading, system_choices
from madqa.space.plots import plot_alt, plot_data, plot_systems, top_ids
from madqa.space.quiet import quiet_answers
from madqa.space.services import Services
from madqa.space.submission import SubmissionError, format_accepted
from madqa.space.traces_link import TRACES_LABEL, TRACES_PLACEHOLDER
from madqa.space.uploads import RESULTS_SUFFIXES, UploadGate, discard_upload

logger = logging.getLogger(__name__)

#: Generic message for unexpected failures (details go to the server log only). The submission may have been
#: stored just before the failure: a retry with the same key (the UI keeps it until acceptance) answers with it.
INTERNAL_ERROR = (
    "internal error while handling the submission. Please submit again: a retry of the same "
    "submission never stores it twice."
)
#: Seconds between sweeps of gradio's upload folder, and the age past which an unsubmitted upload is deleted.
UPLOAD_SWEEP_S, UPLOAD_MAX_AGE_S = 600, 3600
#: Gives the plot's image its text alternative (gradio 6.31 writes "undefined plot visualising provided data" for a
#: matplotlib figure, and rewrites it when the figure changes, so an observer puts it back).
PLOT_ALT_JS = (
    "(alt) => { window.madqaPlotAlt = alt; const put = () => { const img = document.querySelector('#plot img');"
    " if (img && window.madqaPlotAlt && img.alt !== window.madqaPlotAlt) { img.alt = window.madqaPlotAlt; } };"
    " put(); if (!window.madqaPlotAltWatch) { window.madqaPlotAltWatch = new MutationObserver(put);"
    " window.madqaPlotAltWatch.observe(document.body, {subtree: true, childList: true, attributes: true,"
    " attributeFilter: ['alt', 'src']}); } return []; }"
)


def user_key(request: gr.Request | None, profile: Any) -> str:
    """Rate-limit key: the logged-in HF user, else the direct client address (see :func:`.identity.identity_key`)."""
    return identity_key(request, profile)


def new_key() -> str:
    """A fresh idempotency key for one submission of one browser session."""
    return uuid.uuid4().hex


def build_app(services: Services) -> gr.Blocks:
    """The Blocks app over ``services`` (no network, no label access beyond the scorer)."""
    store, scorer, limiter, config = services.store, services.scorer, services.limiter, services.config

    snapshots = None
    if scorer.private_ids:
        from madqa.space.ladder import Snapshots

        snapshots = Snapshots(store.path)

    def official() -> tuple[str, Any, str]:
        """The official ranking's heading, table (shown once a snapshot has rows) and folded explanation (a due
        periodic snapshot is taken first)."""
        snap = None
        if snapshots is not None:
            snapshots.take_if_due(config.ladder_margin, config.snapshot_days)
            snap = snapshots.latest()
        n_private = len(scorer.private_ids)
        n_public = len(scorer.test_ids) - n_private
        frame = official_frame(store, snap)
        caption = official_caption(snap, n_public, n_private, config.snapshot_days)
        shown = gr.update(value=frame, visible=bool(n_private) and not frame.empty)
        return official_heading(snap, n_public, n_private), shown, caption

    def choices_update() -> Any:
        return gr.update(choices=system_choices(store))

    def submit(
        path: str | None,
        system: str,
        submitter: str,
        agent: str,
        model: str,
        contact: str,
        models_used: str,
        training_data: str,
        compute: str,
        key: str | None,
        traces: str | None,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[str, Any, str]:
        """Score and store one upload; the third output is the session's next idempotency key."""
        form = {
            "system": system,
            "submitter": submitter,
            "agent": agent,
            "model": model,
            "contact": contact,
            "models_used": models_used,
            "training_data": training_data,
            "compute": compute,
            "traces": traces or "",
        }
        if profile is not None and getattr(profile, "username", None):
            form["submitter"] = profile.username
        next_key = key or ""
        try:
            identity = identity_key(request, profile, login_required=config.on_spaces)
            accepted = scorer.submit(
                path, form, identity=identity, key=(key or "").strip()[:200] or None, limiter=limiter
            )
            message = format_accepted(accepted)
            if accepted.replayed:
                message += "\n\n(This repeats an earlier attempt that was already stored; nothing new was stored.)"
            next_key = new_key()  # the next file is a new submission
        except SubmissionError as exc:
            message = f"**Rejected:** {exc}"
        except Exception:  # noqa: BLE001 - never show internals (or anything label-derived) to the user
            logger.exception("submission failed")
            message = f"**Rejected:** {INTERNAL_ERROR}"
        finally:
            discard_upload(path)  # the server's copy, accepted or rejected
        return message, gr.skip(), next_key  # the board is re-rendered next, with the visitor's filters

    submit = quiet_answers(submit, scorer, config.answer_grid_s)  # answers on a time grid, private part idle

    def plot(ids: list[int] | None) -> Any:
        return plot_systems(store, ids or [])

    with gr.Blocks(title=content.TITLE, delete_cache=(UPLOAD_SWEEP_S, UPLOAD_MAX_AGE_S)) as demo:
        # one line above the tabs: the board's table comes first on the first screen (how it is scored: About)
        gr.Markdown(content.HEADER, elem_id="intro")
        if config.on_spaces:
            gr.LoginButton()
        with gr.Tabs(overflow_behavior="wrap"):  # a phone shows every tab (the default hides them behind "…")
            build_tabs(demo, services, official, submit, plot, choices_update)
    return demo


def build_tabs(
    demo: gr.Blocks, services: Services, official: Any, submit: Any, plot: Any, choices_update: Any
) -> None:
    """The Space's tabs, inside the current ``gr.Tabs`` (the handlers come from :func:`build_app`)."""
    store, config = services.store, services.config
    with gr.Tab("Leaderboard", elem_id="tab-leaderboard"):
        official_text = gr.Markdown(elem_id="official-caption")
        official_table = gr.Dataframe(interactive=False, wrap=True, elem_id="official", max_height=300, visible=False)
        board = build_board(demo, store)
        # under the live board, so that its rows are on the first screen (issue 44, item 5)
        with gr.Accordion("How the two tables are made", open=False, elem_id="official-more-box"):
            official_more = gr.Markdown(elem_id="official-more")
        official_parts = [official_text, official_table, official_more]
        demo.load(official, None, official_parts, api_name="official")
        with gr.Accordion("Plots for selected systems", open=True, elem_id="board-plots"):
            picked = gr.CheckboxGroup(label="Systems", choices=system_choices(store), elem_id="pick")
            draw = gr.Button("Plot", elem_id="plot-button")
            figure = gr.Plot(elem_id="plot", label="Accuracy, Kuiper and error cascade")
            alt = gr.Textbox(visible=False, elem_id="plot-alt")
        with gr.Accordion("Cost and effort: Pareto frontiers", open=True, elem_id="board-frontier"):
            frontier = gr.Plot(elem_id="frontier-plot", label="Pareto frontiers", show_label=False)
            frontier_text = gr.Markdown(elem_id="frontier-note")

        def frontiers() -> tuple[Any, str]:
            """Every row of the board, drawn when the page opens and after Refresh (issue 43, item 2)."""
            rows = board_frame(store.submissions())
            return plot_frontiers(rows), frontier_note(frontier_data(rows))

        board.refreshed.then(choices_update, None, picked, api_name=False).then(
            official, None, official_parts, api_name=False
        ).then(frontiers, None, [frontier, frontier_text], api_name=False)
        demo.load(frontiers, None, [frontier, frontier_text], api_name=False)

        def describe(ids: list[int] | None) -> str:
            return plot_alt(plot_data(store, ids or []))

        def first_pick() -> Any:
            """The systems stored by now, the board's first rows ticked (drawn at once, issue 44, item 9)."""
            return gr.update(choices=system_choices(store), value=top_ids(store))

        draw.click(plot, picked, figure, api_name="plot").then(describe, picked, alt, api_name=False).then(
            None, alt, None, js=PLOT_ALT_JS, api_name=False
        )
        demo.load(first_pick, None, picked, api_name=False).then(plot, picked, figure, api_name=False).then(
            describe, picked, alt, api_name=False
        ).then(None, alt, None, js=PLOT_ALT_JS, api_name=False)
    with gr.Tab("Submit", elem_id="tab-submit"):
        gr.Markdown(content.HOW_TO_SUBMIT)
        upload = gr.File(label="results JSONL", file_types=list(RESULTS_SUFFIXES), type="filepath", elem_id="upload")
        with gr.Row():
            system = gr.Textbox(label="System name", elem_id="f-system")
            submitter = gr.Textbox(label="Submitter (your HF user on Spaces)", elem_id="f-submitter")
            agent = gr.Textbox(label="Agent", elem_id="f-agent")
            model = gr.Textbox(label="Model", elem_id="f-model")
        with gr.Row():
            contact = gr.Textbox(label="Contact (never shown)", elem_id="f-contact")
            models_used = gr.Textbox(label="Models used (all of them)", elem_id="f-models")
            training = gr.Textbox(label="Training-data statement", elem_id="f-training")
            compute = gr.Textbox(label="Compute budget", elem_id="f-compute")
        traces = gr.Textbox(value="", label=TRACES_LABEL, placeholder=TRACES_PLACEHOLDER, elem_id="f-traces")
        send = gr.Button("Submit", variant="primary", elem_id="submit")
        status = gr.Markdown(elem_id="status")
        # Idempotency key: per browser session, kept after a failure (so a retry is recognised), renewed after
        # acceptance. API clients may pass their own as the optional argument ``key``, then the optional traces URL
        # (after the key, so that the older positional calls keep working).
        submit_key = gr.Textbox(value="", visible=False, label="key", elem_id="f-key")
        demo.load(new_key, None, submit_key, api_name=False)
        send.click(
            submit,
            [upload, system, submitter, agent, model, contact, models_used, training, compute, submit_key, traces],
            [status, board.table, submit_key],
            api_name="submit",
            concurrency_limit=4,
        ).then(choices_update, None, picked, api_name=False).then(
            board.render, board.inputs, [board.table, board.note], api_name=False
        )
    with gr.Tab("Try an agent", elem_id="tab-agent"):
        from madqa.space.agent_tab import build_agent_tab

        build_agent_tab(config)
    with gr.Tab("Explore (dev)", elem_id="tab-explore"):
        from madqa.space.explore.tab import build_explore_tab

        build_explore_tab(config)
    with gr.Tab("Solve it yourself", elem_id="tab-human"):
        from madqa.space.human.practice import build_practice_tab

        build_practice_tab(config.dataset, services.practice, client_of=identity_key)
    with gr.Tab("About", elem_id="tab-about"):
        gr.Markdown(content.ABOUT, elem_id="about")
        with gr.Accordion("How the board is scored", open=True, elem_id="intro-more"):
            gr.Markdown(content.INTRO)


def launch(services: Services, *, port: int | None = None, host: str | None = None, **kwargs: Any) -> gr.Blocks:
    """Build and launch (upload limit and gate from the config); extra ``kwargs`` go to ``Blocks.launch``.

    ``X-Forwarded-For`` is honoured only from the proxies in ``MADQA_SPACE_TRUSTED_PROXIES``: uvicorn (which gradio
    starts) trusts it from 127.0.0.1 by default and rewrites the client address the handlers see, which let any
    local client choose its rate-limit key. uvicorn reads ``FORWARDED_ALLOW_IPS`` when gradio builds its config,
    so it is set here, before launching (empty: trust no proxy).
    """
    from starlette.middleware import Middleware

    demo = build_app(services)
    demo.queue(default_concurrency_limit=4)
    os.environ["FORWARDED_ALLOW_IPS"] = ",".join(services.config.trusted_proxies)
    max_bytes = services.config.max_file_bytes
    app_kwargs = dict(kwargs.pop("app_kwargs", None) or {})
    app_kwargs["middleware"] = [*app_kwargs.get("middleware", []), Middleware(UploadGate, max_bytes=max_bytes)]
    css = "\n".join(c for c in (BOARD_CSS, AGENT_CSS, kwargs.pop("css", None)) if c)
    launch_gradio(
        demo, server_name=host, server_port=port, max_file_size=max_bytes, app_kwargs=app_kwargs, css=css, **kwargs
    )
    return demo


def main() -> None:
    """Entry point of the Space (``python app.py``): :func:`.startup.serve` (a configuration error serves a page
    naming the variable instead of crashing). Host and port come from ``GRADIO_SERVER_NAME``/``GRADIO_SERVER_PORT``.
    """
    from madqa.space.startup import serve

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    serve(launch)


if __name__ == "__main__":
    main()

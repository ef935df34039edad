"""The MADQA Space: leaderboard, submissions and the agent tab as one ``gr.Blocks`` (thin: logic lives in modules).

Run ``python app.py`` (on a Space) or ``madqa space``. Nothing is loaded at import: :func:`main` reads the config,
creates the services and launches.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import gradio as gr

from madqa.space import content
from madqa.space.config import SpaceConfig
from madqa.space.leaderboard import board_frame, filter_board, styled_board, system_choices
from madqa.space.plots import plot_systems
from madqa.space.services import Services, create_services
from madqa.space.submission import SubmissionError, format_accepted

logger = logging.getLogger(__name__)

#: Generic message for unexpected failures (details go to the server log only).
INTERNAL_ERROR = "internal error while handling the submission; nothing was stored. Please try again later."


def user_key(request: gr.Request | None, profile: Any) -> str:
    """Rate-limit key: the logged-in HF user on Spaces, else the client IP."""
    if profile is not None and getattr(profile, "username", None):
        return f"user:{profile.username}"
    host = getattr(getattr(request, "client", None), "host", None) if request is not None else None
    return f"ip:{host or 'unknown'}"


def build_app(services: Services) -> gr.Blocks:
    """The Blocks app over ``services`` (no network, no label access beyond the scorer)."""
    store, scorer, limiter, config = services.store, services.scorer, services.limiter, services.config

    def board(query: str = "") -> Any:
        return styled_board(filter_board(board_frame(store.submissions()), query))

    def choices_update() -> Any:
        return gr.update(choices=system_choices(store))

    def submit(
        path: str | None, system: str, submitter: str, agent: str, model: str, contact: str, models_used: str,
        training_data: str, compute: str, request: gr.Request, profile: gr.OAuthProfile | None = None,
    ) -> tuple[str, Any]:
        form = {"system": system, "submitter": submitter, "agent": agent, "model": model, "contact": contact,
                "models_used": models_used, "training_data": training_data, "compute": compute}  # fmt: skip
        if profile is not None and getattr(profile, "username", None):
            form["submitter"] = profile.username
        try:
            limiter.check(user_key(request, profile))
            accepted = scorer.submit(path, form)
            message = format_accepted(accepted)
        except SubmissionError as exc:
            message = f"**Rejected:** {exc}"
        except Exception:  # noqa: BLE001 - never show internals (or anything label-derived) to the user
            logger.exception("submission failed")
            message = f"**Rejected:** {INTERNAL_ERROR}"
        return message, board()

    def plot(ids: list[int] | None) -> Any:
        return plot_systems(store, ids or [])

    with gr.Blocks(title=content.TITLE) as demo:
        gr.Markdown(content.INTRO)
        if config.on_spaces:
            gr.LoginButton()
        with gr.Tab("Leaderboard", elem_id="tab-leaderboard"):
            with gr.Row():
                query = gr.Textbox(label="Search systems", placeholder="system, submitter, agent or model", scale=4)
                refresh = gr.Button("Refresh", scale=1, elem_id="refresh")
            table = gr.Dataframe(value=board, interactive=False, show_search="filter", pinned_columns=2, wrap=True,
                                 buttons=["copy", "fullscreen"], elem_id="leaderboard", max_height=600)  # fmt: skip
            with gr.Accordion("Plots for selected systems", open=True):
                picked = gr.CheckboxGroup(label="Systems", choices=system_choices(store), elem_id="pick")
                draw = gr.Button("Plot", elem_id="plot-button")
                figure = gr.Plot(elem_id="plot")
            query.submit(board, query, table, api_name="search")
            refresh.click(board, query, table, api_name="refresh").then(choices_update, None, picked,
                                                                        api_name=False)  # fmt: skip
            draw.click(plot, picked, figure, api_name="plot")
        with gr.Tab("Submit", elem_id="tab-submit"):
            gr.Markdown(content.HOW_TO_SUBMIT)
            upload = gr.File(label="results JSONL", file_types=[".jsonl"], type="filepath", elem_id="upload")
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
            send = gr.Button("Submit", variant="primary", elem_id="submit")
            status = gr.Markdown(elem_id="status")
            send.click(submit, [upload, system, submitter, agent, model, contact, models_used, training, compute],
                       [status, table], api_name="submit", concurrency_limit=4).then(
                choices_update, None, picked, api_name=False)  # fmt: skip
        with gr.Tab("Try an agent", elem_id="tab-agent"):
            from madqa.space.agent_tab import build_agent_tab

            build_agent_tab(config)
        with gr.Tab("About", elem_id="tab-about"):
            gr.Markdown(content.ABOUT)
    return demo


def launch(services: Services, *, port: int | None = None, host: str | None = None, **kwargs: Any) -> gr.Blocks:
    """Build and launch (upload limit from the config); extra ``kwargs`` go to ``Blocks.launch``."""
    demo = build_app(services)
    demo.queue(default_concurrency_limit=4)
    demo.launch(server_name=host, server_port=port, max_file_size=services.config.max_file_bytes, **kwargs)
    return demo


def main() -> None:
    """Entry point of the Space (``python app.py``)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    config = SpaceConfig.from_env()
    launch(create_services(config, seed=os.environ.get("MADQA_SPACE_SEED", "1") != "0"))


if __name__ == "__main__":
    main()

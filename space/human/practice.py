"""The Space's "Solve it yourself" tab: the human interface on dev questions, in practice mode.

A visitor's runs are named by a random secret the server makes and the browser keeps in its local storage (the
annotator id shown is a digest of it, never enough to attach to the run); the run is kept in the server's memory
only (:class:`~.study.StudyRun` with no file) and is gone when the Space restarts. New runs are limited per client
(address, or Hub user): :data:`ENV_NEW_RUNS` per hour, and one client's Starts only ever drop its own runs
(:class:`~.registry.StudyRegistry`). After each answer the gold answer,
evidence pages and score are shown (dev labels are public). Nothing is stored unless the visitor chooses to: they
may download the answers as a results file (``system_type: "human"``) to score with ``madqa evaluate --split dev``
or compare with ``madqa compare``, or, when the host app gives a :class:`RunShelf`, **share** the run on the
practice board (scored over the questions answered). Human runs of the test split, made with
``madqa human --split test``, go through the Space's Submit tab and show on the leaderboard as ``human`` rows.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import gradio as gr

from madqa.space.human.app import direct_client, human_interface
from madqa.space.human.registry import NEW_RUNS_PER_CLIENT
from madqa.space.human.service import HumanService

logger = logging.getLogger(__name__)

#: New practice runs one client may start per hour (default :data:`~.study.NEW_RUNS_PER_CLIENT`; 0: no limit).
ENV_NEW_RUNS = "MADQA_SPACE_PRACTICE_NEW_RUNS"

INTRO = """Answer MADQA dev questions with the same search engine the agents use. Nothing you do here is stored
unless you share it: your answers live in this server's memory for your browser. After each answer you see the
gold answer, the evidence pages and your score. **Download my answers** keeps them as a results file (score it
with `madqa evaluate FILE --split dev`); **Share my run** puts it on the practice board below."""

SHARE_NOTE = """Sharing stores your answers, searches, page views and citations for these dev questions, with the
name you give, and shows your scores (over the questions you answered) on this board. It is separate from the
test leaderboard."""


class ShareRefused(ValueError):
    """The shelf refused a run; ``str()`` is the message for the visitor (nothing was stored)."""


class RunShelf(Protocol):
    """Where shared practice runs go (the Space's :class:`madqa.space.practice_runs.PracticeShelf`)."""

    def share_request(
        self, name: str, run_jsonl: str, report: Mapping[str, Any], *, batch: str, request: Any, profile: Any
    ) -> int:
        """Store one run for the visitor of ``request``/``profile``; its board number. Raises :class:`ShareRefused`."""

    def frame(self) -> Any:
        """The practice board (a pandas DataFrame)."""


#: Practice board columns shown as percentages (the shelf keeps them as numbers in percent, so that sorting works).
PERCENT_COLUMNS = ("Accuracy", "ANLS*", "Page F1", "Doc F1")


def shown_board(frame: Any) -> Any:
    """The practice board (a DataFrame) as shown, in the main board's units: percentages with ``%`` to one
    decimal, the mean number of searches to one decimal, ``—`` where a value is missing (a pandas ``Styler``: the
    cells stay numbers underneath, so the table still sorts by value).

    >>> import pandas as pd
    >>> shown_board(pd.DataFrame([{"Accuracy": 100.0, "Page F1": None, "Mean searches": 1.25}])).to_string().split()
    ['Accuracy', 'Page', 'F1', 'Mean', 'searches', '0', '100.0%', '—', '1.2']
    """

    def cell(unit: str) -> Any:
        return lambda v: "—" if v is None or v != v else f"{float(v):.1f}{unit}"  # v != v: NaN

    formats = {name: cell("%") for name in PERCENT_COLUMNS if name in frame.columns}
    if "Mean searches" in frame.columns:
        formats["Mean searches"] = cell("")
    return frame.style.format(formats)


def new_runs_per_hour(env: Mapping[str, str] | None = None) -> int:
    """:data:`ENV_NEW_RUNS` (a malformed or negative value is logged and the default used)."""
    raw = (os.environ if env is None else env).get(ENV_NEW_RUNS, "").strip()
    if not raw:
        return NEW_RUNS_PER_CLIENT
    if raw.isdigit():
        return int(raw)
    logger.warning("%s=%r is not a whole number: using %d", ENV_NEW_RUNS, raw, NEW_RUNS_PER_CLIENT)
    return NEW_RUNS_PER_CLIENT


def build_practice_tab(
    dataset: str | os.PathLike[str] | None,
    shelf: RunShelf | None = None,
    *,
    client_of: Callable[[Any, Any], str] = direct_client,
) -> HumanService | None:
    """Build the tab into the current Blocks context and return its service (``None``: the dataset cannot be read,
    and the tab says so). With ``shelf``, visitors may share their runs on the practice board. ``client_of(request,
    profile)`` names the client a new run counts against (the Space: its identity key)."""
    from madqa.loading_script.load import DatasetUnavailableError
    from madqa.space.human.corpus import HumanCorpus
    from madqa.space.human.service import build_plan

    try:
        plan = build_plan("dev", dataset=dataset, out_dir=None)
    except (DatasetUnavailableError, ValueError, OSError) as exc:
        logger.warning("the practice tab is unavailable: %s", exc)
        gr.Markdown(f"The practice questions are not available on this Space ({exc}).")
        return None
    gr.Markdown(INTRO)
    service = HumanService(plan, lambda: HumanCorpus.open(dataset))
    service.registry.new_runs_per_client = new_runs_per_hour()  # the window is the registry's hour
    handles = human_interface(service, title="Solve it yourself", embedded=True, api_prefix=None, client_of=client_of)
    if shelf is None:
        return service
    with gr.Accordion("Practice board: share my run (optional)", open=True, elem_id="practice-share"):
        gr.Markdown(SHARE_NOTE)
        with gr.Row():
            name = gr.Textbox(label="Name shown on the board", max_length=60, scale=4, elem_id="share-name")
            share = gr.Button("Share my run", scale=1, elem_id="share")
        message = gr.Markdown("", elem_id="share-msg")
        # A static first value and a button, not ``value=shelf.frame``: a callable value would add a public API
        # endpoint, and the Space keeps its named endpoints to those its leak test calls.
        board = gr.Dataframe(
            value=shown_board(shelf.frame()), interactive=False, elem_id="practice-board", max_height=400
        )
        refresh = gr.Button("Refresh the board", size="sm", elem_id="practice-refresh")

    def on_share(
        visitor_name: str, st: dict[str, Any] | None, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> tuple[str, Any]:
        from madqa.space.human.feedback import practice_report

        run = handles.run_of(st)
        if run is None:
            return "**Not shared:** start a batch and answer a question first.", shown_board(shelf.frame())
        text = run.jsonl()
        try:
            report = practice_report(text, plan.gold or {})
            number = shelf.share_request(visitor_name, text, report, batch=run.batch, request=request, profile=profile)
        except (ShareRefused, ValueError) as exc:
            return f"**Not shared:** {exc}", shown_board(shelf.frame())
        accuracy = report.get("accuracy")
        score = "" if accuracy is None else f": accuracy {100 * accuracy:.1f}% over {report['n']} question(s)"
        return f"Shared as #{number}{score}.", shown_board(shelf.frame())

    share.click(on_share, [name, handles.state], [message, board], api_name=False, concurrency_limit=2)
    refresh.click(lambda: shown_board(shelf.frame()), None, board, api_name=False)
    return service

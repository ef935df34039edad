"""The Space's "Solve it yourself" tab: the human interface on dev questions, in practice mode, stored nowhere.

A visitor gets a random annotator id for the browser session; the run is kept in the server's memory only
(:class:`~.study.StudyRun` with no file) and is gone when the Space restarts. After each answer the gold answer,
evidence pages and score are shown (dev labels are public). The visitor may download the answers as a results
file (``system_type: "human"``) to score with ``madqa evaluate --split dev`` or compare with ``madqa compare``;
human runs of the test split, made with ``madqa human --split test``, go through the Space's Submit tab and show on
the board as ``human`` rows.
"""

from __future__ import annotations

import logging
import os

import gradio as gr

from .app import human_interface
from .service import HumanService

logger = logging.getLogger(__name__)

INTRO = """Answer MADQA dev questions with the same search engine the agents use. Nothing you do here is stored:
your answers live in this browser session. After each answer you see the gold answer, the evidence pages and
your score. Use **Download my answers** to keep them as a results file (score it with
`madqa evaluate FILE --split dev`)."""


def build_practice_tab(dataset: str | os.PathLike[str] | None) -> HumanService | None:
    """Build the tab into the current Blocks context and return its service (``None``: the dataset cannot be read,
    and the tab says so)."""
    from madqa.loading_script.load import DatasetUnavailableError

    from .corpus import HumanCorpus
    from .service import build_plan

    try:
        plan = build_plan("dev", dataset=dataset, out_dir=None)
    except (DatasetUnavailableError, ValueError, OSError) as exc:
        logger.warning("the practice tab is unavailable: %s", exc)
        gr.Markdown(f"The practice questions are not available on this Space ({exc}).")
        return None
    gr.Markdown(INTRO)
    service = HumanService(plan, lambda: HumanCorpus.open(dataset))
    human_interface(service, title="Solve it yourself", embedded=True, api_prefix=None)
    return service

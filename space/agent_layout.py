"""How the "Try an agent" tab lays out its inputs and trajectory (issue 44, items 15 and 16): short dropdown labels
with the whole question shown beside them, and a trajectory that reads like a transcript rather than a chat.

* **Dropdowns show their whole choice.** An ``<input>`` cannot wrap, so a dev question's label is its id and first
  words (:func:`question_label`, short enough for a phone's full-width box) and the whole question is printed under
  the pickers (:func:`question_line`); the agent and model pickers get a row of their own, each at least
  ``PICKER_MIN_PX`` wide.
* **The trajectory is a transcript.** The Chatbot uses the "panel" layout (full-width messages, no bubbles), has no
  height of its own (it grows with the run, and the page scrolls: no second scrollbar), and before a run it is a
  one-line placeholder saying what will appear. Page images are rendered ``PAGE_SIDE`` px on their long side and shown
  whole in the window, as wide as that and the trajectory allow up to ``PAGE_SHOW_PX``, so their text can be read
  (on a phone, as wide as the screen and sharp when zoomed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gradio as gr

from .config import SpaceConfig

#: The longest dev-question label (characters): a 390-px phone's full-width dropdown shows about 38.
LABEL_CHARS = 34
#: The narrowest the agent and model pickers get before wrapping under each other (px).
PICKER_MIN_PX = 300
#: The long side (px) page images are rendered at, and the widest they are shown (CSS px): a page is shown whole in
#: the window (at most 90% of its height: about 620 px wide at 900 px), its body text about 10 px high.
PAGE_SIDE = 1100
PAGE_SHOW_PX = 760
#: What the trajectory shows before a run.
PLACEHOLDER = (
    "The agent's steps will appear here as it works: each search with the pages it returned, each code step with its "
    "output, then the answer with its cited pages."
)

#: Added to the Space's page CSS (``madqa.space.app.launch``).
CSS = f"""
#trajectory .message img {{
  width: auto; height: auto; max-width: min(100%, {PAGE_SHOW_PX}px); max-height: 90vh; object-fit: contain;
}}
#trajectory .placeholder-content {{ padding: 12px; }}
#dev-question {{ margin-top: -6px; }}
"""


def question_label(qid: str, question: str, limit: int = LABEL_CHARS) -> str:
    """A dev question's dropdown label: its id and as many whole words as fit in ``limit`` characters.

    >>> question_label("q0006", "In 2019, which company reported the highest revenue?")
    'q0006: In 2019, which company…'
    >>> question_label("q0001", "What is the total?")
    'q0001: What is the total?'
    """
    label = f"{qid}: {' '.join(question.split())}"
    if len(label) <= limit:
        return label
    cut = label[: limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut[len(qid) + 2 :] else cut
    return head.rstrip(" ,;:") + "…"


def question_line(qid: str | None, question: str | None) -> str:
    """The whole picked question, shown under the pickers (Markdown); empty when none is picked.

    >>> question_line("q0006", "In 2019, which company reported the highest revenue?")
    '**q0006**: In 2019, which company reported the highest revenue?'
    """
    return f"**{qid}**: {question}" if qid and question else ""


def pickers(
    dev: Mapping[str, Mapping[str, Any]], agents: Sequence[str], agent: str, config: SpaceConfig
) -> tuple[Any, Any, Any, Any]:
    """The question, typed-question, agent and model inputs (in the current Blocks context), and the line under
    them that shows the whole picked question."""
    choices = [(question_label(qid, str(q["question"])), qid) for qid, q in dev.items()]
    first = choices[0][1] if choices else None
    with gr.Row():
        dev_pick = gr.Dropdown(
            label="Dev question", choices=choices, value=first, elem_id="dev-pick", scale=1, min_width=PICKER_MIN_PX
        )
        typed = gr.Textbox(label="…or type a question", elem_id="typed", scale=1, min_width=PICKER_MIN_PX)
    picked = gr.Markdown(question_line(first, dev[first]["question"] if first else None), elem_id="dev-question")
    with gr.Row():
        agent_pick = gr.Dropdown(
            label="Agent", choices=list(agents), value=agent, elem_id="agent-pick", scale=1, min_width=PICKER_MIN_PX
        )
        model_pick = gr.Dropdown(
            label="Model",
            choices=list(config.agent_models),
            value=config.agent_model,
            elem_id="model-pick",
            scale=1,
            min_width=PICKER_MIN_PX,
        )
    dev_pick.change(
        lambda qid: question_line(qid, dev[qid]["question"] if qid in dev else None),
        dev_pick,
        picked,
        api_name=False,
        queue=False,
    )
    return dev_pick, typed, agent_pick, model_pick


def trajectory() -> Any:
    """The trajectory (in the current Blocks context): a transcript, not a chat; see the module's notes."""
    return gr.Chatbot(
        height=None,
        layout="panel",
        placeholder=PLACEHOLDER,
        feedback_options=None,
        elem_id="trajectory",
        label="Trajectory",
    )

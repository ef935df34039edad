"""The Space's "Explore" tab: the explorer over an uploaded **dev** (or train) results file; never test labels.

Only the public splits are offered (:data:`~.runs.PUBLIC_SPLITS`); the gold is read with
:func:`~.runs.load_gold_references` ``(public_only=True)``, which refuses any other split before reading anything,
so this tab never opens the private labels file. A file whose lines are test questions matches no dev/train id and
is refused with a message saying so. Uploads go through the Space's upload gate (size limit) and are deleted after
reading.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import gradio as gr

from madqa.space import content
from madqa.space.config import SpaceConfig
from madqa.space.uploads import RESULTS_SUFFIXES, discard_upload

from .runs import PUBLIC_SPLITS, ExploreError, load_gold_references, open_workspace, read_text
from .thumbs import Thumbnails
from .ui import ExplorerUI, Registry

logger = logging.getLogger(__name__)


def is_upload(path: str) -> bool:
    """Whether ``path`` is a file in gradio's upload folder (the only files this tab reads)."""
    from gradio.utils import get_upload_folder

    root = Path(get_upload_folder()).resolve()
    file = Path(path).resolve()
    return root in file.parents and file.is_file()


def load_uploads(paths: Any, split: Any, config: SpaceConfig, registry: Registry) -> tuple[str, str | None]:
    """Open uploaded files as a workspace: ``(status message, registry key or None)``."""
    files = [paths] if isinstance(paths, str) else [str(p) for p in paths or []]
    try:
        if not files:
            return "Upload one or more results files (`.jsonl`) of the dev or train split.", None
        if not all(is_upload(p) for p in files):  # an API caller may name any server path: read uploads only
            return "**Refused:** only uploaded files can be explored.", None
        split = str(split or "dev")
        refs = load_gold_references(split, config.dataset, public_only=True)  # refuses test before any read
        sources = [(p, read_text(p)) for p in files[:4]]
        display = [(p.rsplit("/", 1)[-1], text) for p, text in sources]
        ws = open_workspace(display, refs, split=split, dataset=config.dataset)
    except ExploreError as exc:
        return f"**Refused:** {exc}", None
    except Exception:  # noqa: BLE001 - never show internals to a visitor
        logger.exception("explore upload failed")
        return "**Refused:** internal error while reading the file.", None
    finally:
        for path in files:
            discard_upload(path)
    key = registry.put(ws)
    notes = []
    for run in ws.runs:
        m = run.scored.matching
        if m.unknown:
            notes.append(f"{run.name}: {len(m.unknown)} line(s) are not {split} questions and are ignored")
        if m.missing_ids:
            notes.append(f"{run.name}: {len(m.missing_ids)} {split} question(s) have no line (missing)")
    names = ", ".join(f"**{r.name}**" for r in ws.runs)
    return f"Loaded {names} on the {split} split ({len(refs)} questions). " + "; ".join(notes), key


def build_explore_tab(config: SpaceConfig) -> None:
    """Add the tab's components to the current Blocks context."""
    registry = Registry(limit=8)
    thumbs = Thumbnails(config.dataset)
    gr.Markdown(content.EXPLORE_HELP)
    with gr.Row():
        upload = gr.File(
            label="results JSONL (dev or train)",
            file_types=list(RESULTS_SUFFIXES),
            type="filepath",
            file_count="multiple",
            elem_id="explore-upload",
            scale=3,
        )
        split = gr.Dropdown(list(PUBLIC_SPLITS), value="dev", label="Split", elem_id="explore-split", scale=1)
    load = gr.Button("Explore", variant="primary", elem_id="explore-load")
    status = gr.Markdown(elem_id="explore-status")
    key = gr.State(None)
    ui = ExplorerUI(registry, thumbs, key)
    ui.build(None)

    def on_load(paths: Any, chosen: Any) -> tuple[str, Any]:
        return load_uploads(paths, chosen, config, registry)

    loaded = load.click(on_load, [upload, split], [status, key], api_name="explore_load").then(
        ui.updates_for, [key], ui.refresh_outputs(), api_name=False
    )
    # the table is hidden until a run is loaded (an empty one shows a placeholder "1 2 3" header)
    loaded.then(lambda k: gr.update(visible=registry.get(k) is not None), [key], ui.table, api_name=False)

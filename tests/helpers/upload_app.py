"""A bare gradio app with one File input, for the upload tests: where gradio stores an upload, with or without a
gate in front of it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from helpers.ports import free_port
from madqa.space.gradio_launch import launch as launch_gradio


@contextmanager
def file_upload_app(folder: Path, **launch_kwargs: Any) -> Iterator[int]:
    """Serve a gradio app with one File on a free port, its uploads stored in ``folder``; yields the port.

    ``GRADIO_TEMP_DIR`` names ``folder`` only while the app starts (gradio reads it then), so the other tests of the
    process keep their own upload folder."""
    import gradio as gr

    saved = os.environ.get("GRADIO_TEMP_DIR")
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    try:
        with gr.Blocks() as demo:
            gr.File()
        port = free_port()
        launch_gradio(
            demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_kwargs
        )
    finally:
        os.environ.pop("GRADIO_TEMP_DIR") if saved is None else os.environ.update(GRADIO_TEMP_DIR=saved)
    try:
        yield port
    finally:
        demo.close()

"""The human practice interface as the Space embeds it (its API names prefixed ``h_``), served on a free port."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from helpers.ports import free_port
from madqa.space.gradio_launch import launch as launch_gradio


@contextmanager
def embedded_practice(service: Any, **queue: Any) -> Iterator[str]:
    """Serve ``service`` in the embedded practice interface, queued with ``queue`` (``Blocks.queue`` arguments);
    yields its URL and closes it after."""
    import gradio as gr

    from madqa.space.human.app import human_interface

    with gr.Blocks() as demo:
        human_interface(service, embedded=True, api_prefix="h_")
    port = free_port()
    launch_gradio(demo.queue(**queue), server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()

"""Launching a Gradio app on a machine too busy to answer gradio's own 3-second localhost check (issue 39).

gradio's ``launch()`` gives up when one HEAD of the local URL times out. Here that HEAD always times out, as it
did at load 10-15: plain ``launch()`` fails, :func:`madqa.space.gradio_launch.launch` serves.
"""

from __future__ import annotations

import http.server
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from madqa.space.gradio_launch import NotReadyError, launch, wait_ready

gr = pytest.importorskip("gradio")

from helpers.ports import free_port  # noqa: E402

pytestmark = pytest.mark.server


@pytest.fixture()
def head_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every HEAD that gradio's ``networking.url_ok`` sends times out, as on a machine at load 10-15."""
    import httpx
    from gradio import networking

    def slow_head(url: str, **kwargs: object) -> httpx.Response:
        raise httpx.ReadTimeout(f"HEAD {url}: no answer within {kwargs.get('timeout')} s")

    monkeypatch.setattr(networking.httpx, "head", slow_head)


def _demo() -> object:
    with gr.Blocks() as demo:
        gr.Markdown("ready")
    return demo


def test_gradio_alone_fails_where_its_check_times_out(head_times_out: None) -> None:
    demo = _demo()
    try:
        with pytest.raises(ValueError, match="shareable link must be created"):
            demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    finally:
        demo.close()


def test_launch_serves_where_gradios_check_times_out(head_times_out: None) -> None:
    demo = _demo()
    port = free_port()
    try:
        launch(demo, server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=60) as response:
            assert response.status == 200 and b"ready" in response.read()
    finally:
        demo.close()


@contextmanager
def _late_server(refusals: int) -> Iterator[tuple[str, list[int]]]:
    """A server on a free port whose first ``refusals`` answers are dropped connections."""
    seen = [0]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server name
            seen[0] += 1
            if seen[0] <= refusals:
                self.close_connection = True
                self.connection.close()
                return
            self.send_response(404)  # any status is an answer
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", seen
    finally:
        server.shutdown()
        server.server_close()


def test_wait_ready_asks_again_until_the_server_answers() -> None:
    with _late_server(refusals=3) as (url, seen):
        wait_ready(url, timeout_s=60)
        assert seen[0] == 4


def test_wait_ready_names_the_url_when_nothing_answers() -> None:
    ticks = iter(float(t) for t in range(0, 10_000, 50))  # each reading of the clock: 50 s later
    url = f"http://127.0.0.1:{free_port()}/"  # nothing listens there
    with pytest.raises(NotReadyError, match=rf"{url} did not answer within 120 s"):
        wait_ready(url, timeout_s=120, clock=lambda: next(ticks))

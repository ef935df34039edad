"""One way for the tests to open a gradio client: with HTTP timeouts sized for a loaded 2-core machine.

gradio_client's own uploads and calls use httpx's default 5 s timeout; under a CPU load generator a busy Space took
longer than that to accept an upload (httpcore.ReadTimeout in the hostile-files test). The tests wait on the
server's answer, not on the clock, so the bound is generous: it only ends a test whose server is hung.
"""

from __future__ import annotations

from typing import Any

#: Seconds one HTTP request of a test client may take (connect, read, write) before the test fails.
HTTP_TIMEOUT_S = 180.0


def gradio_client(url: str, **kwargs: Any) -> Any:
    """A ``gradio_client.Client`` for ``url`` whose requests wait up to :data:`HTTP_TIMEOUT_S`."""
    from gradio_client import Client

    return Client(url, verbose=False, httpx_kwargs={"timeout": HTTP_TIMEOUT_S}, **kwargs)

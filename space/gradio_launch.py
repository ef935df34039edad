"""Launching a Gradio app so that no machine's speed can fail it: the one ``launch`` every app and test uses.

Gradio's ``Blocks.launch()`` ends with a reachability check of the local URL, ``networking.url_ok``: an HTTP HEAD
with a 3-second timeout, given up at the first timeout. On a busy machine (load average 10-15 on 2 cores) the
freshly started server can take longer than that to answer, and ``launch()`` then raises "When localhost is not
accessible, a shareable link must be created" although the server is up (issue 39: the suite failed so under load).

:func:`launch` skips that check (gradio's ``_frontend=False``, which guards nothing else in ``launch()``) and waits
for the server on its own terms: it asks the local URL until it answers, each request allowed
:data:`READY_TIMEOUT_S`, for as long as that bound lasts. By then ``launch()`` has already started the server and
awaited its start-up events with no time limit, so the wait normally ends at the first request.
"""

from __future__ import annotations

import inspect
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

#: How long a launched app may take to answer its first request (seconds): generous, so that only a server that
#: is really down fails, not a slow machine.
READY_TIMEOUT_S = 120.0


#: No proxy: the app is on this machine, whatever ``http_proxy`` says.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class NotReadyError(RuntimeError):
    """The launched server did not answer within :data:`READY_TIMEOUT_S`."""


def launch(demo: Any, *, ready_timeout_s: float = READY_TIMEOUT_S, **kwargs: Any) -> Any:
    """``demo.launch(**kwargs)`` without gradio's 3-second reachability check; waits until the app answers.

    Returns what ``launch()`` returns. With ``prevent_thread_lock=True`` the app has answered a request when this
    returns (a blocking launch only returns when the server stops).

    Raises:
        NotReadyError: the app did not answer within ``ready_timeout_s``.
    """
    if "_frontend" in inspect.signature(demo.launch).parameters:
        kwargs["_frontend"] = False
    else:  # a gradio without the switch: its own check stays (and the suite will say so under load)
        logger.warning("this gradio's launch() has no _frontend switch: its 3 s localhost check stays on")
    result = demo.launch(**kwargs)
    if kwargs.get("prevent_thread_lock"):
        wait_ready(str(demo.local_url), timeout_s=ready_timeout_s)
    return result


def wait_ready(url: str, *, timeout_s: float = READY_TIMEOUT_S, clock: Callable[[], float] = time.monotonic) -> None:
    """Ask ``url`` until it answers with any HTTP status, each attempt allowed what is left of ``timeout_s``.

    Raises:
        NotReadyError: no answer within ``timeout_s``.
    """
    end = clock() + timeout_s
    last: Exception | None = None
    while True:
        left = end - clock()
        if left <= 0:
            raise NotReadyError(f"the app at {url} did not answer within {timeout_s:g} s (last error: {last})")
        try:
            with _DIRECT.open(url, timeout=left):
                return
        except urllib.error.HTTPError:  # any status means the server answers (401 with auth, say)
            return
        except (urllib.error.URLError, OSError) as exc:
            last = exc
            time.sleep(min(0.2, max(0.0, end - clock())))

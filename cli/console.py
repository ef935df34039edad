"""The console's log lines: the project's INFO lines and every library's warnings (``-v`` shows everything),
each printed once, and the Hub client's retry warnings as one line per retry.

``huggingface_hub`` and ``datasets`` put a stderr handler of their own on their loggers and also let records reach
the root logger, so each of their warnings was printed twice (theirs is left to print it); and the Hub client logs
two warnings per retry (the error, then "Retrying in Ns [Retry k/5]"). A user without network saw four lines per
retry for about 25 s; now one, saying what to set.
"""

from __future__ import annotations

import logging
import sys

#: The Hub client's HTTP module: its retry warnings come in pairs (the error, then the back-off).
HUB_HTTP = "huggingface_hub.utils._http"


def project_info_only(record: logging.LogRecord) -> bool:
    """INFO lines of the project only, warnings and errors of all (lifted by ``-v``).

    Libraries log routine INFO lines (httpx: "HTTP Request: POST …" on every model call), which went into the
    progress bars and buried the run's own lines; what they warn about still shows.
    """
    return record.levelno >= logging.WARNING or record.name == "madqa" or record.name.startswith("madqa.")


def printed_by_its_library(record: logging.LogRecord) -> bool:
    """Whether a library handler of the record's own logger chain already printed it to the console."""
    logger: logging.Logger | None = logging.getLogger(record.name)
    while logger is not None and logger is not logging.root:
        if any(type(h) is logging.StreamHandler for h in logger.handlers):
            return True
        logger = logger.parent if logger.propagate else None
    return False


class OneLinePerRetry(logging.Filter):
    """On the Hub client's HTTP logger: joins "'ERROR' thrown while requesting METHOD URL" and "Retrying in Ns
    [Retry k/n]" into one line, which says what to set when the machine is offline."""

    def __init__(self) -> None:
        super().__init__()
        self._failure: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "thrown while requesting" in message:
            self._failure = message
            return False
        if message.startswith("Retrying in") and self._failure is not None:
            record.msg = "%s; %s (offline? set HF_HUB_OFFLINE=1)"
            record.args = (self._failure, message[0].lower() + message[1:].rstrip("."))
            self._failure = None
        return True


def console_handler(*, verbose: bool) -> logging.Handler:
    """The stderr handler of ``madqa``'s commands."""
    console = logging.StreamHandler(sys.stderr)
    if not verbose:
        console.addFilter(project_info_only)
    console.addFilter(lambda record: not printed_by_its_library(record))
    hub_http = logging.getLogger(HUB_HTTP)  # the logger object the Hub client gets when it is imported later
    if not any(isinstance(f, OneLinePerRetry) for f in hub_http.filters):
        hub_http.addFilter(OneLinePerRetry())
    return console

"""A visitor who submits a results file to a Space and then goes away (the test kills this process).

``python gone_client.py URL FILE``: submits FILE through ``gradio_client`` and prints ``processing`` once the Space
has started on it, then waits to be killed.
"""

from __future__ import annotations

import sys
import time

from gradio_client import handle_file
from gradio_client.utils import Status

from helpers.clients import gradio_client

FORM = ["gone sys", "tester", "agent", "model", "gone@example.org", "none", "none", "1 CPU-minute"]
#: Longest wait for the Space to start on the file (the test kills this process as soon as it has).
LIMIT_S = 600.0


def main(url: str, path: str) -> None:
    job = gradio_client(url).submit(handle_file(path), *FORM, api_name="/submit")
    deadline = time.monotonic() + LIMIT_S
    while job.status().code != Status.PROCESSING:
        if time.monotonic() > deadline:
            raise SystemExit("the Space never started on the file")
        time.sleep(0.01)
    print("processing", flush=True)
    time.sleep(LIMIT_S)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

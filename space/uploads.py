"""What the Space accepts on ``/gradio_api/upload`` and what happens to an uploaded file afterwards.

One home for the gate: :mod:`madqa.metric.upload_gate` (the metric widget runs the same gate). The Space adds, in
this order:

* :class:`UploadGate`, an ASGI middleware passed to ``Blocks.launch(app_kwargs={"middleware": ...})``: an upload
  must carry a ``Content-Length`` within the size cap, and every part of the body must be a file of the field
  ``files`` whose sent name *and* the name gradio will store (parsed as gradio's own multipart parser does) end in
  ``.jsonl`` or ``.json``; an ambiguous body (``filename*``, a repeated or mixed-case parameter, two
  ``Content-Disposition`` headers in a part, another part header, an unfinished body) is refused, and so is a
  name that starts with a dot or holds a percent escape (``.hidden.jsonl``, ``..%2F..%2Fevil.jsonl``: gradio
  would store it, then refuse the dotfile to the submit handler with a bare "Error"; :func:`check_names`).
  Anything else is answered 400/411/413/415 before gradio writes a byte to disk.
* :func:`discard_upload`: the submit handler deletes the server's copy after scoring, accepted or rejected.
* ``gr.Blocks(delete_cache=...)``: gradio deletes uploads that were never submitted once they are older than the
  configured age (and all of them when the server stops).

Not possible with gradio's own settings: a per-client upload quota. Uploads are not rate limited per client; the
gate reads at most ``max_active`` bodies at once (503 otherwise), and the size cap, the type gate and the clean-up
bound what one request can leave behind.
"""

from __future__ import annotations

from madqa.metric.upload_gate import (
    RESULTS_SUFFIXES,
    UploadGate,
    UploadRefused,
    check_names,
    discard_upload,
    stored_names,
)

__all__ = ["RESULTS_SUFFIXES", "UploadGate", "UploadRefused", "check_names", "discard_upload", "stored_names"]

"""What the Space accepts on ``/gradio_api/upload`` and what happens to an uploaded file afterwards.

gradio 6.31 stores any file posted to ``/gradio_api/upload`` (its only server-side limit is ``max_file_size``);
``gr.File(file_types=...)`` is checked in the browser and again when an *event* uses the file, not at upload.
So the Space adds, in this order:

* :class:`UploadGate`, an ASGI middleware passed to ``Blocks.launch(app_kwargs={"middleware": ...})``: an upload
  must carry a ``Content-Length`` within the size cap, and every file part a name ending in ``.jsonl`` or
  ``.json``; anything else is answered 411/413/415 before gradio writes a byte to disk. The part *headers* are
  checked, not the content: the content is the scorer's business (it must be UTF-8 JSONL anyway).
* :func:`discard_upload`: the submit handler deletes the server's copy after scoring, accepted or rejected.
* ``gr.Blocks(delete_cache=...)``: gradio deletes uploads that were never submitted once they are older than the
  configured age (and all of them when the server stops).

Not possible with gradio's own settings: a per-client upload quota. Uploads are not rate limited per client; the
gate reads at most ``max_active`` bodies at once (503 otherwise), and the size cap, the type gate and the clean-up
bound what one request can leave behind.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: The results file types (lower-case suffixes).
RESULTS_SUFFIXES: tuple[str, ...] = (".jsonl", ".json")
_SLACK = 64 * 1024  # multipart framing around the file's bytes
_FILENAME = re.compile(rb'filename\*?=\s*(?:"([^"\r\n]*)"|([^;\r\n]*))', re.I)
_BOUNDARY = re.compile(rb'boundary="?([^";,\s]+)"?', re.I)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def upload_names(body: bytes, content_type: bytes) -> list[str] | None:
    """The file names of a multipart body's parts (``None`` when it is not multipart or a part has no name)."""
    found = _BOUNDARY.search(content_type)
    if not content_type.lower().startswith(b"multipart/form-data") or found is None:
        return None
    names = []
    for part in body.split(b"--" + found.group(1))[1:]:
        if part.startswith(b"--"):  # the closing delimiter
            break
        headers = part.split(b"\r\n\r\n", 1)[0]
        match = _FILENAME.search(headers)
        if match is None:
            return None
        raw = match.group(1) if match.group(1) is not None else match.group(2)
        names.append(raw.decode("utf-8", "replace").strip().split("''")[-1])
    return names or None


class UploadGate:
    """ASGI middleware: ``POST …/upload`` only for results files (by name) within ``max_bytes``.

    Args:
        app: the wrapped ASGI app.
        max_bytes: the upload size cap (the same as ``launch(max_file_size=...)``).
        suffixes: allowed file-name suffixes, lower case.
        max_active: uploads read at once; more are answered 503. The gate holds a body in memory until its part
            names are checked, so this bounds its memory to ``max_active`` x ``max_bytes``.
    """

    def __init__(self, app: Any, max_bytes: int, suffixes: tuple[str, ...] = RESULTS_SUFFIXES,
                 max_active: int = 4) -> None:  # fmt: skip
        self.app, self.max_bytes, self.suffixes, self.max_active = app, max_bytes, suffixes, max_active
        self.active = 0  # one event loop: a plain counter is enough

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or not scope.get("path", "").endswith("/upload"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length", b"")
        if not length.isdigit():
            await _refuse(send, 411, "an upload needs a Content-Length")
            return
        if int(length) > self.max_bytes + _SLACK:
            await _refuse(send, 413, f"File size exceeded maximum allowed size of {self.max_bytes} bytes.")
            return
        if self.active >= self.max_active:
            await _refuse(send, 503, "the Space is receiving other uploads; try again in a moment")
            return
        self.active += 1
        try:
            body = await self._read(receive, int(length))
        finally:
            self.active -= 1
        if body is None:
            return  # the client went away
        if len(body) > int(length):
            await _refuse(send, 400, "the upload is longer than its Content-Length")
            return
        names = upload_names(body, headers.get(b"content-type", b""))
        if not names or not all(n.lower().endswith(self.suffixes) for n in names):
            logger.info("refused an upload of %r", names)
            await _refuse(send, 415, f"only results files ({', '.join(self.suffixes)}) can be uploaded")
            return
        sent = False

        async def replay() -> MutableMapping[str, Any]:
            nonlocal sent
            if sent:
                return await receive()  # later messages (e.g. the disconnect) come from the client
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    @staticmethod
    async def _read(receive: Receive, length: int) -> bytes | None:
        """The request body, cut short once it is longer than ``length``; ``None`` if the client went away."""
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > length:
                break
        return b"".join(chunks)


async def _refuse(send: Send, status: int, text: str) -> None:
    data = text.encode("utf-8")
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def discard_upload(path: str | os.PathLike[str] | None, upload_dir: str | os.PathLike[str] | None = None) -> bool:
    """Delete the server's copy of an uploaded file (and its now empty folder); returns whether it was deleted.

    Only files under gradio's upload folder (``GRADIO_TEMP_DIR``, default ``<tmp>/gradio``) are touched, so a
    path passed by a caller that is not an upload is never deleted.
    """
    if not path:
        return False
    if upload_dir is None:
        from gradio.utils import get_upload_folder

        upload_dir = get_upload_folder()
    root = Path(upload_dir).resolve()
    file = Path(path).resolve()
    if root not in file.parents or not file.is_file():
        return False
    try:
        file.unlink()
        if file.parent != root and not any(file.parent.iterdir()):
            file.parent.rmdir()
    except OSError as exc:  # another request may share the folder (same content): leave it to delete_cache
        logger.debug("could not delete the upload %s: %s", file.name, exc)
    return True

"""What a Gradio app of MADQA accepts on ``/gradio_api/upload``, judged by the file names gradio will store.

gradio 6.31 stores any file posted to ``/gradio_api/upload`` (its only server-side limit is ``max_file_size``);
``gr.File(file_types=...)`` is checked in the browser and again when an *event* uses the file, not at upload.
:class:`UploadGate`, an ASGI middleware (``Blocks.launch(app_kwargs={"middleware": ...})``), reads the whole body
first (within the size cap) and parses it with the parser gradio itself uses, ``python_multipart``'s
``MultipartParser`` and ``parse_options_header``, with gradio's callbacks' rules: the header names lower-cased,
the *last* ``Content-Disposition`` of a part wins, its ``filename`` (the last one; ``filename*`` is ignored) is
decoded in the request's charset, and the stored name is ``strip_invalid_filename_characters(Path(name).name)``.

Stricter than gradio, every form a reader could take two ways is refused (415) instead of guessed: a
``filename*`` or any other starred parameter, a parameter given twice or in another case (``FileName``), more than
one ``Content-Disposition`` in a part, a part header other than ``Content-Disposition`` and ``Content-Type``, a
part that is not a file of the field ``files`` (gradio writes every file part to its upload folder, whatever its
field, and keeps only those of ``files``), a body that stops before its closing delimiter (gradio keeps the
unfinished part's file), and a charset other than UTF-8. Both the sent and the stored name must end in an allowed
suffix. The Space (``madqa.space.uploads``) and the metric widget (``app.py``) use this module.

Names gradio stores but then will not hand to an event are refused here too, before anything is written (issue
39): a name starting with a dot (``.hidden.jsonl``, or ``..%2F..%2Fevil.jsonl``, which gradio keeps as it is) is a
dotfile, which gradio's ``processing_utils._check_allowed`` refuses to move to its cache when the upload folder is
under the working directory (``InvalidPathError``: the visitor saw a bare "Error" and the file stayed in the cache
until the hourly sweep). A name holding a percent escape (``%2F``, ``%5C``, ``%2e``, ``%25``…) is refused
whatever it encodes: a reader could take it encoded or decoded, and an encoded separator is never a file name.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

logger = logging.getLogger(__name__)

#: The results file types (lower-case suffixes).
RESULTS_SUFFIXES: tuple[str, ...] = (".jsonl", ".json")
#: The multipart field gradio's upload route stores (``form.getlist("files")``).
FILES_FIELD = "files"
_SLACK = 64 * 1024  # multipart framing around the file's bytes
_PART_HEADERS = frozenset({b"content-disposition", b"content-type"})
_PARAM_KEY = re.compile(r";\s*([^=;\s]*)\s*=")  # every key=, also inside quotes: a quoted "; x=" is refused too
_UTF8 = frozenset({"utf-8", "utf8"})
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class UploadRefused(ValueError):
    """An upload the gate refuses; ``str()`` says why (sent to the client)."""


def _plain_params(header: str, what: str) -> None:
    """Refuse a header whose parameters a reader could take two ways (starred, repeated, not lower case)."""
    keys = _PARAM_KEY.findall(header)
    if any("*" in key for key in keys):
        raise UploadRefused(f"{what}: extended parameters (such as filename*) are not accepted")
    if len({key.lower() for key in keys}) != len(keys):
        raise UploadRefused(f"{what}: a parameter is given twice")
    if any(key != key.lower() for key in keys):
        raise UploadRefused(f"{what}: parameter names must be lower case")


def _decode(raw: bytes, charset: str) -> str:
    """Decode as gradio's ``_user_safe_decode`` does: the charset, else latin-1."""
    try:
        return raw.decode(charset)
    except (UnicodeDecodeError, LookupError):
        return raw.decode("latin-1")


def _stored_name(headers: list[tuple[bytes, bytes]], charset: str) -> tuple[str, str]:
    """``(sent name, name gradio stores)`` of one part, or :class:`UploadRefused`."""
    from gradio_client.utils import strip_invalid_filename_characters
    from python_multipart.multipart import parse_options_header

    names = [name for name, _ in headers]
    if names.count(b"content-disposition") != 1:
        raise UploadRefused(f"a part has {names.count(b'content-disposition')} Content-Disposition headers")
    if names.count(b"content-type") > 1 or not set(names) <= _PART_HEADERS:
        raise UploadRefused("a part may carry only one Content-Disposition and one Content-Type header")
    raw = next(value for name, value in headers if name == b"content-disposition").decode("latin-1")
    _plain_params(raw, "Content-Disposition")
    kind, options = parse_options_header(raw)
    if kind != b"form-data" or set(options) != {b"name", b"filename"}:
        raise UploadRefused("each part must be form-data with a name and a filename (and nothing else)")
    if _decode(options[b"name"], charset) != FILES_FIELD:
        raise UploadRefused(f"each part must be a file of the field {FILES_FIELD!r}")
    sent = _decode(options[b"filename"], charset)
    return sent, strip_invalid_filename_characters(Path(sent).name)


def stored_names(body: bytes, content_type: bytes | str) -> list[tuple[str, str]]:
    """The files gradio's upload route would store from this body: ``(sent name, stored name)`` per part.

    Args:
        body: the whole request body.
        content_type: the request's ``Content-Type`` header.

    Returns:
        One pair per part, in body order (at least one).

    Raises:
        UploadRefused: not multipart, malformed, unfinished, ambiguous, or a part that is not a file of ``files``.
    """
    from python_multipart.exceptions import MultipartParseError
    from python_multipart.multipart import MultipartParser, parse_options_header

    header = content_type.decode("latin-1") if isinstance(content_type, bytes) else content_type
    kind, params = parse_options_header(header)
    if kind != b"multipart/form-data" or b"boundary" not in params:
        raise UploadRefused("an upload must be multipart/form-data with a boundary")
    _plain_params(header, "Content-Type")
    charset = params.get(b"charset", b"utf-8").decode("latin-1")
    if charset.lower() not in _UTF8:
        raise UploadRefused("an upload must be UTF-8")
    parts: list[list[tuple[bytes, bytes]]] = []
    field, value = bytearray(), bytearray()
    state = {"open": 0, "ended": False}

    def on_part_begin() -> None:
        parts.append([])
        state["open"] += 1

    def on_header_end() -> None:
        parts[-1].append((bytes(field).lower(), bytes(value)))
        field.clear()
        value.clear()

    callbacks: MultipartCallbacks = {
        "on_part_begin": on_part_begin,
        "on_part_end": lambda: state.update(open=state["open"] - 1),
        "on_header_field": lambda data, start, end: field.extend(data[start:end]),
        "on_header_value": lambda data, start, end: value.extend(data[start:end]),
        "on_header_end": on_header_end,
        "on_end": lambda: state.update(ended=True),
    }
    try:
        parser = MultipartParser(params[b"boundary"], callbacks)
        parser.write(body)
        parser.finalize()
    except (MultipartParseError, ValueError) as exc:
        raise UploadRefused(f"the upload is not valid multipart: {exc}") from None
    if not parts or state["open"] or not state["ended"]:
        raise UploadRefused("the upload holds no file or stops before its closing delimiter")
    return [_stored_name(headers, charset) for headers in parts]


def check_names(names: list[tuple[str, str]], suffixes: tuple[str, ...] = RESULTS_SUFFIXES) -> None:
    """Refuse a part whose name gradio would store but should not (see the module docstring).

    Args:
        names: ``(sent name, stored name)`` per part, as :func:`stored_names` gives them.
        suffixes: allowed file-name suffixes, lower case.

    Raises:
        UploadRefused: a name that starts with a dot, holds a percent escape, or does not end in a suffix; the
            message names the file and what to change.
    """
    for sent, stored in names:
        shown = repr(sent if len(sent) <= 80 else sent[:77] + "...")
        if Path(sent).name.startswith(".") or stored.startswith("."):
            raise UploadRefused(
                f"the file name {shown} starts with a dot (a hidden file): rename it, for example "
                f"to results{Path(stored).suffix or '.jsonl'}"
            )
        escape = _PERCENT_ESCAPE.search(sent)
        if escape:
            raise UploadRefused(
                f"the file name {shown} holds a percent-encoded character ({escape.group()}): rename it without '%'"
            )
        if not (sent.lower().endswith(suffixes) and stored.lower().endswith(suffixes)):
            raise UploadRefused(f"only results files ({', '.join(suffixes)}) can be uploaded")


class UploadGate:
    """ASGI middleware: ``POST …/upload`` only for results files (by the names gradio stores) within ``max_bytes``.

    Anything else is answered 411 (no ``Content-Length``), 413 (too big), 415 (see the module docstring and
    :func:`check_names`) or 400 before gradio writes a byte to disk. The part *headers* are checked, not the
    content: the content is the scorer's business. ``POST …/process_recording`` (gradio's screen-recording route,
    which keeps a copy of each posted video in the temporary folder) is answered 404: no MADQA app records the
    screen.

    Args:
        app: the wrapped ASGI app.
        max_bytes: the upload size cap (the same as ``launch(max_file_size=...)``).
        suffixes: allowed file-name suffixes, lower case.
        max_active: uploads read at once; more are answered 503. The gate holds a body in memory until its part
            names are checked, so this bounds its memory to ``max_active`` x ``max_bytes``.
    """

    def __init__(
        self, app: Any, max_bytes: int, suffixes: tuple[str, ...] = RESULTS_SUFFIXES, max_active: int = 4
    ) -> None:
        self.app, self.max_bytes, self.suffixes, self.max_active = app, max_bytes, suffixes, max_active
        self.active = 0  # one event loop: a plain counter is enough

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check an upload, then pass it (replayed from memory) or the other requests on to the app."""
        path = scope.get("path", "") if scope["type"] == "http" and scope.get("method") == "POST" else ""
        if path.endswith("/process_recording"):
            await _refuse(send, 404, "Not Found")
            return
        if not path.endswith("/upload"):
            await self.app(scope, receive, send)
            return
        raw = list(scope.get("headers") or [])
        headers = dict(raw)
        if sum(k == b"content-length" for k, _ in raw) > 1:
            await _refuse(send, 400, "an upload has one Content-Length")
            return
        if sum(k == b"content-type" for k, _ in raw) > 1:  # gradio reads the first, a dict the last
            await _refuse(send, 415, "an upload has one Content-Type")
            return
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
        try:
            check_names(stored_names(body, headers.get(b"content-type", b"")), self.suffixes)
        except UploadRefused as exc:
            logger.info("refused an upload: %s", exc)
            await _refuse(send, 415, str(exc))
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
    """Delete the server's copy of an uploaded file (and its now empty folder).

    Only files under gradio's upload folder (``GRADIO_TEMP_DIR``, default ``<tmp>/gradio``) are touched, so a
    path passed by a caller that is not an upload is never deleted.

    Args:
        path: the uploaded file's path on the server.
        upload_dir: gradio's upload folder (default: ``gradio.utils.get_upload_folder()``).

    Returns:
        Whether the path was an upload (then it is deleted, or left to ``delete_cache`` if another request
        shares it).
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

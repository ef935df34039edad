"""A submission's traces link: which URLs the form accepts, and how the board writes one (pure, no Hub contact).

A submitter may name where the run's traces are (``madqa export traces`` + ``madqa publish traces``): a Hub
dataset or a Hub storage bucket. The value is stored with the submission and shown as a link on the board, so it
is checked the way an attacker would try it. Accepted, nothing else:

* ``https://huggingface.co/datasets/OWNER/NAME`` (or ``https://hf.co/datasets/...``), optionally followed by a
  path inside the repo (``/tree/main/bm25``, ``/viewer``…);
* ``https://huggingface.co/buckets/OWNER/NAME`` (or ``hf.co``), the page of a storage bucket (huggingface/hub-docs
  ``docs/hub/storage-buckets.md``: "Bucket pages are available at ``https://huggingface.co/buckets/<owner>/
  <bucket-name>``"), optionally followed by a path inside it.

Refused: any other scheme (``http:``, ``javascript:``, ``data:``, ``hf://``…) or host (``huggingface.co.evil.com``,
``evil.com/huggingface.co``), a user part or a port (``https://huggingface.co@evil.com``, ``:443``), anything not
plain ASCII (look-alike hosts such as Cyrillic ``һuggingface.co``, full-width letters, IDN), backslashes,
whitespace or control characters anywhere (a newline cannot smuggle a second line), percent escapes (``%2e%2e``,
``%40``), ``.``/``..`` path segments, a query or a fragment, and values over :data:`MAX_TRACES_CHARS`. The whole
value must match one strict pattern: nothing is parsed leniently and then trusted. Scheme and host are compared
case-insensitively and stored in lower case; a trailing ``/`` is dropped.

The Space never fetches the URL. :func:`traces_anchor` writes it HTML-escaped, with ``target="_blank"`` and
``rel="nofollow noopener noreferrer"``, and checks it again first: a stored value that fails the check today (a
row restored from an old mirror file) is shown as nothing, never as a link.
"""

from __future__ import annotations

import html
import re
from typing import Any

#: The form field's name (the submissions table's column and the mirror files' header key).
TRACES_FIELD = "traces"
#: The field's label on the form and in refusals.
TRACES_LABEL = "Traces (Hub dataset or bucket URL)"
#: The form field's placeholder (the field is optional).
TRACES_PLACEHOLDER = "optional: https://huggingface.co/datasets/OWNER/NAME (madqa publish traces)"
#: Longest accepted value.
MAX_TRACES_CHARS = 300
#: Text of the link on the board.
LINK_TEXT = "traces"
#: The link's ``rel``: no ranking credit for the target, no ``window.opener`` for it, no referrer sent.
LINK_REL = "nofollow noopener noreferrer"
#: Hosts of the Hub a link may point to.
HOSTS: tuple[str, ...] = ("huggingface.co", "hf.co")
#: Kinds of Hub storage traces can live in (the URL's first path segment).
KINDS: tuple[str, ...] = ("datasets", "buckets")

# A Hub owner or repo name: letters, digits, "-", "_", "." (huggingface_hub's repo-id rule), starting and ending
# with a letter or digit, at most 96 characters. A path segment inside the repo: the URL's unreserved characters.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_SEGMENT = r"[A-Za-z0-9._~-]+"
_PATTERN = re.compile(
    rf"(?P<scheme>https)://(?P<host>{'|'.join(map(re.escape, HOSTS))})/(?P<kind>{'|'.join(KINDS)})"
    rf"/(?P<owner>{_NAME})/(?P<name>{_NAME})(?P<path>(?:/{_SEGMENT})*)/?",
    re.IGNORECASE,
)


class TracesLinkError(ValueError):
    """A refused traces URL; ``str()`` is the one-line message for the submitter (it names the field)."""


def _refuse(why: str) -> TracesLinkError:
    return TracesLinkError(f"form: the field '{TRACES_LABEL}' {why}")


def check_traces_url(value: Any) -> str:
    """The traces URL to store: ``""`` when none is given, else the checked URL (scheme and host in lower case).

    Raises:
        TracesLinkError: the value is not a Hub dataset or bucket URL of the accepted form (the module docstring).
    """
    text = "" if value is None else str(value)
    if not text.strip():
        return ""
    if len(text) > MAX_TRACES_CHARS:
        raise _refuse(f"is longer than {MAX_TRACES_CHARS} characters")
    if not text.isascii():
        raise _refuse("must be plain ASCII (no look-alike or non-Latin letters)")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        raise _refuse("must be one URL with no spaces, tabs or line breaks")
    if "\\" in text:
        raise _refuse("must not contain a backslash")
    match = _PATTERN.fullmatch(text)
    if match is None:
        raise _refuse(
            "must be a Hugging Face dataset or bucket URL: https://huggingface.co/datasets/OWNER/NAME or "
            "https://huggingface.co/buckets/OWNER/NAME (hf.co too), with no query, fragment, user or port"
        )
    if ".." in text or "/./" in f"{match['path']}/" or "--" in match["owner"] + "/" + match["name"]:
        raise _refuse("must not contain '.' or '..' path segments, nor '--' in the owner or name")
    host, kind = match["host"].lower(), match["kind"].lower()
    return f"https://{host}/{kind}/{match['owner']}/{match['name']}{match['path']}"


def is_traces_url(value: Any) -> bool:
    """Whether ``value`` is a non-empty traces URL :func:`check_traces_url` accepts."""
    try:
        return bool(check_traces_url(value))
    except TracesLinkError:
        return False


def traces_label(value: Any) -> str:
    """What a checked traces URL points to, for people: ``dataset OWNER/NAME/path`` or ``bucket OWNER/NAME``."""
    url = check_traces_url(value)
    kind, _, rest = url.split("/", 3)[-1].partition("/")
    return f"{kind[:-1]} {rest}" if url else ""


def _entities(text: str) -> str:
    """``text`` for HTML inside Markdown: every character but letters, digits, spaces and ``/.-`` as an entity (so
    neither HTML nor Markdown reads anything in it)."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in " /.-") else f"&#{ord(ch)};" for ch in text)


def traces_anchor(value: Any, text: str = LINK_TEXT) -> str:
    """The HTML link to a stored traces URL (new tab, :data:`LINK_REL`, escaped), ``""`` when none or refused."""
    if not is_traces_url(value):
        return ""
    url = check_traces_url(value)
    return f'<a href="{html.escape(url, quote=True)}" target="_blank" rel="{LINK_REL}">{_entities(text)}</a>'

"""Who submits, under which names, and how often: form cleaning, reserved names, identity keys, the rate policy.

Decisions (issue #10):

* **Names** are NFKC-normalised (full-width ``Ｂａｓｅｌｉｎｅ`` becomes ``Baseline``) and their whitespace collapsed.
  Invisible characters are refused in every field: Unicode format characters (category ``Cf``: zero-width
  spaces and joiners, the bidi controls U+202A–U+202E and U+2066–U+2069, U+FEFF…), line/paragraph separators,
  private-use, surrogate and unassigned code points, and the few invisible *letters* (Hangul fillers, braille
  blank). The message names the code point and the field.
* **Reserved names** (issues 23, 39): the maintainers' baseline system names and submitter name, and anything
  that starts with ``baseline`` (systems) or ``madqa``/``maintainer``/``baseline`` (submitters), are refused for
  user submissions. Names are compared by their confusable skeletons (:mod:`.confusables`): NFKC, then the UTS #39
  skeleton of Unicode's ``confusables.txt`` with the Latin look-alikes it keeps apart folded in (small capitals,
  letters with a stroke or hook, ``ı ɩ ӏ`` read as ``i`` or ``l``, ``ǫ`` as ``o`` or ``q``), with case folded
  before, after, and to upper case, then only letters and digits kept (punctuation, spaces, marks dropped). So
  ``BaseIine`` (capital I), ``Bаseline`` (Cyrillic а), ``Baseӏine`` (palochka), ``ʙaseline`` and ``ᴍᴀᴅǫᴀ``
  (small capitals), full-width letters, ``fl00r``, ``Base1ine``, ``madqa_baselines``, ``m a d q a`` and
  ``Baseline:no answer(floor)`` are all the maintainers'. The prefixes match without a word boundary
  (``madqafan`` is refused too). Every row also shows its origin on the board, so a lookalike that slips through
  still reads "self-reported".
* **Identity** (the rate-limit and idempotency key): the logged-in Hub user on a Space (login is required there);
  locally the *direct* peer address. Forwarded headers are never read here; uvicorn rewrites the peer from
  ``X-Forwarded-For`` only for the proxies listed in ``MADQA_SPACE_TRUSTED_PROXIES`` (see ``app.launch``).
* **Rate limit**: at most ``limit`` *accepted* submissions per identity in a sliding window, persisted in the
  database (table ``accepted_events``) and checked twice: before scoring (cheap refusal) and again inside the
  transaction that stores the submission, so concurrent submissions can never exceed it. Rejected files never
  count. The clock is injectable (tests use a fake one).
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .confusables import meets, name_keys
from .storage import FORM_FIELDS, RateRule
from .traces_link import TRACES_FIELD, TracesLinkError, check_traces_url


class SubmissionError(ValueError):
    """A rejected submission; ``str()`` is the user-facing message."""


#: Form fields a submitter must fill in, with their labels (``submitter`` may come from the HF login).
REQUIRED_FIELDS: dict[str, str] = {
    "system": "system name",
    "model": "model",
    "agent": "agent",
    "contact": "contact",
    "models_used": "models used",
    "training_data": "training-data statement",
    "compute": "compute budget",
}
#: Short name fields: NFKC + whitespace collapsed (free-text fields keep their tabs and newlines).
NAME_FIELDS: tuple[str, ...] = ("system", "submitter", "agent", "model")
MAX_FIELD_CHARS = 300
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_REFUSED_CATEGORIES = {
    "Cf": "invisible formatting",
    "Zl": "line separator",
    "Zp": "paragraph separator",
    "Co": "private-use",
    "Cs": "surrogate",
    "Cn": "unassigned",
}
#: Letters that render as nothing (category Lo/So, so not caught by the categories above).
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")

#: System names of the maintainers' baselines (``seed.baseline_runs`` uses exactly these).
BASELINE_SYSTEMS: tuple[str, ...] = (
    "Baseline: no answer (floor)",
    "Baseline: BM25 top-1 page, no answer",
    "Baseline: BM25 top-3 pages, no answer",
    "Baseline: BM25 top-1 page + dev-majority answer",
)
#: Submitter name of the maintainers' rows.
MAINTAINER_SUBMITTER = "madqa baselines"
#: Per form field: the reserved names, and the prefixes that reserve every name starting with them.
_RESERVED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "system": (BASELINE_SYSTEMS, ("baseline",)),
    "submitter": ((MAINTAINER_SUBMITTER,), ("madqa", "maintainer", "baseline")),
}


def is_reserved(field: str, value: str) -> bool:
    """Whether ``value`` is reserved for the maintainers in form field ``field`` (``system`` or ``submitter``).

    Reserved: confusable (:mod:`.confusables`) with one of the field's reserved names, or starting with a
    skeleton of one of its reserved prefixes.
    """
    if field not in _RESERVED:
        return False
    names, prefixes = _RESERVED[field]
    keys = name_keys(value)
    return any(meets(keys, name_keys(name)) for name in names) or any(
        meets(keys, name_keys(prefix), prefix=True) for prefix in prefixes
    )


def _refused_char(text: str) -> str | None:
    for ch in text:
        what = _REFUSED_CATEGORIES.get(unicodedata.category(ch))
        if what is None and ch in _INVISIBLE_LETTERS:
            what = "invisible"
        if what is not None:
            return f"{what} character U+{ord(ch):04X}"
    return None


def _plain_text(value: Any, what: str) -> str:
    """NFKC text without control or invisible characters (``what`` names the field in the refusal)."""
    text = unicodedata.normalize("NFKC", "" if value is None else str(value))
    if _CONTROL.search(text):
        raise SubmissionError(f"{what} contains control characters")
    refused = _refused_char(text)
    if refused:
        raise SubmissionError(f"{what} contains the {refused}; type it plainly")
    return text


def clean_name(value: Any, what: str, *, max_chars: int = 60) -> str:
    """One display name checked as the form's names are (normalised, plain, not a maintainers' name).

    Raises:
        SubmissionError: empty, too long, control or invisible characters, or reserved.
    """
    text = " ".join(_plain_text(value, what).split())
    if not text:
        raise SubmissionError(f"{what} is required")
    if len(text) > max_chars:
        raise SubmissionError(f"{what} is longer than {max_chars} characters")
    if is_reserved("system", text) or is_reserved("submitter", text):
        raise SubmissionError(f"{what} {text!r} is reserved for the maintainers; choose another name")
    return text


def clean_form(form: Mapping[str, Any], *, maintainer: bool = False) -> dict[str, str]:
    """Normalised form values.

    Args:
        form: the raw form (missing optional fields become ``""``, an empty submitter ``anonymous``; the optional
            ``traces`` URL is checked by :func:`.traces_link.check_traces_url`).
        maintainer: allow the reserved names (seed baselines and maintainers' own calls only).

    Raises:
        SubmissionError: a required field is empty, a value is too long, holds control or invisible characters,
            or uses a reserved name; a traces URL that is not a Hub dataset or bucket URL.
    """
    out: dict[str, str] = {}
    for key in FORM_FIELDS:
        value = form.get(key)
        label = REQUIRED_FIELDS.get(key, key)
        text = _plain_text(value, f"form: the field '{label}'")
        text = " ".join(text.split()) if key in NAME_FIELDS else text.strip()
        if key in REQUIRED_FIELDS and not text:
            raise SubmissionError(f"form: the field '{label}' is required")
        if len(text) > MAX_FIELD_CHARS:
            raise SubmissionError(f"form: the field '{label}' is longer than {MAX_FIELD_CHARS} characters")
        out[key] = text
    try:  # optional; checked as a link, never normalised (NFKC would turn full-width letters into a Hub URL)
        out[TRACES_FIELD] = check_traces_url(form.get(TRACES_FIELD))
    except TracesLinkError as exc:
        raise SubmissionError(str(exc)) from None
    out["submitter"] = out["submitter"] or "anonymous"
    if not maintainer:
        for key in ("system", "submitter"):
            if is_reserved(key, out[key]):
                raise SubmissionError(
                    f"form: the {REQUIRED_FIELDS.get(key, key)} {out[key]!r} is reserved for the "
                    "maintainers' baselines; choose another name"
                )
    return out


def peer_key(request: Any) -> str:
    """``ip:<address>`` of the request's client as the server sees it (never a header), ``ip:unknown`` if none."""
    host = getattr(getattr(request, "client", None), "host", None) if request is not None else None
    return f"ip:{host or 'unknown'}"


def identity_key(request: Any, profile: Any, *, login_required: bool = False) -> str:
    """Who is submitting: ``hf:<user>`` when logged in to the Hub, else the direct peer address.

    Raises:
        SubmissionError: ``login_required`` (on a Space) and nobody is logged in.
    """
    username = getattr(profile, "username", None) if profile is not None else None
    if username:
        return f"hf:{username}"
    if login_required:
        raise SubmissionError(
            "log in with your Hugging Face account (the button at the top of the page) to "
            "submit: submissions are counted per Hub user"
        )
    return peer_key(request)


@dataclass
class RateLimiter:
    """At most ``limit`` *accepted* submissions per identity within ``window_s`` seconds (``limit`` 0 disables it).

    The events live in the database (see :meth:`SubmissionStore.add`); this object only holds the policy and the
    clock (``time.time`` by default: wall time, because the events outlive the process).
    """

    limit: int
    window_s: float
    clock: Callable[[], float] = time.time

    def rule(self, key: str) -> RateRule:
        """The rule the store enforces for ``key`` at this instant."""
        return RateRule(key=key, limit=self.limit, window_s=float(self.window_s), now=float(self.clock()))

    @staticmethod
    def message(limit: int, window_s: float, wait_s: float) -> str:
        """The user-facing refusal."""
        return (
            f"rate limit: at most {limit} accepted submissions per {int(window_s)} s; "
            f"try again in {max(1, int(wait_s + 0.999))} s (nothing was stored)"
        )

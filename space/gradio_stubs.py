"""Importing gradio without its type-stub writer: about 40 % of gradio's import time, a second of the Space's start.

gradio 6 defines every component class through ``gradio.component_meta.ComponentMeta``, whose ``__new__`` calls
``create_or_modify_pyi``: for each of its ~80 components it reads the component's source file, parses it with
``ast``, renders the class's event signatures with jinja2 and rewrites the ``.pyi`` stub beside the source when it
differs (failures ignored). That is a development aid for editors and type checkers; it changes nothing of what
the app does, yet it ran at every start of the Space, in every process that imports gradio (issue 47: 1.0-1.1 s of
the 2.5 s CPU that ``import gradio`` took on the 2-core machine, and writes into site-packages).

:func:`skip_stub_writing` (called by :mod:`madqa.space`'s ``__init__``, so before any Space module imports gradio)
puts a one-shot import hook in front of ``sys.meta_path``: when ``gradio.component_meta`` is executed, its
``create_or_modify_pyi`` is replaced by a function that does nothing, before gradio defines its first component.
Where gradio is already imported, or has no such function, nothing changes.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

#: The gradio module that holds the stub writer, and the writer's name in it.
COMPONENT_META, STUB_WRITER = "gradio.component_meta", "create_or_modify_pyi"


def _write_no_stub(*_args: Any, **_kwargs: Any) -> None:
    """Stands in for gradio's ``create_or_modify_pyi``: no ``.pyi`` file is read or written."""


class _SkipStubWriting(importlib.abc.MetaPathFinder):
    """Finds ``gradio.component_meta`` as the normal path finder does, and patches it once executed."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != COMPONENT_META:
            return None
        remove_hook()  # one module, once: every later import is left alone
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec  # another layout of gradio: imported as it is
        execute = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            if callable(getattr(module, STUB_WRITER, None)):
                setattr(module, STUB_WRITER, _write_no_stub)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def skip_stub_writing() -> bool:
    """Install the hook unless gradio's component module is imported already; whether it is installed now."""
    if COMPONENT_META in sys.modules:
        return False
    if not any(isinstance(f, _SkipStubWriting) for f in sys.meta_path):
        sys.meta_path.insert(0, _SkipStubWriting())
    return True


def remove_hook() -> None:
    """Take the hook out of ``sys.meta_path`` (it removes itself at its first use)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _SkipStubWriting)]

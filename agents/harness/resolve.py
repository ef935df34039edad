"""The one resolver of ``MODULE:NAME`` targets: ``py:`` model specs, ``--judge py:…`` and the agent registry.

>>> load_object("json:dumps").__name__
'dumps'
>>> load_object("json:nope")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: cannot import 'nope' from 'json' (module 'json' has no attribute 'nope')
"""

from __future__ import annotations

import importlib
from typing import Any


def load_object(target: str) -> Any:
    """The object ``NAME`` of the importable module ``MODULE``, from ``"MODULE:NAME"`` (a ``py:`` prefix is dropped).

    Raises:
        ValueError: the target has no ``:``, or the module or the name cannot be imported; the message names both.
    """
    target = target.removeprefix("py:")
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{target!r} is not MODULE:NAME")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(f"cannot import {attr!r} from {module_name!r} ({exc})") from None

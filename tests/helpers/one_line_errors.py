"""Bad input gets one clear line (the project's rule): the message of the error a call raises, checked to be one
line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def one_line_error(error: type[BaseException], call: Callable[..., Any], *args: Any) -> str:
    """The message of the ``error`` that ``call(*args)`` raises; the test fails if it raises none or a message of
    more than one line."""
    with pytest.raises(error) as raised:
        call(*args)
    message = str(raised.value)
    assert "\n" not in message, message
    return message

"""Waiting for a condition in tests: polled, with a generous limit that is a safety net against a hang, not a
measurement; on time-out the test fails naming what it waited for."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest


def wait_until(condition: Callable[[], bool], what: str, limit_s: float = 60.0, interval_s: float = 0.1) -> None:
    """Return as soon as ``condition()`` holds; fail with "gave up waiting for ``what``" after ``limit_s``."""
    give_up = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > give_up:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(interval_s)

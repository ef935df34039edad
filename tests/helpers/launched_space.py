"""A Space launched for a browser test: the sample's board (baselines seeded) on a free local port."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from helpers.ports import free_port


@contextmanager
def launched_space(
    home: Path, folder: Path, env: Mapping[str, str] | None = None, *, seed: bool = True, resamples: int = 100
) -> Iterator[tuple[str, Any]]:
    """``(url, demo)`` of a Space over ``home`` whose board is ``folder / "db.sqlite"`` (``seed``: with the
    baselines; bootstrap resamples cut to ``resamples``); ``env`` adds Space settings (e.g.
    ``MADQA_SPACE_AGENT_MODEL``). Closed on exit."""
    from madqa.space.app import launch
    from madqa.space.config import SpaceConfig
    from madqa.space.services import create_services

    config = SpaceConfig.from_env(
        {
            "MADQA_HOME": str(home),
            "MADQA_SPACE_DB": str(folder / "db.sqlite"),
            "MADQA_SPACE_RESAMPLES": str(resamples),
            **(env or {}),
        }
    )
    port = free_port()
    demo = launch(
        create_services(config, seed=seed), port=port, host="127.0.0.1", prevent_thread_lock=True, quiet=True
    )
    try:
        yield f"http://127.0.0.1:{port}/", demo
    finally:
        demo.close()

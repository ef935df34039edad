"""A guarded Space launched for the guard tests (its submission form, clock and client): shared by the Space and
upload-gate tests."""

from __future__ import annotations

from pathlib import Path

from gradio_client import Client  # noqa: E402

from helpers.clients import gradio_client  # noqa: E402
from helpers.ports import free_port  # noqa: E402

FORM = ["guarded sys", "tester", "agent", "model", "guard@example.org", "none", "none", "1 CPU-minute"]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Space:
    """One launched app over ``db`` with a limit of 2 accepted submissions per 100 s of ``clock``."""

    def __init__(self, layout, db: Path, clock: Clock) -> None:
        from madqa.space.app import launch
        from madqa.space.config import SpaceConfig
        from madqa.space.services import create_services

        config = SpaceConfig.from_env(
            {
                "MADQA_HOME": str(layout.root),
                "MADQA_SPACE_DB": str(db),
                "MADQA_SPACE_RATE_LIMIT": "2",
                "MADQA_SPACE_RATE_WINDOW_S": "100",
                "MADQA_SPACE_MAX_MB": "1",
                "MADQA_SPACE_RESAMPLES": "10",
                "MADQA_SPACE_SCORE_WORKERS": "0",
            }
        )
        self.services = create_services(config, seed=False)
        self.services.limiter.clock = clock
        port = free_port()
        self.demo = launch(self.services, port=port, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
        self.url = f"http://127.0.0.1:{port}/"

    def client(self, forwarded_for: str | None = None) -> Client:
        headers = {"X-Forwarded-For": forwarded_for, "X-Real-IP": forwarded_for} if forwarded_for else None
        return gradio_client(self.url, headers=headers)

    def close(self) -> None:
        self.demo.close()

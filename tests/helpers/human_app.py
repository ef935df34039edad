"""`madqa human`'s app served on a free local port, as the human-study tests drive it (a started server: the tests
that use it are marked ``server`` or ``browser``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from helpers.ports import free_port


@contextmanager
def serving_human(service: Any, **launch_options: Any) -> Iterator[str]:
    """The app on ``service`` (``launch_options`` go to ``launch_human``): yields its URL; closes both at the end."""
    from madqa.space.human.app import launch_human

    port = free_port()
    demo = launch_human(service, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True, **launch_options)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()
        service.close()


@contextmanager
def dev_human_app(out_dir: Path) -> Iterator[tuple[str, Any]]:
    """A study of the built sample's dev split that writes to ``out_dir``, served: yields its URL and service."""
    from madqa.space.human.corpus import HumanCorpus
    from madqa.space.human.service import HumanService, build_plan

    service = HumanService(build_plan("dev", out_dir=out_dir), HumanCorpus.open(None))
    with serving_human(service) as url:
        yield url, service

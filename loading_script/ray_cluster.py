"""Reaching a Ray cluster: the optional ``ray`` extra, imported only when ``--ray`` is given.

Both distributed paths use this module: extraction (:mod:`.extract_ray`) and batch runs
(:mod:`madqa.agents.harness.ray_run`); it lives in ``loading_script`` because that is the lowest layer both may import.

Address semantics (those of ``ray.init``): no address starts a local Ray instance, or joins the cluster named by
``RAY_ADDRESS``; ``ADDRESS`` (``HOST:PORT`` of a head started with ``ray start --head``, or ``ray://HOST:10001``
for Ray Client) connects to that cluster.

Workers get the driver's ``MADQA_*`` and Hugging Face cache/offline variables (:func:`forwarded_env`), so they read
the same dataset and indexes; provider credentials and base URLs (``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` …) are
deliberately *not* forwarded: each node reads its own, which is how every node talks to its own model server. Names
listed in ``MADQA_RAY_ENV`` (comma-separated) are forwarded as well.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
from collections.abc import Iterator
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["RAY_EXTRA", "RayUnavailableError", "forwarded_env", "ray_session", "require_ray", "worker_options"]

#: The pip extra of this package that brings Ray.
RAY_EXTRA = "ray"
#: Hugging Face variables forwarded to workers (where the dataset cache is, and whether to stay offline).
_HF_VARS = (
    "HF_HOME",
    "HF_DATASETS_CACHE",
    "HF_HUB_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "HF_EVALUATE_OFFLINE",
    "HF_DATASETS_DISABLE_PROGRESS_BARS",
)


class RayUnavailableError(ImportError):
    """``--ray`` was asked for but Ray is not installed; the message names the pip extra."""


def require_ray() -> None:
    """Raise :class:`RayUnavailableError` (naming the extra) unless ``ray`` is importable."""
    if importlib.util.find_spec("ray") is None:
        raise RayUnavailableError(
            f"--ray needs the Python package 'ray', which is not installed: pip install 'madqa[{RAY_EXTRA}]' "
            "(or: pip install 'ray>=2.60.0')"
        )


def forwarded_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables every Ray worker of a run gets from the driver (see the module docstring).

    >>> forwarded_env({"MADQA_HOME": "/h", "OPENAI_BASE_URL": "http://x", "HF_HOME": "/hf", "MADQA_RAY_ENV": "A",
    ...                "A": "1"})
    {'MADQA_HOME': '/h', 'MADQA_RAY_ENV': 'A', 'HF_HOME': '/hf', 'A': '1'}
    """
    env = dict(os.environ if environ is None else environ)
    names = [k for k in env if k.startswith("MADQA_")] + [k for k in _HF_VARS if k in env]
    names += [n.strip() for n in env.get("MADQA_RAY_ENV", "").split(",") if n.strip() in env]
    return {name: env[name] for name in dict.fromkeys(names)}


def worker_options() -> dict[str, Any]:
    """Options of every task and actor of a run: the forwarded environment (a per-task ``runtime_env``, so it also
    applies when the caller had already connected to the cluster)."""
    return {"runtime_env": {"env_vars": forwarded_env()}}


@contextlib.contextmanager
def ray_session(address: str | None = None) -> Iterator[Any]:
    """Connect to Ray (or reuse the connection the caller made) and yield the ``ray`` module.

    Args:
        address: a cluster address; ``None`` or ``"local"``: ``RAY_ADDRESS``, else a new local instance.

    Raises:
        RayUnavailableError: Ray is not installed.

    A connection made here is closed on exit; one the caller made is left open.
    """
    require_ray()
    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")  # never phone home from a benchmark run
    import ray

    if ray.is_initialized():
        yield ray
        return
    target = None if address in (None, "", "local") else address
    logger.info("connecting to Ray at %s", target or os.environ.get("RAY_ADDRESS") or "a new local instance")
    ray.init(address=target, logging_level=logging.WARNING, log_to_driver=True)
    try:
        yield ray
    finally:
        ray.shutdown()

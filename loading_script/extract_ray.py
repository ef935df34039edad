"""``madqa extract --ray``: files extracted as Ray tasks across a cluster, with the local run's results and messages.

:func:`ray_pool` returns a drop-in for :func:`.pdf_pool.run_isolated` that :func:`.extract.extract_corpus` takes as
``pool``: the cache, the sorting, the skipped files and warnings stay the driver's, so the output is the local
run's. Each task carries the file's bytes (worker nodes need not see the driver's disk) and runs the same task
function in a Ray worker process, which Ray isolates as the local pool does: an exception is that file's
``worker error``; a worker that crashed, or a node that was lost, is retried by Ray (``max_retries``) and, when
the retries are spent, the file is reported by name with the reason. A file still running after ``timeout_s`` is
cancelled and reported as timed out, as locally.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .pdf_pool import Outcome
from .ray_cluster import ray_session, worker_options

__all__ = ["RETRIES", "ray_pool"]

#: Times Ray retries a file whose worker process died or whose node was lost.
RETRIES = 2


def _run_remote(
    fn: Callable[..., Any], data: bytes, task: tuple[Any, ...], initializer: Callable[[], None] | None
) -> tuple[str, Any]:
    """In a Ray worker: write the file's bytes to a private folder and run ``fn`` on it, as a local pool worker."""
    if initializer is not None:
        initializer()
    worker, path, document, kwargs = task
    kwargs = dict(kwargs)
    if kwargs.get("tessdata") and not os.path.isdir(kwargs["tessdata"]):  # this node keeps its data elsewhere
        from .pdf_text import tessdata_dir

        kwargs["tessdata"] = tessdata_dir()
    with tempfile.TemporaryDirectory(prefix="madqa-ray-") as tmp:
        local = Path(tmp) / document
        try:
            local.write_bytes(data)
        except OSError:  # e.g. a name longer than this node's file system allows
            local = Path(tmp) / ("input" + Path(path).suffix)
            local.write_bytes(data)
        try:
            result = fn(worker, local, document, kwargs)
        except Exception as exc:  # noqa: BLE001 - one file's failure is that file's, as in the local pool
            return "error", f"worker error: {type(exc).__name__}: {exc}"
    # Messages name the file by the path it was read from: the driver's path, as in a local run.
    if getattr(result, "error", None):
        result.error = result.error.replace(str(local), str(path))
    if getattr(result, "warnings", None):
        result.warnings = [w.replace(str(local), str(path)) for w in result.warnings]
    return "ok", result


def ray_pool(
    address: str | None = None, *, in_flight: int | None = None, retries: int = RETRIES
) -> Callable[..., Iterator[Outcome]]:
    """A :func:`.pdf_pool.run_isolated` look-alike that runs the tasks on a Ray cluster.

    Args:
        address: the cluster (see :func:`.ray_cluster.ray_session`).
        in_flight: files sent at a time (default: the cluster's CPUs, so a file's time limit counts from about
            when it starts).
        retries: Ray's retries of a file whose worker died or whose node was lost.

    The returned function takes ``(fn, tasks, *, workers, timeout_s, initializer)``; each task is
    ``(worker, path, document, kwargs)`` as :func:`.extract.extract_corpus` builds them; ``workers`` is ignored
    (the cluster's size decides).
    """

    def run(
        fn: Callable[..., Any],
        tasks: Sequence[tuple[Any, ...]],
        *,
        workers: int = 0,
        timeout_s: float | None = None,
        initializer: Callable[[], None] | None = None,
    ) -> Iterator[Outcome]:
        del workers
        with ray_session(address) as ray:
            yield from _schedule(ray, fn, tasks, in_flight, retries, timeout_s, initializer)

    return run


def _schedule(
    ray: Any,
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    in_flight: int | None,
    retries: int,
    timeout_s: float | None,
    initializer: Callable[[], None] | None,
) -> Iterator[Outcome]:
    remote = ray.remote(_run_remote).options(
        num_cpus=1, max_retries=retries, retry_exceptions=False, **worker_options()
    )
    limit = in_flight or max(1, int(ray.cluster_resources().get("CPU", 1)))
    fn_ref = ray.put(fn)
    pending = list(range(len(tasks) - 1, -1, -1))  # popped from the end: listing order
    flight: dict[Any, tuple[int, float]] = {}
    try:
        while pending or flight:
            while pending and len(flight) < limit:
                index = pending.pop()
                try:
                    data = Path(tasks[index][1]).read_bytes()
                except OSError as exc:
                    yield Outcome(index, failure=f"cannot read file: {exc.strerror or exc}")
                    continue
                flight[remote.remote(fn_ref, data, tasks[index], initializer)] = (index, time.monotonic())
            if not flight:
                continue
            wait_s = None
            if timeout_s is not None:
                wait_s = max(0.0, min(started for _, started in flight.values()) + timeout_s - time.monotonic())
            done, _ = ray.wait(list(flight), num_returns=1, timeout=wait_s)
            for ref in done:
                index, _ = flight.pop(ref)
                yield _outcome(ray, ref, index, retries)
            if not done and timeout_s is not None:
                now = time.monotonic()
                for ref, (index, started) in list(flight.items()):
                    if now - started >= timeout_s:
                        del flight[ref]
                        with contextlib.suppress(Exception):
                            ray.cancel(ref, force=True)
                        yield Outcome(index, failure=f"timed out after {timeout_s:g} s")
    finally:
        for ref in flight:  # the consumer stopped (error, Ctrl+C): stop what is still running
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)


def _outcome(ray: Any, ref: Any, index: int, retries: int) -> Outcome:
    try:
        kind, value = ray.get(ref)
    except ray.exceptions.RayError as exc:
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        cause = lines[-1] if lines else type(exc).__name__
        return Outcome(index, failure=f"worker lost on the cluster after {retries + 1} tries: {cause}")
    return Outcome(index, value=value) if kind == "ok" else Outcome(index, failure=value)

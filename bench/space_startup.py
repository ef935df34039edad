"""The start-up figure of `madqa bench space`: ``python -m madqa.space.app`` on the built sample, in a subprocess.

Measured: seconds from process start until ``/`` answers on the port (the whole start-up sequence: imports, the
idempotent sample set-up, labels, services, seeding a fresh board with the baselines, gradio), and peak memory: the
server process's ``VmHWM`` and the sampled peak of the resident memory of the server with its children (the
scoring process). It uses ``MADQA_HOME`` as it is (the set-up is a no-op when the sample is current) and a fresh
board in a temporary folder, so the user's board is never touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .measure import descendants, free_port, proc_status_kib


def sample_missing() -> str | None:
    """Why the start-up figure cannot be measured (no built sample), or ``None``."""
    from madqa.loading_script.paths import Layout

    layout = Layout.default()
    if not (layout.dataset_dir / "README.md").is_file() or not layout.test_labels.is_file():
        return f"no built sample in {layout.root}: run `madqa setup` first"
    return None


def _status_kib(pid: int, field: str) -> int:
    return proc_status_kib(pid, field) or 0


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 20)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=wait_s)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue
    try:  # children still in the group (the scoring process)
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def measure_startup(*, seed: bool = True, timeout_s: float = 900, port: int | None = None) -> dict[str, Any]:
    """Start the Space on the sample in a subprocess; time to the first answer and peak memory.

    Raises:
        RuntimeError: the Space exited, served its configuration-error page, or did not answer in ``timeout_s``.
    """
    from madqa.loading_script.paths import Layout

    port = port or free_port()
    with tempfile.TemporaryDirectory(prefix="madqa-bench-startup-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MADQA_SPACE_", "GRADIO_"))}
        env.pop("MADQA_DATASET", None)
        env.pop("MADQA_PAGES_REPO", None)
        env.update(
            MADQA_HOME=str(Layout.default().root),
            MADQA_SPACE_DB=str(Path(tmp) / "board" / "lb.sqlite"),
            MADQA_SPACE_SEED="1" if seed else "0",
            GRADIO_SERVER_NAME="127.0.0.1",
            GRADIO_SERVER_PORT=str(port),
            GRADIO_ANALYTICS_ENABLED="False",
            GRADIO_TEMP_DIR=tmp,
            HF_HUB_OFFLINE="1",
            HF_EVALUATE_OFFLINE="1",
        )
        log_path = Path(tmp) / "space.log"
        url = f"http://127.0.0.1:{port}/"
        with log_path.open("w") as log:
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "madqa.space.app"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        tree_peak_kib, html, ready_s = 0, "", None
        try:
            while time.perf_counter() - t0 < timeout_s:
                if proc.poll() is not None:
                    break
                tree_peak_kib = max(tree_peak_kib, sum(_status_kib(p, "VmRSS") for p in descendants(proc.pid)))
                try:
                    with urllib.request.urlopen(url, timeout=5) as response:
                        if response.status == 200:
                            ready_s = time.perf_counter() - t0
                            html = response.read().decode("utf-8", errors="replace")
                            break
                except (urllib.error.URLError, OSError):
                    time.sleep(0.2)
            pids = descendants(proc.pid) if proc.poll() is None else []
            server_peak_kib = _status_kib(proc.pid, "VmHWM")
            tree_peak_kib = max(tree_peak_kib, sum(_status_kib(p, "VmRSS") for p in pids))
        finally:
            _stop(proc)
        errors = [x for x in log_path.read_text(errors="replace").splitlines() if x.startswith("ERROR")]
    if ready_s is None:
        raise RuntimeError(
            f"the Space did not answer on {url} in {timeout_s:.0f} s (exit status {proc.returncode}); "
            f"{errors[-1] if errors else 'no ERROR line in its log'}"
        )
    if "configuration error" in html:
        raise RuntimeError(f"the Space served its configuration-error page: {errors[-1] if errors else '?'}")
    return {
        "startup_s": ready_s,
        "startup_seeded": seed,
        "startup_server_peak_rss_mib": server_peak_kib / 1024,
        "startup_tree_peak_rss_mib": tree_peak_kib / 1024,
        "startup_processes": len(pids),
    }


def startup_figures(skip: bool, seed: bool = True, port: int | None = None) -> dict[str, Any]:
    """The start-up figures, or ``{"startup_skipped": reason}`` (``--no-startup``, or no built sample)."""
    if skip:
        return {"startup_skipped": "--no-startup"}
    reason = sample_missing()
    return {"startup_skipped": reason} if reason else measure_startup(seed=seed, port=port)


def startup_lines(r: dict[str, Any]) -> list[str]:
    """The readable line(s) of the start-up figure."""
    if r.get("startup_skipped"):
        return [f"  start-up of `python -m madqa.space.app` on the sample: skipped ({r['startup_skipped']})"]
    board = "fresh board seeded with the baselines" if r["startup_seeded"] else "fresh board, not seeded"
    return [
        f"  start-up of `python -m madqa.space.app` on the sample ({board})",
        f"    process start -> port answers   {r['startup_s']:.1f} s",
        f"    peak RSS: server {r['startup_server_peak_rss_mib']:.0f} MiB, with its {r['startup_processes'] - 1} "
        f"child process(es) {r['startup_tree_peak_rss_mib']:.0f} MiB (sampled)",
    ]

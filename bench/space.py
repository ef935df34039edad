"""`madqa bench space`: end-to-end latency of the Space, measured through gradio_client on 127.0.0.1.

Self-contained: a synthetic gold set of ``--items`` questions (no dataset, no real labels) backs a launched app in a
temporary folder. Figures: a ``--items``-prediction submission (anls mode, default Kuiper resamples) and a leaderboard
refresh with ``--submissions`` stored submissions. Targets: < 3 s and < 1 s. Also the Space's start-up time and peak
memory on the built sample, in a subprocess (:mod:`.space_startup`; ``--no-startup`` skips it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .measure import emit, free_port

logger = logging.getLogger(__name__)


#: Command lines that ``madqa bench space --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench space --items 100 --submissions 20 --no-startup --json",)


def configure(parser: argparse.ArgumentParser) -> None:
    """Options of `madqa bench space`."""
    parser.add_argument("--items", type=int, default=500, help="predictions per submission")
    parser.add_argument("--submissions", type=int, default=100, help="submissions on the board")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats; the median is reported")
    parser.add_argument(
        "--burst",
        type=int,
        default=4,
        help="maximum-size legal submissions scored at once while the board is refreshed",
    )
    parser.add_argument(
        "--no-startup",
        action="store_true",
        help="skip the start-up figure (`python -m madqa.space.app` on the built sample; skipped "
        "anyway, and said so, when the sample is not built)",
    )
    add_port_option(parser)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")


def synthetic_references(n: int) -> list[Any]:
    """``n`` synthetic gold questions with a mix of hop types."""
    from madqa.metric.schema import Citation, Reference

    refs = []
    for i in range(n):
        doc = f"doc{i % 37}.pdf"
        ev = (Citation(doc, 1 + i % 5),) if i % 3 else (Citation(doc, 1), Citation(f"doc{(i + 1) % 37}.pdf", 2))
        hop = "single" if i % 3 else "cross_doc"
        refs.append(Reference(f"b{i:05d}", f"synthetic question {i}?", ((f"answer {i}",),), ev, hop))  # type: ignore[arg-type]
    return refs


def synthetic_form(system: str, submitter: str) -> dict[str, str]:
    """A complete submission form (the Space's form fields, in their order) for a synthetic submission."""
    return {
        "system": system,
        "submitter": submitter,
        "agent": "a",
        "model": "m",
        "contact": "c",
        "models_used": "m",
        "training_data": "none",
        "compute": "none",
    }


def results_text(refs: list[Any], seed: int) -> str:
    """A results file answering about half of the questions right, with citations and steps."""
    lines = []
    for i, r in enumerate(refs):
        right = (i * 7 + seed) % 2 == 0
        lines.append(
            {
                "id": r.id,
                "answer": [r.answer_variants[0][0] if right else f"wrong {seed}"],
                "citations": [{"document": c.document, "page": c.page} for c in r.evidence[:1]],
                "steps": 1 + (i + seed) % 6,
            }
        )
    return "".join(json.dumps(x) + "\n" for x in lines)


def add_port_option(parser: argparse.ArgumentParser) -> None:
    """``--port`` of the benchmarks that launch a Space (``bench space``, ``bench scale``)."""
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        metavar="N",
        help="port of the Space it launches on 127.0.0.1 (default: a free one)",
    )


def require_free(port: int | None) -> None:
    """Fail before any work when the ``--port`` given is taken.

    Raises:
        BenchError: ``127.0.0.1:port`` cannot be bound.
    """
    import socket

    from . import BenchError

    if port is None:
        return
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            raise BenchError(f"port {port} on 127.0.0.1 is already in use: choose another with --port N") from None


def synthetic_config(folder: Path, **settings: Any) -> Any:
    """The ``SpaceConfig`` of a synthetic Space in ``folder``: its own database, no labels file, no rate limit."""
    from madqa.space.config import SpaceConfig

    return SpaceConfig(
        db_path=folder / "db.sqlite",
        labels_path=folder / "none.jsonl",
        dataset=str(folder),
        rate_limit=0,
        **settings,
    )


@contextlib.contextmanager
def launched_space(config: Any, store: Any, scorer: Any, port: int | None = None) -> Iterator[Any]:
    """The Space over ``store`` and ``scorer``, launched on 127.0.0.1 (``port``, default a free one), closed on exit.

    Yields a ``gradio_client.Client`` of it. gradio's banners go to stderr: stdout is for the figures.
    """
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from gradio_client import Client

    from madqa.space.app import launch
    from madqa.space.services import Services
    from madqa.space.submission import RateLimiter

    with contextlib.redirect_stdout(sys.stderr):
        services = Services(config, store, scorer, RateLimiter(0, 1))
        demo = launch(services, port=port or free_port(), host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    try:
        yield Client(f"http://127.0.0.1:{demo.server_port}/", verbose=False)
    finally:
        with contextlib.redirect_stdout(sys.stderr):
            demo.close()


def bench_space(items: int, submissions: int, repeats: int, burst: int = 4, port: int | None = None) -> dict[str, Any]:
    """Launch a synthetic Space (on ``port``, default a free one), time a submission and a refresh; the figures."""
    require_free(port)
    from gradio_client import handle_file

    from madqa.space.scoring_pool import PoolLimits, ScoringPool
    from madqa.space.storage import SubmissionStore
    from madqa.space.submission import Scorer

    from .space_burst import refresh_under_burst

    form = synthetic_form("bench", "bench")
    with tempfile.TemporaryDirectory(prefix="madqa-bench-space-") as tmp:
        folder = Path(tmp)
        # answer_grid_s=0: this times the Space's work; the live Space holds each answer to its time grid on top
        # (4 s first, space/quiet.py), by design
        config = synthetic_config(folder, answer_grid_s=0.0)
        refs = synthetic_references(items)
        store = SubmissionStore(config.db_path)
        scorer = Scorer(refs, store, n_resamples=config.n_resamples, max_bytes=config.max_file_bytes)
        t0 = time.perf_counter()
        for k in range(submissions):
            scorer.submit_text(results_text(refs, k), {**form, "system": f"bench-{k}"})
        fill_s = time.perf_counter() - t0
        with launched_space(config, store, scorer, port) as client, contextlib.ExitStack() as on_exit:
            client.predict("", api_name="/refresh")  # warm-up

            def timed_submit(k: int) -> float:
                path = folder / f"submission-{k}.jsonl"  # a new file each time: the Space refuses duplicates
                path.write_text(results_text(refs, 1000 + k), encoding="utf-8")
                t = time.perf_counter()
                message = client.predict(handle_file(str(path)), *form.values(), api_name="/submit")[0]
                if not str(message).startswith("**Accepted**"):
                    raise RuntimeError(f"bench submission rejected: {message}")
                return time.perf_counter() - t

            submit, refresh = [], []
            for k in range(repeats):
                submit.append(timed_submit(k))
                t = time.perf_counter()
                client.predict("", api_name="/refresh")
                refresh.append(time.perf_counter() - t)
            scorer.pool = ScoringPool(refs, n_resamples=config.n_resamples, limits=PoolLimits(workers=1))
            on_exit.callback(scorer.pool.close)  # before the app closes, as on an error
            timed_submit(repeats)  # warm-up: the scoring process finishes its imports
            pooled = [timed_submit(repeats + 1 + k) for k in range(repeats)]
            burst_figures = (
                refresh_under_burst(client, folder, refs, form, burst=burst, max_bytes=config.max_file_bytes)
                if burst
                else {}
            )
    return {
        "items": items,
        "board_submissions": submissions,
        "repeats": repeats,
        "submit_s": statistics.median(submit),
        "refresh_s": statistics.median(refresh),
        "submit_all_s": submit,
        "refresh_all_s": refresh,
        "submit_pool_s": statistics.median(pooled),
        **burst_figures,
        "fill_s_per_submission": fill_s / max(1, submissions),
    }


def run(args: argparse.Namespace) -> int:
    """Run `madqa bench space` and print its figures."""
    from .space_startup import startup_figures, startup_lines

    require_free(args.port)
    startup = startup_figures(args.no_startup, port=args.port)  # first: nothing else running in this process yet
    r = {**bench_space(args.items, args.submissions, max(1, args.repeats), max(0, args.burst), args.port), **startup}
    lines = [
        f"madqa bench space: gradio_client on 127.0.0.1, anls mode, median of {r['repeats']}",
        f"  submit {r['items']} predictions, scored in the request thread  {r['submit_s']:.3f} s   (target < 3 s)",
        f"  leaderboard refresh, {r['board_submissions']}+ submissions       {r['refresh_s']:.3f} s   (target < 1 s)",
        f"  submit {r['items']} predictions, scored in a scoring process   {r['submit_pool_s']:.3f} s   "
        "(target < 3 s)",
        f"  scoring+storing in-process, per submission        {r['fill_s_per_submission']:.3f} s",
    ]
    if r.get("burst"):
        lines += [
            f"  burst: {r['burst']} worst-case legal submissions ({r['worst_case_file_bytes'] / 2**20:.1f} MiB each) "
            f"scored in {r['burst_s']:.1f} s",
            f"    refresh p50/p95 idle          {r['refresh_idle_p50_s']:.3f} / {r['refresh_idle_p95_s']:.3f} s",
            f"    refresh p50/p95 during burst  {r['refresh_burst_p50_s']:.3f} / {r['refresh_burst_p95_s']:.3f} s"
            f"   (target p95 < 1 s; {r['refreshes_during_burst']} refreshes; ratio p95 "
            f"{r['refresh_burst_p95_s'] / max(r['refresh_idle_p95_s'], 1e-9):.1f}x idle)",
        ]
    lines += startup_lines(r)
    return emit(r, lines, args.json)

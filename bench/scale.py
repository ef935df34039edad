"""``madqa bench scale``: a release-sized rehearsal on this machine, every stage's wall time and peak RSS beside its
target.

Stages: generate a synthetic collection of the release's size and shape (:mod:`.scale_data`), extract its text
layer, measure OCR on a few scanned pages, build both indexes, run the questions with a scripted model of fixed
latency per call (:mod:`.scale_model`) at ``--workers`` threads and again on a local 2-node Ray cluster, evaluate
the results, submit them to a local Space whose board holds ``--submissions`` entries. ``--scale`` and
``--questions`` shrink it for a quick look (the targets are for the full size).

The run stages use the real runner loop (:mod:`madqa.agents.harness.runner`, its results writer with one fsync per
line) and
the real search agent with the sample dataset's index (``madqa setup`` first), fed the synthetic questions; the
runner's overhead per question is ``wall × workers / questions − calls × latency``. Peak RSS is this process's
``VmHWM``, reset before each stage (``/proc/self/clear_refs``); worker processes (extraction pool, Ray workers) are
not in it.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import BenchError
from .measure import emit, max_rss_mib, vm_hwm_mib

logger = logging.getLogger(__name__)

MODEL = "py:madqa.bench.scale_model:sleepy_model"
RELEASE_QUESTIONS = 2250


#: Command lines that ``madqa bench scale --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench scale --scale 0.01 --skip ocr ray --json",)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `madqa bench scale`."""
    parser.add_argument("--scale", type=float, default=1.0, help="share of the release's pages/PDFs")
    parser.add_argument("--questions", type=int, help="questions run (unset: the release's question count × --scale)")
    parser.add_argument("--workers", type=int, default=32, help="questions in flight")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per model call")
    parser.add_argument("--submissions", type=int, default=1000, help="submissions on the Space's board (1000)")
    parser.add_argument("--ocr-pages", type=int, default=16, help="scanned pages OCR is measured on (16)")
    parser.add_argument(
        "--skip",
        nargs="+",
        default=[],
        metavar="STAGE",
        choices=("ocr", "whoosh", "ray", "space"),
        help="leave stages out: ocr whoosh ray space",
    )
    from .space import add_port_option

    add_port_option(parser)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")


def _reset_peak() -> None:
    with contextlib.suppress(OSError):  # Linux ≥ 4.0: "5" resets VmHWM to the current RSS
        Path("/proc/self/clear_refs").write_text("5")


def _stage(figures: dict[str, Any], name: str, fn: Callable[[], Any]) -> Any:
    """Run one stage, recording its wall time and this process's peak RSS under ``figures[name]``."""
    logger.info("bench scale: %s …", name)
    _reset_peak()
    start = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - start
    own = result[0] if isinstance(result, tuple) else result
    figures[name] = {"wall_s": wall, "peak_rss_mib": vm_hwm_mib() or max_rss_mib(), **(own or {})}
    return result


def run_questions(n: int, workers: int, latency: float, out: Path, backend: Any = None) -> dict[str, Any]:
    """Answer ``n`` synthetic questions with the sleepy model through the runner; wall, ideal and overhead."""
    from madqa.agents.harness.agent_base import Preparation
    from madqa.agents.harness.runner import LocalBackend, RunConfig, RunSummary, write_records

    from .scale_model import CALLS

    os.environ["MADQA_BENCH_LATENCY"] = str(latency)  # read by the model, in this process and on Ray workers
    todo = [{"id": f"b{i:05d}", "question": f"synthetic question {i}?"} for i in range(n)]
    answering = (backend or LocalBackend()).prepare(
        Preparation(
            RunConfig(model=MODEL), slots=workers, model_options={}, dataset={"name": "bench-scale", "revision": None}
        )
    )
    try:
        out.unlink(missing_ok=True)
        start = time.perf_counter()
        summary = write_records(out, answering.answers(todo, workers), RunSummary(out), None)
        wall = time.perf_counter() - start
    finally:
        answering.close()
    ideal = n * CALLS * latency / workers
    return {
        "questions": n,
        "workers": workers,
        "latency_s": latency,
        "calls": CALLS,
        "run_s": wall,
        "ideal_s": ideal,
        "ratio": wall / ideal if ideal else None,
        "errors": summary.errors,
        "overhead_ms_per_question": 1000 * (wall * workers / n - CALLS * latency),
    }


def run_on_ray(n: int, workers: int, latency: float, out: Path) -> dict[str, Any]:
    """:func:`run_questions` on a local 2-node Ray cluster (1 CPU each, as the tests')."""
    from madqa.loading_script.ray_cluster import RayUnavailableError, require_ray

    try:
        require_ray()
    except RayUnavailableError as exc:
        return {"note": str(exc)}
    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    import ray
    from ray.cluster_utils import Cluster

    from madqa.agents.harness.ray_run import RayBackend

    store = 80 * 2**20
    nodes = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False, "object_store_memory": store}
    )
    try:
        nodes.add_node(num_cpus=1, object_store_memory=store)
        ray.init(address=nodes.address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        nodes.wait_for_nodes()
        return {"nodes": 2, **run_questions(n, workers, latency, out, RayBackend())}
    finally:
        ray.shutdown()
        nodes.shutdown()


def evaluate_results(path: Path, n: int) -> dict[str, Any]:
    """Score and aggregate a results file as ``madqa evaluate`` does (in this process, metric already imported)."""
    from madqa.metric.inputs import parse_results_text
    from madqa.metric.report import build_report, score_predictions

    from .space import synthetic_references

    refs = synthetic_references(n)
    start = time.perf_counter()
    report = build_report(
        score_predictions(parse_results_text(path.read_text(encoding="utf-8"), str(path)), refs), refs
    )
    return {"lines": n, "evaluate_s": time.perf_counter() - start, "accuracy": report["accuracy"]}


def bench_scale(args: argparse.Namespace) -> dict[str, Any]:
    """Run every stage; the figures by stage."""
    from .scale_data import build_index, extract_text_layer, generate_collection, measure_ocr
    from .search_corpus import CorpusSpec

    if not 0 < args.scale <= 1 or args.workers < 1 or args.latency < 0:
        raise BenchError("--scale must be in (0, 1], --workers at least 1, --latency not negative")
    if "space" not in args.skip:
        from .space import require_free

        require_free(args.port)  # before the long stages
    spec = CorpusSpec().scaled(round(CorpusSpec().pages * args.scale)) if args.scale < 1 else CorpusSpec()
    spec = replace(spec, vocabulary=min(spec.vocabulary, max(20_000, spec.tokens // 40)))
    n = args.questions or max(1, round(RELEASE_QUESTIONS * args.scale))
    cpus = os.cpu_count() or 1
    figures: dict[str, Any] = {"scale": args.scale, "cpus": cpus}
    with tempfile.TemporaryDirectory(prefix="madqa-bench-scale-") as tmp:
        root = Path(tmp)
        _stage(figures, "generate", lambda: generate_collection(root / "pdfs", spec, cpus))
        _, pages = _stage(figures, "extract", lambda: extract_text_layer(root / "pdfs", cpus))
        if "ocr" not in args.skip:
            texts = [p["text"] for p in pages[:200] if p["text"]] or ["no text"]
            _stage(figures, "ocr", lambda: measure_ocr(args.ocr_pages, cpus, texts))
        _stage(figures, "index_tantivy", lambda: build_index(pages, "tantivy", root / "idx"))
        if "whoosh" not in args.skip:
            _stage(figures, "index_whoosh", lambda: build_index(pages, "whoosh", root / "idx"))
        pages.clear()  # the run stages do not need them: their memory is not the run's
        try:
            from madqa.loading_script.load import load_pages

            load_pages(None)
        except Exception as exc:  # noqa: BLE001 - any reason the sample is unusable is the same advice
            raise BenchError(f"the run stages use the sample dataset: run `madqa setup` first ({exc})") from None
        out = root / "results.jsonl"
        _stage(figures, "run", lambda: run_questions(n, args.workers, args.latency, out))
        _stage(figures, "evaluate", lambda: evaluate_results(out, n))
        if "ray" not in args.skip:
            _stage(figures, "run_ray", lambda: run_on_ray(n, args.workers, args.latency, root / "ray.jsonl"))
    if "space" not in args.skip:
        from .space import bench_space

        _stage(figures, "space", lambda: bench_space(n, args.submissions, repeats=1, burst=0, port=args.port))
    return figures


def verdict(ok: bool | None) -> str:
    """``PASS``/``FAIL`` beside a target (empty where a stage has no target or no figure)."""
    return "" if ok is None else "PASS" if ok else "FAIL"


def _row(name: str, stage: dict[str, Any] | None, measure: str, target: str, ok: bool | None = None) -> str:
    if stage is None:
        return f"  {name:<22} {'skipped':>9}"
    row = f"  {name:<22} {stage['wall_s']:>8.1f}s {stage['peak_rss_mib']:>7.0f} MiB  {measure:<44} {target:<14}"
    return f"{row} {verdict(ok)}".rstrip()


def _sub(measure: str, target: str, ok: bool) -> str:
    """A second figure of the stage above, in the same columns."""
    return f"  {'':<22} {'':>9} {'':>11}  {measure:<44} {target:<14} {verdict(ok)}"


def report_lines(f: dict[str, Any]) -> list[str]:
    """The figures as text: one line per stage, measured beside the target."""
    g, e, o = f["generate"], f["extract"], f.get("ocr")
    lines = [
        f"madqa bench scale: {g['documents']} PDFs, {g['pages']} pages (longest {g['max_doc_pages']}), "
        f"scale {f['scale']:g}, {f['cpus']} CPUs",
        f"  {'stage':<22} {'wall':>9} {'peak RSS':>11}  {'measured':<44} {'target':<14} verdict",
    ]
    lines.append(_row("generate PDFs", g, f"{g['bytes'] / 2**20:.0f} MiB of PDF", ""))
    rate_e = e["pages_per_s"]
    lines.append(_row("extract, text layer", e, f"{rate_e:.0f} pages/s", ">= 300 pages/s", rate_e >= 300))
    if o is not None:
        rate = o.get("pages_per_s")
        hours = (g["blank_pages"] / rate / 3600) if rate else None
        text = f"{rate:.2f} pages/s; {g['blank_pages']} blank pages -> {hours:.2f} h" if rate else o.get("note", "")
        lines.append(_row("OCR (scanned pages)", o, text, "(measured)"))
    t, w = f["index_tantivy"], f.get("index_whoosh")
    lines.append(_row("index, Tantivy", t, f"{t['build_s']:.1f} s", "<= 20 s", t["build_s"] <= 20))
    lines.append(
        _row("index, Whoosh", w, f"{w['build_s']:.1f} s" if w else "", "<= 250 s", w["build_s"] <= 250 if w else None)
    )
    r = f["run"]
    lines.append(
        _row(
            f"run, {r['workers']} threads",
            r,
            f"{r['run_s']:.1f} s = {r['ratio']:.2f}x ideal {r['ideal_s']:.1f} s, {r['errors']} errors",
            "<= 1.5x ideal",
            r["ratio"] <= 1.5 and not r["errors"],
        )
    )
    lines.append(
        _sub(
            f"{r['overhead_ms_per_question']:.1f} ms overhead per question",
            "<= 50 ms",
            r["overhead_ms_per_question"] <= 50,
        )
    )
    v = f["evaluate"]
    lines.append(_row("evaluate", v, f"{v['lines']} lines in {v['evaluate_s']:.2f} s", "< 2 s", v["evaluate_s"] < 2))
    y = f.get("run_ray")
    if y is not None and "run_s" in y:
        extra = y["run_s"] / r["run_s"] - 1
        lines.append(
            _row(
                "run, Ray 2 nodes",
                y,
                f"{y['run_s']:.1f} s, {100 * extra:+.0f}% vs local, {y['errors']} errors",
                "<= +20%",
                extra <= 0.2 and not y["errors"],
            )
        )
    elif y is not None:
        lines.append(_row("run, Ray 2 nodes", y, y.get("note", "")[:44], "<= +20%"))  # not run: no verdict
    s = f.get("space")
    if s is not None:
        lines.append(_row("Space", s, f"submit {s['items']} lines {s['submit_s']:.2f} s", "< 5 s", s["submit_s"] < 5))
        lines.append(
            _sub(f"board of {s['board_submissions']}+ loads in {s['refresh_s']:.2f} s", "< 1 s", s["refresh_s"] < 1)
        )
    checked = [x for x in lines[2:] if x.endswith(("PASS", "FAIL"))]
    failed = sum(x.endswith("FAIL") for x in checked)
    lines.append(f"  {len(checked) - failed} of {len(checked)} targets met" + (f", {failed} FAIL" if failed else ""))
    return lines


def run(args: argparse.Namespace) -> int:
    """Run `madqa bench scale` and print its figures."""
    for noisy in ("httpx", "madqa.space"):  # one line per HTTP request / submission of the Space stage
        logging.getLogger(noisy).setLevel(logging.WARNING)
    figures = bench_scale(args)
    return emit(figures, report_lines(figures), args.json)

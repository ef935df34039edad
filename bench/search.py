"""``madqa bench search``: the search index on a full-scale synthetic corpus, and page rendering on the sample.

Builds each search set-up (the public harness's Whoosh use, the ``whoosh`` and ``tantivy`` backends) over the same
synthetic corpus of MADQA's size (18,619 pages, ≈ 12.2M tokens; ``--pages`` scales it down) in separate
processes and prints build time, index size, peak RSS, query latency and top-k agreement with the harness, then
render and encode times on the sample's PDFs when `madqa setup` has been run. The full-scale run takes 10 to 15
minutes on two cores, most of it the two Whoosh builds (about 4 minutes each).

Then the search limits (:class:`madqa.agents.corpus.search.SearchLimits`): the match-everything queries of
:data:`BROAD_QUERIES` are timed on the same corpus for each backend with no limits (the state before the limits,
as the harness runs them: 7 to 27 s each on Whoosh at 6,000 pages), with the wall-clock safety net alone (work
limits off), and with the default limits, with what each returned. This builds the backends' indexes once more
and waits for the unlimited Whoosh queries, several minutes at full scale; ``--no-broad`` skips it. The work
limits' own figures (page entries and words of the bench queries, and Whoosh's time at the limits) are
:mod:`.limits`'s.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from .measure import Spread, emit

logger = logging.getLogger(__name__)

#: The targets: Whoosh p50 / p95 speed-ups over the harness (measured side by side: the median over the passes of
#: each pass's ratio), Tantivy build and p95, render per page.
TARGET_P50_SPEEDUP = 20.0
TARGET_P95_SPEEDUP = 4.0
TARGET_TANTIVY_BUILD_S = 20.0
TARGET_TANTIVY_P95_MS = 5.0
TARGET_RENDER_MS = 100.0

_LABELS = {"harness": "harness-style Whoosh", "whoosh": "whoosh backend", "tantivy": "tantivy backend"}
#: Queries that match every page or expand to most of the vocabulary (the issue's three, and a one-letter prefix).
BROAD_QUERIES: tuple[str, ...] = ("*", "*?*", "[a TO z]", "b*")


#: Command lines that ``madqa bench search --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench search --pages 2000 --queries 50 --top-k 5 --no-render --json",)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the search benchmark's arguments."""
    from .search_corpus import FULL_PAGES

    parser.add_argument("--pages", type=int, default=FULL_PAGES, help="corpus pages")
    parser.add_argument("--queries", type=int, default=300, help="queries per set-up")
    parser.add_argument("-k", "--top-k", dest="k", type=int, default=5, help="results per query")
    parser.add_argument("--setups", default="harness,whoosh,tantivy", help="comma-separated set-ups")
    parser.add_argument("--seed", type=int, default=0, help="corpus and query seed")
    parser.add_argument(
        "--passes", type=int, default=3, help="passes over the queries with the set-ups side by side (0: none)"
    )
    parser.add_argument("--workdir", default=None, help="where to build the indexes (default: system temp)")
    parser.add_argument("--pdfs", default=None, help="PDF folder for the render figures (default: the sample's)")
    parser.add_argument("--no-render", action="store_true", help="skip the render figures")
    parser.add_argument(
        "--no-broad", action="store_true", help="skip timing the match-everything queries with and without limits"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark and print its figures."""
    from pathlib import Path

    from madqa.bench import BenchError

    from .search_corpus import CorpusSpec
    from .search_index import bench_search

    if args.pages < 1 or args.queries < 1 or args.k < 1 or args.passes < 0:
        raise BenchError("--pages, --queries and -k must be positive, --passes at least 0")
    spec = CorpusSpec(seed=args.seed)
    if args.pages != spec.pages:
        spec = spec.scaled(args.pages)
    try:
        result = bench_search(
            spec,
            setups=[s.strip() for s in args.setups.split(",") if s.strip()],
            n_queries=args.queries,
            k=args.k,
            workdir=Path(args.workdir) if args.workdir else None,
            passes=args.passes,
        )
    except ValueError as exc:
        raise BenchError(str(exc)) from exc
    result["render"] = None if args.no_render else _render_figures(args.pdfs, result["notes"])
    backends = [n for n in result["setups"] if n in ("whoosh", "tantivy")]
    result["broad"] = None if args.no_broad or not backends else _broad_figures(spec, backends, args.workdir)
    return emit(result, format_report(result), args.json)


def _render_figures(pdfs: str | None, notes: list[str]) -> dict[str, Any] | None:
    from pathlib import Path

    from madqa.loading_script.paths import Layout

    from .render import bench_render

    folder = Path(pdfs) if pdfs else Layout.default().sample_dir / "documents"
    files = sorted(folder.glob("*.pdf")) if folder.is_dir() else []
    if not files:
        notes.append(f"render figures skipped: no PDFs in {folder} (run `madqa setup` or pass --pdfs FOLDER)")
        return None
    return bench_render(files)


def _broad_figures(spec: Any, backends: list[str], workdir: str | None) -> dict[str, Any]:
    """Seconds and outcome of each of :data:`BROAD_QUERIES`, per backend, under three settings of the limits."""
    import shutil
    import tempfile
    import time
    from pathlib import Path

    from madqa.agents.corpus.search import UNLIMITED, QuerySyntaxError, SearchLimits, open_index

    from .search_corpus import synthetic_pages

    settings = {
        "no limits": UNLIMITED,
        "safety net only": SearchLimits(max_terms=None, max_postings=None),
        "default": SearchLimits(),
    }
    pages = synthetic_pages(spec)
    root = Path(tempfile.mkdtemp(prefix="madqa-bench-broad-", dir=workdir))
    out: dict[str, Any] = {
        "timeout_s": SearchLimits().timeout,
        "max_terms": SearchLimits().max_terms,
        "max_postings": SearchLimits().max_postings,
        "backends": {},
    }
    try:
        for backend in backends:
            logger.info("timing the match-everything queries on the %s backend", backend)
            index: Any = open_index(pages, root, backend=backend, progress=False)  # type: ignore[arg-type]
            rows: dict[str, Any] = {}
            for query in BROAD_QUERIES:
                rows[query] = {}
                for name, limits in settings.items():
                    index.limits = limits
                    start = time.perf_counter()
                    try:
                        outcome = f"{len(index.search(query, 5))} hits"
                    except QuerySyntaxError as exc:
                        outcome = type(exc).__name__
                    rows[query][name] = {"seconds": time.perf_counter() - start, "outcome": outcome}
            out["backends"][backend] = rows
            index.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def format_broad(broad: dict[str, Any]) -> list[str]:
    """Lines of the match-everything table (:func:`_broad_figures`)."""
    names = ["no limits", "safety net only", "default"]
    postings = f", at most {broad['max_postings']:,} page entries" if broad.get("max_postings") else ""
    lines = [
        f"  match-everything queries (k=5; limits: {broad['timeout_s']:g} s safety net per search, at most "
        f"{broad['max_terms']:,} expanded words{postings}):",
        f"  {'backend':8s} {'query':10s}" + "".join(f" {n:>28s}" for n in names),
    ]
    for backend, rows in broad["backends"].items():
        for query, cells in rows.items():
            text = "".join(f" {cells[n]['seconds']:8.3f}s {cells[n]['outcome']:>18s}" for n in names if n in cells)
            lines.append(f"  {backend:8s} {query:10s}{text}")
    return lines


def _spread(s: dict[str, Any], unit: str, scale: float = 1.0, digits: int = 2) -> str:
    return Spread(**s).text(unit, scale, digits)


def format_side_by_side(side: dict[str, Any]) -> list[str]:
    """Lines of :func:`.search_index.side_by_side`: each set-up's p50/p95 and the speed-ups, median (min-max)."""

    def load(x: Any) -> str:
        return "n/a" if not x else "/".join(f"{v:.2f}" for v in x)

    lines = [
        f"  side by side in one process ({side['repeats']} passes; each query on {', '.join(side['sides'])} in "
        f"turn; load average 1/5/15 min {load(side['load_before'])} before, {load(side['load_after'])} after), "
        "per pass, median (min-max):",
    ]
    for name, row in side["sides"].items():
        lines.append(
            f"  {_LABELS.get(name, name):22s} p50 {_spread(row['p50_s'], ' ms', 1000)}"
            f"   p95 {_spread(row['p95_s'], ' ms', 1000)}"
        )
    for name, speed in side.get("speedup_vs_harness", {}).items():
        lines.append(
            f"  {_LABELS.get(name, name):22s} vs harness: p50 {_spread(speed['p50'], 'x', digits=1)} lower, "
            f"p95 {_spread(speed['p95'], 'x', digits=1)} lower"
        )
    return lines


def format_report(r: dict[str, Any]) -> list[str]:
    """Human-readable lines of a :func:`.search_index.bench_search` result (plus ``render``)."""
    c = r["corpus"]
    lines = [
        f"madqa bench search: {c['pages']:,} pages in {c['documents']:,} documents, {c['tokens'] / 1e6:.1f}M tokens "
        f"(synthetic, seed {c['seed']}, generated in {r['corpus_seconds']:.1f} s); {r['queries']} queries, "
        f"k={r['k']}, {r['cpus']} CPUs",
        f"  {'set-up':22s} {'build':>9s} {'index':>9s} {'peak RSS':>9s} {'p50':>9s} {'p95':>9s} {'max':>9s}"
        "  top-k vs harness",
    ]
    setups = r["setups"]
    for name, s in setups.items():
        agree = s.get("agreement")
        if name == "harness":
            vs = "(reference)"
        elif agree:
            vs = f"identical {100 * agree['identical']:.1f}%, Jaccard {agree['jaccard']:.3f}"
        else:
            vs = "n/a"
        lines.append(
            f"  {_LABELS.get(name, name):22s} {s['build_s']:8.1f}s {s['index_mib']:6.0f}MiB"
            f" {s['peak_rss_mib']:6.0f}MiB {s['query_p50_ms']:7.2f}ms {s['query_p95_ms']:7.2f}ms"
            f" {s['query_max_ms']:7.0f}ms  {vs}"
        )
    loaded = ", ".join(f"{_LABELS.get(n, n)} {s['rss_loaded_mib']:.0f} MiB" for n, s in setups.items())
    lines.append(f"  (RSS once the pages are loaded, before building: {loaded}; p50/p95 above: each set-up alone)")
    side = r.get("side_by_side")
    if side:
        lines += format_side_by_side(side)
    lines += _targets(setups, side, r.get("render"))
    render = r.get("render")
    if render:
        size = "x".join(str(v) for v in render["image_size"] or [])
        lines.append(
            f"  render: {render['pages']} pages of {render['pdfs']} PDFs at {render['dpi']} dpi ({size} px): "
            f"p50 {render['render_p50_ms']:.1f} ms, p95 {render['render_p95_ms']:.1f} ms per page (PDF -> PIL image)"
        )
        lines.append(f"  {'encoder':30s} {'median':>9s} {'mean size':>10s} {'max size':>9s}")
        for name, e in render["encoders"].items():
            lines.append(f"  {name:30s} {e['median_ms']:7.1f}ms {e['mean_kib']:7.0f}KiB {e['max_kib']:6.0f}KiB")
    if r.get("broad"):
        lines += format_broad(r["broad"])
    lines += [f"  note: {n}" for n in r.get("notes", [])]
    return lines


def _targets(setups: dict[str, Any], side: dict[str, Any] | None, render: dict[str, Any] | None) -> list[str]:
    """The pass/fail lines; the speed-ups are the side-by-side ones (median over the passes)."""
    checks: list[tuple[str, bool]] = []
    whoosh, tantivy = setups.get("whoosh"), setups.get("tantivy")
    if whoosh and whoosh.get("agreement"):
        identical = whoosh["agreement"]["identical"]
        checks.append((f"whoosh top-k identical to the harness: {100 * identical:.1f}%", identical == 1.0))
    speed = (side or {}).get("speedup_vs_harness", {}).get("whoosh")
    if speed:
        p50, p95 = speed["p50"]["median"], speed["p95"]["median"]
        checks.append(
            (
                f"whoosh p50 {p50:.1f}x lower side by side (target >= {TARGET_P50_SPEEDUP:g}x)",
                p50 >= TARGET_P50_SPEEDUP,
            )
        )
        checks.append(
            (
                f"whoosh p95 {p95:.1f}x lower side by side (target >= {TARGET_P95_SPEEDUP:g}x)",
                p95 >= TARGET_P95_SPEEDUP,
            )
        )
    if tantivy:
        b, p = tantivy["build_s"], tantivy["query_p95_ms"]
        checks.append(
            (f"tantivy build {b:.1f} s (target <= {TARGET_TANTIVY_BUILD_S:g} s)", b <= TARGET_TANTIVY_BUILD_S)
        )
        checks.append((f"tantivy p95 {p:.2f} ms (target <= {TARGET_TANTIVY_P95_MS:g} ms)", p <= TARGET_TANTIVY_P95_MS))
    if render:
        ms = render["render_p50_ms"] + render["encoders"]["madqa encode()"]["median_ms"]
        checks.append(
            (f"render + encode {ms:.1f} ms per page (target <= {TARGET_RENDER_MS:g} ms)", ms <= TARGET_RENDER_MS)
        )
    return [f"  [{'ok' if ok else 'MISS'}] {text}" for text, ok in checks]

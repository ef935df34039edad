"""`madqa bench retrieval`: build time, index size and query throughput of each retriever, side by side.

One corpus of real English: the built sample's pages repeated under new document names up to ``--pages`` (default
5,000; 18,619 is the release's size; the synthetic corpus of ``madqa bench search`` is made of invented words that
wordllama's tokenizer splits into many pieces, 60x slower than English, so it would misstate the embedding cost), and
its questions (the first words of pages): every retriever spec is built from scratch
in a temporary folder (the BM25 index, the page vectors: nothing cached from an earlier run), then all are queried
side by side (each question on every retriever in turn, ``--passes`` times, :func:`.measure.alternate`). Figures
per spec: build seconds, pages embedded or indexed per second, size on disk (the
index folder, the vector cache), and query latency p50/p95. A second build of each ``dense:`` spec shows the cost
of a cache hit.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

from .measure import alternate, emit

DEFAULT_SPECS = "bm25,dense:wordllama,rrf:bm25+dense:wordllama,hybrid:bm25>dense:wordllama"


#: Command lines that ``madqa bench retrieval --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench retrieval --retriever bm25 --pages 1000 --json",)


def configure(parser: argparse.ArgumentParser) -> None:
    """Options of `madqa bench retrieval`."""
    from madqa.agents.corpus.retrieval.spec import add_retriever_argument

    add_retriever_argument(parser, "retrievers to measure", default=DEFAULT_SPECS)
    parser.add_argument("--pages", type=int, default=5000, help="pages of the synthetic corpus")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per retriever")
    parser.add_argument("--passes", type=int, default=3, help="passes over the queries, the retrievers in turn")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def _searcher(retriever: Any) -> Any:
    return lambda question: retriever.search(question, k=10)


def bench_retrieval(specs: list[str], pages: int, queries: int, passes: int = 3) -> dict[str, Any]:
    """Build each spec on one corpus, then query them side by side (``passes`` passes); returns the figures."""
    from madqa.agents.corpus.retrieval.spec import make_retrievers
    from madqa.loading_script.load import DatasetUnavailableError, load_pages

    from . import BenchError

    try:
        sample = [p for p in load_pages("sample") if p.get("text")]
    except DatasetUnavailableError as exc:
        raise BenchError(f"madqa bench retrieval needs the built sample: run `madqa setup` first ({exc})") from None
    corpus = [
        {**p, "document": f"r{i // len(sample)}-{p['document']}"}
        for i, p in zip(range(pages), (sample[i % len(sample)] for i in range(pages)), strict=True)
    ]
    texts = [p["text"] for p in corpus if p["text"]]
    step = max(1, len(texts) // max(1, queries))
    questions = [" ".join(t.split()[:12]) for t in texts[::step]][:queries]
    out: dict[str, Any] = {"pages": len(corpus), "queries": len(questions), "passes": passes, "retrievers": {}}
    retrievers: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        for spec in specs:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="madqa-bench-retrieval-")))
            index_dir, cache_dir = tmp / "index", tmp / "vectors"
            t0 = time.perf_counter()
            (retriever,) = make_retrievers([spec], corpus, index_dir=index_dir, cache_dir=cache_dir)
            build_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            make_retrievers([spec], corpus, index_dir=index_dir, cache_dir=cache_dir)
            reopen_s = time.perf_counter() - t0
            retrievers[retriever.name] = retriever
            out["retrievers"][retriever.name] = {
                "build_s": build_s,
                "pages_per_s": len(corpus) / build_s if build_s else None,
                "reopen_s": reopen_s,
                "index_bytes": _size(index_dir),
                "vector_bytes": _size(cache_dir),
            }
        # The queries: each retriever on question 1, then on question 2, ...: the load falls on all alike.
        timed = alternate({name: _searcher(r) for name, r in retrievers.items()}, questions, passes)
    for name in retrievers:
        p50, p95 = timed.quantile(name, 0.5), timed.quantile(name, 0.95)
        out["retrievers"][name].update(
            query_p50_ms=1000 * p50.median, query_p95_ms=1000 * p95.median, query_p95_ms_spread=vars(p95)
        )
    out["load"] = timed.load_text()
    return out


def run(args: argparse.Namespace) -> int:
    """Run `madqa bench retrieval` and print its figures."""
    specs = [s.strip() for s in args.retriever.split(",") if s.strip()]
    r = bench_retrieval(specs, max(10, args.pages), max(1, args.queries), max(1, args.passes))
    lines = [
        f"corpus: the sample's pages repeated to {r['pages']} pages; {r['queries']} queries each (k = 10), "
        f"{r['passes']} passes with the retrievers in turn (p50/p95: median over the passes); {r['load']}",
        f"{'retriever':34} {'build s':>8} {'pages/s':>8} {'reopen s':>8} {'index MB':>8} {'vectors MB':>10} "
        f"{'p50 ms':>7} {'p95 ms':>7}",
    ]
    for name, f in r["retrievers"].items():
        lines.append(
            f"{name:34} {f['build_s']:8.2f} {f['pages_per_s'] or 0:8.0f} {f['reopen_s']:8.2f} "
            f"{f['index_bytes'] / 1e6:8.2f} {f['vector_bytes'] / 1e6:10.2f} {f['query_p50_ms']:7.2f} "
            f"{f['query_p95_ms']:7.2f}"
        )
    return emit(r, lines, args.json)

"""Measurements behind `madqa bench search` (:mod:`.search`): index build and query cost of each search set-up.

Set-ups, each measured in its own fresh process (so peak RSS is its own) on the same synthetic corpus
(:mod:`.search_corpus`) and the same queries:

* ``harness``: the public MADQA harness's Whoosh use, re-created here: its schema, ``writer(limitmb=512, procs=1,
  multisegment=False)``, and a new searcher and parser per query;
* ``whoosh`` and ``tantivy``: :func:`madqa.agents.corpus.search.open_index` with that backend.

For each: build time, index size on disk, peak RSS (and RSS once the pages are loaded), query latency p50/p95/max
at ``k``, and top-k agreement with the harness set-up (identical ordered lists and mean Jaccard of the page sets).

Then :func:`side_by_side` opens every built index in this one process and times the set-ups query by query in turn
(:func:`.measure.alternate`: harness, whoosh, tantivy on query 1, then on query 2, ..., for several passes), so
the machine's load falls on all of them alike; the speed-ups the bench checks against its targets are these
(per pass, min/median/max), not the ratio of the separate processes' figures (timed one after the other, they
printed 4.9x for a p95 that was 2.7x side by side).
"""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from madqa.agents.corpus.search import PageHit, QuerySyntaxError, SearchTimeoutError

from .measure import alternate, current_rss_mib, max_rss_mib, percentile
from .search_corpus import CorpusSpec, synthetic_pages, synthetic_queries

logger = logging.getLogger(__name__)

SETUPS: tuple[str, ...] = ("harness", "whoosh", "tantivy")


class HarnessStyleWhoosh:
    """The public harness's Whoosh index, as it builds and queries it (a baseline for the bench and the tests)."""

    def __init__(self, folder: Path) -> None:
        """Open an index built by :meth:`build`."""
        from whoosh.index import open_dir

        self.ix = open_dir(str(folder))

    @staticmethod
    def build(pages: Sequence[dict[str, Any]], folder: Path) -> HarnessStyleWhoosh:
        """Index ``pages`` (in order) the way the harness does: one process, ``limitmb=512``, one segment."""
        from whoosh.fields import ID, NUMERIC, TEXT, Schema
        from whoosh.index import create_in

        folder.mkdir(parents=True, exist_ok=True)
        schema = Schema(
            file=ID(stored=True), page_number=NUMERIC(stored=True), total_pages=NUMERIC(stored=True), text=TEXT()
        )
        totals: dict[str, int] = {}
        for p in pages:
            totals[p["document"]] = max(int(p["page"]), totals.get(p["document"], 0))
        ix = create_in(str(folder), schema)
        writer = ix.writer(limitmb=512, procs=1, multisegment=False)
        for p in pages:
            writer.add_document(
                file=p["document"],
                page_number=int(p["page"]),
                total_pages=totals[p["document"]],
                text=p.get("text") or "",
            )
        writer.commit()
        return HarnessStyleWhoosh(folder)

    def search(self, query: str, k: int = 5) -> list[PageHit]:
        """A new searcher and parser per query, as the harness does (an unparsable query returns nothing)."""
        from whoosh.qparser import QueryParser

        with self.ix.searcher() as searcher:
            parsed = QueryParser("text", self.ix.schema).parse(query)
            results = searcher.search(parsed, limit=k)
            return [PageHit(hit["file"], int(hit["page_number"]), float(hit.score)) for hit in results]


def _size_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def measure_setup(name: str, pages_file: str, folder: str, queries: list[str], k: int) -> dict[str, Any]:
    """Build one set-up's index and time its queries (run in a fresh process by :func:`bench_search`)."""
    from madqa.agents.corpus.search import open_index

    with open(pages_file, "rb") as f:
        pages = pickle.load(f)
    loaded = current_rss_mib()
    start = time.perf_counter()
    index: Any
    if name == "harness":
        index = HarnessStyleWhoosh.build(pages, Path(folder))
    else:
        index = open_index(pages, folder, backend=name, progress=False)  # type: ignore[arg-type]
    build_s = time.perf_counter() - start
    del pages
    times: list[float] = []
    top: list[list[tuple[str, int]]] = []
    errors = 0
    for query in queries:
        t0 = time.perf_counter()
        try:
            hits = index.search(query, k)
        except QuerySyntaxError:
            hits, errors = [], errors + 1
        times.append(time.perf_counter() - t0)
        top.append([(h.document, h.page) for h in hits])
    return {
        "setup": name,
        "build_s": build_s,
        "index_mib": _size_mib(Path(folder)),
        "rss_loaded_mib": loaded,
        "peak_rss_mib": max_rss_mib(),
        "query_p50_ms": 1000 * statistics.median(times),
        "query_p95_ms": 1000 * percentile(times, 0.95),
        "query_max_ms": 1000 * max(times),
        "query_errors": errors,
        "top": top,
        "folder": str(index.folder if name != "harness" else folder),
    }


def _open_built(name: str, folder: str) -> Any:
    if name == "harness":
        return HarnessStyleWhoosh(Path(folder))
    if name == "whoosh":
        from madqa.agents.corpus.search import whoosh_backend

        return whoosh_backend.open_existing(Path(folder))
    from madqa.agents.corpus.search import tantivy_backend

    return tantivy_backend.open_existing(Path(folder))


def side_by_side(folders: dict[str, str], queries: list[str], k: int, passes: int) -> dict[str, Any]:
    """Time the built indexes in ``folders`` (set-up name → folder) query by query in turn, ``passes`` times.

    Returns per set-up the spread over the passes of its p50 and p95 (seconds), and per set-up other than the
    harness the spread of the harness's p50 and p95 divided by its own in the same pass, with the load average.
    """
    indexes = {name: _open_built(name, folder) for name, folder in folders.items()}

    def query_with(index: Any) -> Any:
        def search(query: str) -> None:
            try:
                index.search(query, k)
            except (QuerySyntaxError, SearchTimeoutError):  # a refusal or a hit limit is part of the figure
                pass

        return search

    try:
        warm = [q for q in queries if "*" in q or "?" in q][:1] + queries[:1]
        for index in indexes.values():  # the first wildcard loads the word list, the first query warms the searcher
            for query in warm:
                query_with(index)(query)
        timed = alternate({name: query_with(index) for name, index in indexes.items()}, queries, passes)
    finally:
        for index in indexes.values():
            getattr(index, "close", lambda: None)()
    out: dict[str, Any] = {**timed.summary(), "speedup_vs_harness": {}}
    if "harness" in indexes:
        for name in indexes:
            if name != "harness":
                out["speedup_vs_harness"][name] = {
                    "p50": vars(timed.ratio("harness", name, 0.5)),
                    "p95": vars(timed.ratio("harness", name, 0.95)),
                }
    return out


def agreement(top: list[list[tuple[str, int]]], reference: list[list[tuple[str, int]]]) -> dict[str, float]:
    """Share of identical ordered top-k lists and mean Jaccard of the page sets (two empty lists agree).

    >>> agreement([[("a", 1), ("b", 2)]], [[("b", 2), ("a", 1)]])
    {'identical': 0.0, 'jaccard': 1.0}
    """
    same, jac = 0, 0.0
    for a, b in zip(top, reference, strict=True):
        same += a == b
        union = set(a) | set(b)
        jac += len(set(a) & set(b)) / len(union) if union else 1.0
    n = max(1, len(top))
    return {"identical": same / n, "jaccard": jac / n}


def available_setups(requested: Sequence[str]) -> tuple[list[str], list[str]]:
    """The requested set-ups that can run here, and notes on those that cannot."""
    runnable, notes = [], []
    for name in requested:
        if name not in SETUPS:
            raise ValueError(f"unknown set-up {name!r}; choose from {', '.join(SETUPS)}")
        if name == "tantivy":
            try:
                import tantivy  # noqa: F401
            except ImportError:
                notes.append("tantivy skipped: pip install 'madqa[search-tantivy]'")
                continue
        runnable.append(name)
    return runnable, notes


def bench_search(
    spec: CorpusSpec | None = None,
    *,
    setups: Sequence[str] = SETUPS,
    n_queries: int = 300,
    k: int = 5,
    workdir: Path | None = None,
    passes: int = 3,
) -> dict[str, Any]:
    """Run every set-up on one synthetic corpus and return the figures (see the module docstring).

    Args:
        spec: corpus shape (default: MADQA's full scale).
        setups: set-ups to measure; agreement is reported against ``harness`` when it is among them.
        n_queries: number of queries.
        k: results per query.
        workdir: where indexes are built (default: a temporary folder, removed afterwards).
        passes: passes over the queries of :func:`side_by_side` (0: none).
    """
    import multiprocessing

    spec = spec or CorpusSpec()
    names, notes = available_setups(setups)
    root = Path(tempfile.mkdtemp(prefix="madqa-bench-search-", dir=workdir))
    try:
        start = time.perf_counter()
        pages = synthetic_pages(spec)
        corpus_s = time.perf_counter() - start
        queries = synthetic_queries(pages, n_queries, seed=spec.seed)
        tokens = sum(len(p["text"].split()) for p in pages)
        pages_file = root / "pages.pickle"
        with open(pages_file, "wb") as f:
            pickle.dump(pages, f, protocol=pickle.HIGHEST_PROTOCOL)
        documents = len({p["document"] for p in pages})
        del pages
        results: dict[str, dict[str, Any]] = {}
        ctx = multiprocessing.get_context("spawn")
        for name in names:
            logger.info("measuring the %s set-up", name)
            with ProcessPoolExecutor(1, mp_context=ctx) as pool:
                args = (name, str(pages_file), str(root / name), queries, k)
                results[name] = pool.submit(measure_setup, *args).result()
        if "harness" in results:
            for r in results.values():
                r["agreement"] = agreement(r["top"], results["harness"]["top"])
        for r in results.values():
            r.pop("top")
        folders = {name: r.pop("folder") for name, r in results.items()}
        alternated = None
        if passes > 0:
            logger.info("timing %s side by side, %d passes", ", ".join(folders), passes)
            alternated = side_by_side(folders, queries, k, passes)
        return {
            "corpus": {"pages": spec.pages, "documents": documents, "tokens": tokens, "seed": spec.seed},
            "corpus_seconds": corpus_s,
            "queries": len(queries),
            "k": k,
            "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "setups": results,
            "side_by_side": alternated,
            "notes": notes,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)

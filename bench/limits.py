"""``madqa bench limits``: whom the search's work limits refuse, and what an accepted query costs at most.

The limits on a query (:class:`madqa.agents.corpus.search.SearchLimits`) count work, not seconds: words its patterns
expand to (``max_terms``) and page entries its words read (``max_postings``). On the synthetic corpus of
:mod:`.search_corpus` (MADQA's 18,619 pages by default; ``--pages`` scales it) this counts both for the 300 bench
queries and for 24-word OR queries (the shape the seed baselines send,
:func:`madqa.agents.corpus.search.query.or_query`):
50 of random page words and one of the corpus's 24 most frequent words. Then it times, on each backend with the
default limits, the costliest queries the limits still accept: the heaviest of those, an OR of the most frequent
words grown to just under ``max_postings``, and the prefix whose expansion comes closest under ``max_terms``. Those
times bound what any accepted query costs, so they are what the wall-clock safety net must stay far above.

The counts are exact and the same on every machine; the seconds are this machine's (say how busy it was).
"""

from __future__ import annotations

import argparse
import logging
import random
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from .measure import Spread, alternate, emit, percentile

logger = logging.getLogger(__name__)


#: Command lines that ``madqa bench limits --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench limits --pages 5000 --search-backend whoosh --json",)
#: Old spellings accepted for one release (``madqa bench`` warns and names the new one).
DEPRECATED = {"--backend": "--search-backend"}


def configure(parser: argparse.ArgumentParser) -> None:
    """Options of ``madqa bench limits``."""
    parser.add_argument("--pages", type=int, default=None, help="corpus size (unset: MADQA's page count)")
    parser.add_argument(
        "--search-backend", action="append", choices=("whoosh", "tantivy"), help="backends to time (default: both)"
    )
    parser.add_argument("--workdir", help="folder for the temporary indexes (default: the system's)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


class _Count:
    """The work a query would do under the default limits' units, counted without refusing (index internals)."""

    def __init__(self, index: Any) -> None:
        from madqa.agents.corpus.search import SearchLimits, query

        self.index, self.seen = index, []
        seen = self.seen

        class Recording(query.ExpansionBudget):
            def finish(self) -> None:
                seen.append((self.used, self.postings))

        module = __import__(type(index).__module__, fromlist=["ExpansionBudget"])
        self._module, self._original = module, module.ExpansionBudget
        module.ExpansionBudget = Recording
        index.limits = SearchLimits(timeout=None, max_terms=10**12, max_postings=10**15)

    def __call__(self, q: str) -> tuple[int, int]:
        """``(words expanded, page entries)`` of ``q``."""
        self.index.search(q, 5)
        return self.seen[-1]

    def close(self) -> None:
        self._module.ExpansionBudget = self._original


def _queries(pages: list[dict[str, Any]], df: Counter[str], seed: int = 39) -> dict[str, list[str]]:
    from madqa.agents.corpus.search.query import analyze, or_query

    from .search_corpus import synthetic_queries

    rng = random.Random(seed)
    texts = [t for t in (analyze(str(p["text"])) for p in rng.sample(pages, 400)) if len(t) >= 24]
    top = [w for w, _ in df.most_common() if w.isalpha()]
    return {
        "bench": synthetic_queries(pages, 300, seed=0),
        "or24": [or_query(" ".join(rng.sample(t, 24))) for t in texts[:50]],
        "or24_top": [or_query(" ".join(top[:24]))],
        "top_words": top[:400],
    }


def _at_limits(df: Counter[str], words: list[str], max_terms: int, max_postings: int) -> tuple[str, str]:
    """An OR of the most frequent words just under ``max_postings`` (and under the longest query accepted), and the
    prefix whose expansion comes closest under ``max_terms``."""
    from madqa.agents.corpus.search import MAX_QUERY_CHARS

    parts: list[str] = []
    total = 0
    for w in words:
        if total + df[w] > max_postings or len(" OR ".join([*parts, w])) > MAX_QUERY_CHARS:
            break
        parts.append(w)
        total += df[w]
    best = ("", -1, -1)
    for n in (2, 3):
        terms: Counter[str] = Counter()
        entries: Counter[str] = Counter()
        for w, pages in df.items():
            if len(w) > n:
                terms[w[:n]] += 1
                entries[w[:n]] += pages
        for prefix, count in terms.items():
            if count <= max_terms and entries[prefix] <= max_postings and (count, entries[prefix]) > best[1:]:
                best = (prefix, count, entries[prefix])
    return " OR ".join(parts), best[0] + "*"


def run(args: argparse.Namespace) -> int:
    """Count, then time; print the table (or JSON)."""
    from madqa.agents.corpus.search import QueryTooBroadError, SearchLimits, open_index
    from madqa.agents.corpus.search.query import analyze

    from .search_corpus import CorpusSpec, synthetic_pages

    spec = CorpusSpec() if args.pages is None else CorpusSpec().scaled(args.pages)
    pages = synthetic_pages(spec)
    df: Counter[str] = Counter(w for p in pages for w in set(analyze(str(p["text"]))))
    queries = _queries(pages, df)
    limits = SearchLimits()
    assert limits.max_terms is not None and limits.max_postings is not None
    near_postings, near_terms = _at_limits(df, queries.pop("top_words"), limits.max_terms, limits.max_postings)
    root = Path(tempfile.mkdtemp(prefix="madqa-bench-work-", dir=args.workdir))
    figures: dict[str, Any] = {
        "pages": len(pages),
        "max_terms": limits.max_terms,
        "max_postings": limits.max_postings,
        "sets": {},
        "seconds": {},
    }
    try:
        index: Any = open_index(pages, root / "tantivy", backend="tantivy", progress=False)
        count = _Count(index)
        work = {q: count(q) for group in queries.values() for q in group}
        work[near_postings], work[near_terms] = count(near_postings), count(near_terms)
        count.close()
        index.close()
        for name, group in queries.items():
            entries = [work[q][1] for q in group]
            terms = [work[q][0] for q in group]
            refused = sum(1 for q in group if work[q][0] > limits.max_terms or work[q][1] > limits.max_postings)
            figures["sets"][name] = {
                "queries": len(group),
                "max_entries": max(entries),
                "p99_entries": percentile([float(e) for e in entries], 99),
                "max_terms": max(terms),
                "refused": refused,
            }
        heaviest = max((q for group in queries.values() for q in group), key=lambda q: work[q][1])
        timed = {"heaviest": heaviest, "near max_postings": near_postings, "near max_terms": near_terms}
        figures["timed"] = {
            k: {"query": q if len(q) < 60 else q[:57] + "...", "terms": work[q][0], "entries": work[q][1]}
            for k, q in timed.items()
        }
        indexes: dict[str, Any] = {}
        for backend in args.search_backend or ["whoosh", "tantivy"]:
            logger.info("building the %s index of %d pages", backend, len(pages))
            indexes[backend] = open_index(pages, root / backend, backend=backend, progress=False)  # type: ignore[arg-type]
            indexes[backend].limits = limits
        outcomes: dict[tuple[str, str], str] = {}

        def searching(backend: str) -> Any:
            def search(q: str) -> None:
                try:
                    indexes[backend].search(q, 5)
                    outcomes[backend, q] = "answered"
                except QueryTooBroadError:
                    outcomes[backend, q] = "refused"

            return search

        for backend in indexes:  # warm: the word list and the searcher
            for q in timed.values():
                searching(backend)(q)
        # The backends in turn on each query, 3 times: the machine's load falls on both alike.
        alternated = alternate({b: searching(b) for b in indexes}, list(timed.values()), repeats=3)
        figures["load"] = alternated.load_text()
        for backend, index in indexes.items():
            index.close()
            figures["seconds"][backend] = {}
            for i, (name, q) in enumerate(timed.items()):
                spread = Spread.of([rep[i] for rep in alternated.seconds[backend]])
                figures["seconds"][backend][name] = {
                    "seconds": round(spread.median, 3),
                    "spread": vars(spread),
                    "outcome": outcomes[backend, q],
                }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = [
        f"search work limits on {figures['pages']:,} synthetic pages (max_terms {limits.max_terms:,}, "
        f"max_postings {limits.max_postings:,}); seconds: median of 3, the backends in turn; {figures['load']}"
    ]
    for name, row in figures["sets"].items():
        lines.append(
            f"  {name:9s} {row['queries']:4d} queries: page entries max {row['max_entries']:,} "
            f"(p99 {row['p99_entries']:,.0f}), words expanded max {row['max_terms']:,}, "
            f"refused {row['refused']}"
        )
    for name, row in figures["timed"].items():
        cells = "  ".join(f"{b} {s[name]['seconds']:.3f}s {s[name]['outcome']}" for b, s in figures["seconds"].items())
        lines.append(f"  {name:18s} {row['terms']:6,} words {row['entries']:>10,} entries  {cells}  [{row['query']}]")
    return emit(figures, lines, args.json)

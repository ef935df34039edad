"""Whoosh query and collector classes that honour a search's :class:`~madqa.agents.corpus.search.base.Deadline` (the
wall-clock safety net; what a query may cost is bounded beforehand by the work limits, see :mod:`.whoosh_backend`).

Used by :mod:`.whoosh_backend`. Each class is defined on first use (Whoosh is imported lazily) and copies the
named Whoosh 2.7.4 method, adding a deadline check between units of work.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Any

from madqa.agents.corpus.search.base import Deadline

#: Pages collected between two deadline checks.
CHECK_EVERY = 64


@lru_cache(maxsize=1)
def deadline_every_class() -> Any:
    """Whoosh's ``Every`` (``*``) with a deadline check per word of the field (defined lazily)."""
    from array import array

    from whoosh import matching
    from whoosh.query import Every

    class DeadlineEvery(Every):
        """``Every.matcher`` (Whoosh 2.7.4): the union of every word's pages, checking the deadline per word."""

        def __init__(self, fieldname: str | None, boost: float, deadline: Deadline) -> None:
            super().__init__(fieldname, boost)
            self.deadline = deadline

        def matcher(self, searcher: Any, context: Any = None) -> Any:
            if self.fieldname in (None, "", "*"):
                return matching.ListMatcher(array("I", searcher.reader().all_doc_ids()), all_weights=self.boost)
            docs: set[int] = set()
            for text in searcher.lexicon(self.fieldname):
                self.deadline.check()
                docs.update(searcher.postings(self.fieldname, text).all_ids())
            return matching.ListMatcher(sorted(docs), all_weights=self.boost)

    return DeadlineEvery


@lru_cache(maxsize=1)
def deadline_collector_class() -> Any:
    """A wrapping collector that checks a :class:`Deadline` every :data:`CHECK_EVERY` pages (defined lazily)."""
    from whoosh.collectors import WrappingCollector

    class DeadlineCollector(WrappingCollector):
        """Collects through the wrapped collector (its ``matches()`` keeps the block skipping), checking the time."""

        def __init__(self, child: Any, deadline: Deadline) -> None:
            super().__init__(child)
            self.deadline = deadline

        def collect_matches(self) -> None:
            child, check, n = self.child, self.deadline.check, 0
            for sub_docnum in child.matches():
                child.collect(sub_docnum)
                n += 1
                if n % CHECK_EVERY == 0:
                    check()

    return DeadlineCollector


@lru_cache(maxsize=1)
def pinned_terms_class() -> Any:
    """A Whoosh multi-term query with a precomputed term list (defined lazily: Whoosh is imported on use)."""
    from whoosh import matching
    from whoosh.query import MultiTerm, Or, Term

    class DeadlineTerm(Term):
        """A term query that checks the search's deadline before opening its posting list."""

        def __init__(self, fieldname: str, text: bytes, deadline: Deadline) -> None:
            super().__init__(fieldname, text)
            self.deadline = deadline

        def matcher(self, searcher: Any, context: Any = None) -> Any:
            self.deadline.check()
            return super().matcher(searcher, context)

    class PinnedTerms(MultiTerm):
        """The terms of a wildcard, prefix or range query, expanded beforehand; matched and scored as ``MultiTerm``."""

        def __init__(
            self, original: Any, btexts: tuple[bytes, ...], deadline: Deadline | None = None, preload: bool = False
        ) -> None:
            self.fieldname = original.fieldname
            self.text = getattr(original, "text", None)
            self.boost = original.boost
            self.constantscore = original.constantscore
            self.btexts = btexts
            self.deadline = deadline
            self.preload = preload

        def _btexts(self, ixreader: Any) -> Any:
            return iter(self.btexts)

        def matcher(self, searcher: Any, context: Any = None) -> Any:
            """Whoosh's own matcher for the terms, scored in advance when :attr:`preload` is set (same scores)."""
            built = self._matcher(searcher, context)
            return preloaded_union(built, self.deadline) if self.preload else built

        def _matcher(self, searcher: Any, context: Any = None) -> Any:
            """``MultiTerm.matcher`` (Whoosh 2.7.4), with term queries that check the deadline when it is active."""
            deadline = self.deadline
            if deadline is None or not deadline.active:
                return super().matcher(searcher, context)
            qs = [DeadlineTerm(self.fieldname, word, deadline) for word in self.btexts if word]
            if not qs:
                return matching.NullMatcher()
            if len(qs) == 1:
                return qs[0].matcher(searcher, context)
            if self.constantscore:
                if context:
                    context = context.set(weighting=None)
                else:
                    from whoosh.searching import SearchContext

                    context = SearchContext(weighting=None)
            return Or(qs, boost=self.boost).matcher(searcher, context)

        def __eq__(self, other: object) -> bool:
            return isinstance(other, PinnedTerms) and (self.fieldname, self.btexts, self.boost) == (
                other.fieldname,
                other.btexts,
                other.boost,
            )

        def __hash__(self) -> int:
            return hash((self.fieldname, self.btexts, self.boost))

        def __repr__(self) -> str:
            return f"PinnedTerms({self.fieldname!r}, {self.text!r}, {len(self.btexts)} terms)"

    return PinnedTerms


def preloaded_union(matcher: Any, deadline: Deadline | None = None) -> Any:
    """A tree of Whoosh ``UnionMatcher``s (what ``Or`` builds for fewer than 1,024 words) read in full into one
    ``ListMatcher`` with the same pages and bit-identical scores; any other matcher is returned as it is.

    Why: the top-k collector re-plans the union after every page it collects (``UnionMatcher.replace`` walks the
    whole tree for its ``max_quality``), so a prefix of a few hundred words cost seconds (``hef*``: 6,442 pages,
    17 s on a loaded machine) where reading every posting once costs milliseconds. Each leaf's postings are scored
    by its own scorer, and the sums follow the tree exactly (a node adds its two children's scores where both
    have the page, as ``UnionMatcher.score`` does), so every float is the one Whoosh would compute. The list
    supports no block skipping, which only ever skips pages that cannot enter the top k (the backend keeps the
    unread path for queries with ``NOT``, whose skipping has a quirk the harness's results carry).
    """
    from whoosh.matching import ListMatcher, UnionMatcher, WrappingMatcher

    root = matcher.child if type(matcher) is WrappingMatcher else matcher
    if type(root) is not UnionMatcher:
        return matcher
    # Post-order without recursion (a weighted tree of hundreds of words can be deeper than Python's stack); each
    # node's pages and scores go on ``done``, a union takes its two children's back off it.
    done: list[dict[int, float]] = []
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if type(node) is UnionMatcher:
            if not children_done:
                stack += [(node, True), (node.b, False), (node.a, False)]
                continue
            b, merged = done.pop(), done.pop()
            for doc, score in b.items():
                merged[doc] = merged[doc] + score if doc in merged else score
            done.append(merged)
        else:
            if deadline is not None:
                deadline.check()
            leaf: dict[int, float] = {}
            while node.is_active():
                leaf[node.id()] = node.score()
                node.next()
            done.append(leaf)
    (pages,) = done
    ids = sorted(pages)
    boost = matcher.boost if root is not matcher else 1.0  # Or's boost: WrappingMatcher.score multiplies the union's
    weights = [pages[d] * boost for d in ids] if boost != 1.0 else [pages[d] for d in ids]
    return _preloaded_matcher_class(ListMatcher)(ids, weights)


@lru_cache(maxsize=1)
def _preloaded_matcher_class(list_matcher: type) -> Any:
    class PreloadedMatcher(list_matcher):
        """A ``ListMatcher`` of scored pages whose ``max_quality`` is the best score still ahead, read from a table
        (``ListMatcher`` takes the ``max`` of all its weights on every call: the collector asks after every page)."""

        def __init__(self, ids: list[int], weights: list[float], position: int = 0, best_ahead: Any = None) -> None:
            super().__init__(ids, weights, position=position)
            self._best_ahead = best_ahead or list(itertools.accumulate(reversed(weights), max))[::-1]

        def copy(self) -> Any:
            return type(self)(self._ids, self._weights, self._i, self._best_ahead)

        def max_quality(self) -> float:
            return float(self._best_ahead[self._i]) if self._i < len(self._ids) else 0.0

    return PreloadedMatcher

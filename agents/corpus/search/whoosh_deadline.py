"""Whoosh query and collector classes that honour a search's :class:`~madqa.agents.corpus.search.base.Deadline` (the
wall-clock safety net; what a query may cost is bounded beforehand by the work limits, see :mod:`.whoosh_backend`).

Used by :mod:`.whoosh_backend`. Each class is defined on first use (Whoosh is imported lazily) and copies the
named Whoosh 2.7.4 method, adding a deadline check between units of work.
"""

from __future__ import annotations

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

        def __init__(self, original: Any, btexts: tuple[bytes, ...], deadline: Deadline | None = None) -> None:
            self.fieldname = original.fieldname
            self.text = getattr(original, "text", None)
            self.boost = original.boost
            self.constantscore = original.constantscore
            self.btexts = btexts
            self.deadline = deadline

        def _btexts(self, ixreader: Any) -> Any:
            return iter(self.btexts)

        def matcher(self, searcher: Any, context: Any = None) -> Any:
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

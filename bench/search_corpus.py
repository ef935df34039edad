"""A deterministic synthetic page corpus at MADQA's scale, and search queries over it (for `madqa bench search`).

The real corpus has 18,619 pages (≈ 12.2M tokens) in 800 documents whose lengths have median 5, mean 23.3 and
maximum 859 pages. :func:`synthetic_pages` reproduces those totals exactly (document lengths from log-normal
quantiles, adjusted to the exact total and maximum) with text drawn from a Zipf-like vocabulary (rank^-1 over
300,000 word types; Whoosh's stop words take the top ranks, so about a third of the tokens are stop words, as in
English; one type in ten is a number) plus per-document topic words, so BM25 has rare and common terms to weigh.
Generation is vectorised with NumPy (about 5 s at full scale). Words are made of two-letter syllables, so they are
unique and pronounceable but not English; text has no punctuation or capitals.

:func:`synthetic_queries` samples queries of every supported syntax from the pages themselves, so most match.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Any

#: MADQA's full-scale figures.
FULL_PAGES = 18_619
FULL_DOCUMENTS = 800
FULL_TOKENS = 12_200_000
FULL_MAX_DOC_PAGES = 859

_COMMON = (
    "the of and to in is for that on with as by at this be are from or it an will not we you your can have if may "
    "us when yet tbd"
).split()
_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"][:64]


@dataclass(frozen=True)
class CorpusSpec:
    """Shape of a synthetic corpus; the defaults are MADQA's full scale.

    Attributes:
        pages: total pages.
        documents: number of documents.
        tokens: total whitespace-separated tokens.
        max_doc_pages: pages of the longest document.
        median_doc_pages: median document length (log-normal location).
        vocabulary: word types in the Zipf distribution.
        zipf: Zipf exponent.
        topic_share: share of tokens drawn from the document's own topic words.
        empty_share: share of pages without text (blank or image-only pages).
        seed: random seed.
    """

    pages: int = FULL_PAGES
    documents: int = FULL_DOCUMENTS
    tokens: int = FULL_TOKENS
    max_doc_pages: int = FULL_MAX_DOC_PAGES
    median_doc_pages: int = 5
    vocabulary: int = 300_000
    zipf: float = 1.0
    topic_share: float = 0.08
    empty_share: float = 0.03
    seed: int = 0

    def scaled(self, pages: int) -> CorpusSpec:
        """The same corpus shape with ``pages`` pages (documents, tokens and the longest document scale along)."""
        f = pages / self.pages
        return replace(
            self,
            pages=pages,
            documents=max(1, round(self.documents * f)),
            tokens=max(pages, round(self.tokens * f)),
            max_doc_pages=max(1, min(pages, round(self.max_doc_pages * f))),
        )


def document_lengths(spec: CorpusSpec) -> list[int]:
    """Pages per document: log-normal quantiles (median ``median_doc_pages``), adjusted to the exact totals.

    >>> lengths = document_lengths(CorpusSpec())
    >>> len(lengths), sum(lengths), max(lengths), sorted(lengths)[len(lengths) // 2]
    (800, 18619, 859, 5)
    """
    n, total = spec.documents, spec.pages
    if n >= total:
        return [1] * total
    mean = total / n
    mu = math.log(spec.median_doc_pages)
    # sigma from mean = exp(mu + sigma^2 / 2), then quantiles; the tail is capped at the maximum below.
    sigma = math.sqrt(max(2 * (math.log(mean) - mu), 0.01))
    normal = NormalDist()
    lengths = sorted(max(1, round(math.exp(mu + sigma * normal.inv_cdf((i + 0.5) / n)))) for i in range(n))
    cap = max(spec.max_doc_pages, math.ceil(total / n))
    lengths = [min(x, cap) for x in lengths]
    lengths[-1] = cap
    # Spread the remaining difference over the upper half, largest first, so the median stays where it is.
    diff, half = total - sum(lengths), n // 2 + 1
    floor = lengths[n // 2]
    while diff:
        step = 1 if diff > 0 else -1
        movable = [i for i in range(n - 2, half - 1, -1) if (lengths[i] < cap if step > 0 else lengths[i] > floor)]
        if not movable:  # tiny corpora: let any document absorb the rest
            movable = [i for i in range(n - 1, -1, -1) if lengths[i] + step >= 1]
        for i in movable[: abs(diff)]:
            lengths[i] += step
            diff -= step
    random.Random(spec.seed).shuffle(lengths)
    return lengths


def _vocabulary(spec: CorpusSpec) -> list[str]:
    from whoosh.analysis import STOP_WORDS

    # Stop words first, roughly in English frequency order; any others Whoosh lists follow.
    words = [w for w in _COMMON if w in STOP_WORDS] + sorted(set(STOP_WORDS) - set(_COMMON))
    rank = 0
    while len(words) < spec.vocabulary:
        rank += 1
        if rank % 10 == 7:  # one type in ten is a number: integers and amounts with cents
            words.append(str(1000 + rank) if rank % 20 == 7 else f"{rank // 100}.{rank % 100:02d}")
            continue
        n, parts = rank + 64, []
        while n:
            n, r = divmod(n, 64)
            parts.append(_SYLLABLES[r])
        words.append("".join(parts))
    return words


def synthetic_pages(spec: CorpusSpec | None = None) -> list[dict[str, Any]]:
    """Pages rows (``document, page, text, text_source``) of a synthetic corpus, in document order."""
    import numpy as np

    spec = spec or CorpusSpec()
    rng = np.random.default_rng(spec.seed)
    lengths = document_lengths(spec)
    words = np.array(_vocabulary(spec), dtype=object)
    weights = 1.0 / np.arange(1, len(words) + 1, dtype=np.float64) ** spec.zipf
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]

    sizes = rng.gamma(1.6, 1.0, spec.pages) * (rng.random(spec.pages) >= spec.empty_share)
    sizes = np.floor(sizes * spec.tokens / max(sizes.sum(), 1e-9)).astype(np.int64)
    sizes[np.argmax(sizes)] += spec.tokens - int(sizes.sum())
    ids = np.minimum(np.searchsorted(cdf, rng.random(spec.tokens)), len(words) - 1)

    # Topic words: each document favours 24 mid-frequency types.
    doc_of_page = np.repeat(np.arange(len(lengths)), lengths)
    doc_of_token = np.repeat(doc_of_page, sizes)
    topics = rng.integers(500, min(60_000, len(words)), size=(len(lengths), 24))
    on_topic = rng.random(spec.tokens) < spec.topic_share
    ids[on_topic] = topics[doc_of_token[on_topic], rng.integers(0, 24, int(on_topic.sum()))]

    names = [f"{1_000_000 + (i * 7_919) % 9_000_000}.pdf" for i in range(len(lengths))]
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    rows: list[dict[str, Any]] = []
    page_index = 0
    for d, n_pages in enumerate(lengths):
        for p in range(1, n_pages + 1):
            a, b = bounds[page_index], bounds[page_index + 1]
            text = " ".join(words[ids[a:b]].tolist())
            rows.append({"document": names[d], "page": p, "text": text, "text_source": "ocr" if text else "none"})
            page_index += 1
    return rows


def synthetic_queries(pages: list[dict[str, Any]], n: int = 300, seed: int = 0) -> list[str]:
    """``n`` queries of the supported syntax, built from words of randomly chosen pages.

    Mix: 15% single words, 25% two or three words (implicit AND), 10% ``AND``, 10% ``OR``, 10% ``NOT``, 15% phrases,
    10% prefix wildcards (``abc*``, three to five letters) and 5% ``?`` wildcards.
    """
    from madqa.agents.corpus.search.query import analyze

    rng = random.Random(seed)
    texts = [analyze(str(p["text"])) for p in rng.sample(pages, min(len(pages), 4 * n))]
    texts = [t for t in texts if len(t) >= 8]
    if not texts:
        raise ValueError("the pages have too little text to sample queries from")
    kinds = ["one"] * 15 + ["two"] * 25 + ["and"] * 10 + ["or"] * 10 + ["not"] * 10 + ["phrase"] * 15
    kinds += ["prefix"] * 10 + ["single"] * 5
    queries: list[str] = []
    while len(queries) < n:
        toks = texts[len(queries) % len(texts)]
        kind = kinds[len(queries) % len(kinds)]
        words = [t for t in toks if t.isalpha()] or toks
        a, b, _ = (rng.choice(words) for _ in range(3))  # three draws: keeps the seeded query set unchanged
        if kind == "one":
            q = a
        elif kind == "two":
            q = " ".join(rng.sample(words, min(len(words), rng.choice((2, 3)))))
        elif kind == "and":
            q = f"{a} AND {b}"
        elif kind == "or":
            q = f"{a} OR {b}"
        elif kind == "not":
            q = f"{a} NOT {b}"
        elif kind == "phrase":
            i = rng.randrange(len(toks) - 1)
            q = f'"{toks[i]} {toks[i + 1]}"'
        elif kind == "prefix":
            q = a[: rng.randint(3, 5)] + "*"
        else:
            i = rng.randrange(1, len(a)) if len(a) > 1 else 0
            q = a[:i] + "?" + a[i + 1 :]
        queries.append(q)
    rng.shuffle(queries)
    return queries

"""The retrieval tests' stand-in encoder: one unit vector per word, seeded by the word, so that MaxSim and fused
scores can be computed by hand in a test (tests/agents/corpus/test_retrieval_late.py,
tests/agents/corpus/test_retrieval_heaven.py).

The real encoders run on tiny randomly initialised models in tests/agents/corpus/test_retrieval_late_models.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np


def word_vector(word: str, dim: int = 16) -> np.ndarray:
    """The word's unit vector (the same on every run and machine)."""
    seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class WordEncoder:
    """One vector per word (multi-vector), or their normalised mean (``single``).

    ``page_batches`` records each call's pages (a page image carries its text in ``info["text"]``); ``query_tokens``
    are the query's words, as a multi-vector text encoder tells them (``tokens=False``: an encoder that cannot).
    """

    def __init__(
        self,
        modality: str = "text",
        single: bool = False,
        batch_size: int = 2,
        key: str = "v1",
        tokens: bool = True,
        dim: int = 16,
    ) -> None:
        self.modality, self.single, self.batch_size, self.dim = modality, single, batch_size, dim
        self.name = "colbert:words" if not single else "dse:words"
        self.cache_key = f"{self.name}|{key}"
        self.page_batches: list[list[Any]] = []
        if not tokens:
            self.query_tokens = None  # type: ignore[assignment]

    def _vectors(self, text: str) -> np.ndarray:
        words = text.split()
        rows = np.stack([word_vector(w, self.dim) for w in words]) if words else np.zeros((0, self.dim), np.float32)
        if self.single and len(rows):
            mean = rows.mean(axis=0)
            return (mean / np.linalg.norm(mean))[None, :]
        return rows

    def encode_queries(self, queries: Sequence[str]) -> list[np.ndarray]:
        return [self._vectors(q) for q in queries]

    def encode_pages(self, pages: Sequence[Any]) -> list[np.ndarray]:
        self.page_batches.append(list(pages))
        return [self._vectors(p if isinstance(p, str) else p.info["text"]) for p in pages]

    def query_tokens(self, queries: Sequence[str]) -> list[list[str]]:
        return [q.split() for q in queries]

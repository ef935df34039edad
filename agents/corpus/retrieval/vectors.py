"""Page vectors on disk for ``colbert:``, ``colpali:`` and ``dse:``: one store, MaxSim scoring, the cache key.

A :class:`VectorStore` holds one or more vectors per page (token vectors of a late-interaction model, or the one
pooled vector of a single-vector model) as **float16** in one flat file, ``tokens.f16`` (rows of ``dim`` values),
with ``offsets.npy`` (int64, pages + 1) giving each page's rows. It is read **memory-mapped**, so a corpus's vectors
are paged in by the OS, never loaded whole: ColQwen2.5 at about 750 vectors of 128 dims per page is about 190 KiB a
page, 3.4 GiB for the 18,619 pages of the release, on disk.

Scoring (:func:`maxsim_scores`) walks the store in chunks of at most ``chunk_mb`` MiB of float32 similarities
(:data:`SCORE_CHUNK_MB`), so a search's working memory is bounded whatever the corpus size. MaxSim (Khattab &
Zaharia 2020): a page's score is the sum over query vectors of the largest dot product with any of the page's
vectors; with one vector on each side it is the dot product (cosine for unit vectors).

A store is written batch by batch (:class:`StoreWriter`), the manifest last, so a half-written cache is never read;
its folder is keyed (:func:`cache_folder`) by encoder, settings and page content, as ``dense:`` caches are.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from madqa.agents.corpus.retrieval.base import manifest_seconds

#: Bump when the file layout or what is embedded changes: old caches are rebuilt.
STORE_VERSION = 1
#: Upper bound of one scoring chunk's float32 similarity matrix (query vectors x page vectors), in MiB.
SCORE_CHUNK_MB = 64

FloatArray = npt.NDArray[np.float32]


def cache_folder(root: Path, cache_key: str, content_digest: str) -> tuple[Path, str]:
    """The folder of the vectors of ``cache_key`` (encoder and settings) over content ``content_digest``."""
    digest = hashlib.sha256(f"vs{STORE_VERSION}\0{cache_key}\0{content_digest}".encode()).hexdigest()
    return root / digest[:24], digest


class VectorStore:
    """The vectors of a corpus's pages, memory-mapped (see the module docstring).

    Attributes:
        offsets: int64 array, pages + 1: page ``i`` owns rows ``offsets[i]:offsets[i + 1]``.
        dim: vector size.
        build_seconds: the seconds its writing took (from the manifest; ``None`` for a store written before it was
            recorded).
    """

    def __init__(self, tokens: npt.NDArray[np.float16], offsets: npt.NDArray[np.int64]) -> None:
        self.tokens, self.offsets = tokens, offsets
        self.dim = int(tokens.shape[1]) if tokens.ndim == 2 else 0
        self.build_seconds: float | None = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def page(self, i: int) -> FloatArray:
        """Page ``i``'s vectors as float32 ``(n, dim)``."""
        return np.asarray(self.tokens[self.offsets[i] : self.offsets[i + 1]], dtype=np.float32)

    @property
    def nbytes(self) -> int:
        """Bytes of the vectors on disk."""
        return int(self.tokens.size) * 2

    @classmethod
    def open(cls, folder: Path, digest: str, pages: int) -> VectorStore | None:
        """The store in ``folder`` if its manifest matches ``digest`` and ``pages``; ``None`` otherwise."""
        try:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
            if manifest.get("digest") != digest or manifest.get("pages") != pages:
                return None
            offsets = np.load(folder / "offsets.npy", allow_pickle=False)
            dim, rows = int(manifest["dim"]), int(offsets[-1])
            if len(offsets) != pages + 1 or rows != int(manifest["rows"]):
                return None
            shape = (rows, dim)
            tokens: Any = (
                np.memmap(folder / "tokens.f16", dtype=np.float16, mode="r", shape=shape)
                if rows
                else np.zeros(shape, dtype=np.float16)
            )
            store = cls(tokens, offsets.astype(np.int64, copy=False))
            store.build_seconds = manifest_seconds(manifest)
            return store
        except (OSError, ValueError, KeyError, TypeError):
            return None


class StoreWriter:
    """Writes a store's vectors page by page (in batches), then its offsets and, last, its manifest (with the
    seconds from this writer's creation to its close: the encoding's cost, ``build_seconds``)."""

    def __init__(self, folder: Path, digest: str, info: dict[str, Any] | None = None) -> None:
        self._start = time.perf_counter()
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.digest, self.info = folder, digest, dict(info or {})
        self._tmp = folder / f"tokens.{os.getpid()}.tmp"
        self._fh = self._tmp.open("wb")
        self._offsets = [0]
        self.dim: int | None = None

    def add(self, pages: Sequence[npt.NDArray[Any]]) -> None:
        """Append the vectors of the next pages (one ``(n_i, dim)`` array each, in corpus order)."""
        for vectors in pages:
            v = np.asarray(vectors, dtype=np.float32)
            if v.ndim == 1:
                v = v[None, :]
            if self.dim is None:
                self.dim = int(v.shape[1])
            if v.ndim != 2 or v.shape[1] != self.dim:
                raise ValueError(f"page vectors of shape {v.shape} in a store of dim {self.dim}")
            self._fh.write(np.ascontiguousarray(v, dtype=np.float16).tobytes())
            self._offsets.append(self._offsets[-1] + int(v.shape[0]))

    def close(self) -> VectorStore:
        """Finish the files and return the store, opened memory-mapped."""
        self._fh.close()
        pages = len(self._offsets) - 1
        os.replace(self._tmp, self.folder / "tokens.f16")
        np.save(self.folder / "offsets.npy", np.asarray(self._offsets, dtype=np.int64), allow_pickle=False)
        manifest = {
            "digest": self.digest,
            "pages": pages,
            "rows": self._offsets[-1],
            "dim": self.dim or 0,
            **self.info,
            "build_seconds": round(time.perf_counter() - self._start, 3),
        }
        (self.folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        store = VectorStore.open(self.folder, self.digest, pages)
        if store is None:  # pragma: no cover - only on a disk that loses what was just written
            raise OSError(f"the vector store in {self.folder} could not be read back")
        return store


def maxsim(query: npt.NDArray[Any], page: npt.NDArray[Any]) -> float:
    """MaxSim of one query ``(q, d)`` against one page ``(n, d)``: sum over query rows of the best dot product."""
    if not len(query) or not len(page):
        return 0.0
    return float((np.asarray(query, np.float32) @ np.asarray(page, np.float32).T).max(axis=1).sum())


def maxsim_scores(
    query: npt.NDArray[Any], store: VectorStore, rows: Sequence[int] | None = None, chunk_mb: float = SCORE_CHUNK_MB
) -> FloatArray:
    """MaxSim of ``query`` ``(q, d)`` against the store's pages ``rows`` (all pages when ``None``), in that order.

    Pages are scored in chunks whose similarity matrix stays under ``chunk_mb`` MiB; a page without vectors
    scores 0.
    """
    q = np.asarray(query, dtype=np.float32)
    if q.ndim == 1:
        q = q[None, :]
    order = np.arange(len(store), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    out = np.zeros(len(order), dtype=np.float32)
    if not len(order) or not len(q):
        return out
    budget = max(1, int(chunk_mb * 1024 * 1024 // (4 * len(q))))  # page vectors per chunk
    starts, ends = store.offsets[order], store.offsets[order + 1]
    contiguous = rows is None
    i = 0
    while i < len(order):
        j, total = i, 0
        while j < len(order) and (j == i or total + int(ends[j] - starts[j]) <= budget):
            total += int(ends[j] - starts[j])
            j += 1
        lengths = ends[i:j] - starts[i:j]
        if contiguous:
            block = np.asarray(store.tokens[starts[i] : ends[j - 1]], dtype=np.float32)
        else:
            block = np.concatenate(
                [np.asarray(store.tokens[s:e], dtype=np.float32) for s, e in zip(starts[i:j], ends[i:j], strict=True)]
                or [np.zeros((0, store.dim), np.float32)]
            )
        if len(block):
            sims = q @ block.T  # (q, rows of the chunk)
            bounds = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            nonempty = lengths > 0
            best = np.maximum.reduceat(sims, bounds[nonempty], axis=1) if nonempty.any() else None
            if best is not None:
                out[i:j][nonempty] = best.sum(axis=0)
        i = j
    return out

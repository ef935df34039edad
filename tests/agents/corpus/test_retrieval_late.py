"""The learned-vector retrievers' own machinery, without torch: the float16 memory-mapped store, MaxSim against
hand-made tensors, the page-vector cache and what invalidates it, batching, re-ranking, HEAVEN's score weighting,
rrf, and the spec syntax (options, HEAVEN defaults, the missing-extra message). A deterministic word-vector
encoder stands in for the models here; tests/agents/corpus/test_retrieval_late_models.py runs the real encoders on tiny
models."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.word_encoder import WordEncoder
from PIL import Image

from madqa.agents.corpus.retrieval import encoders, spec
from madqa.agents.corpus.retrieval.base import RetrievalError
from madqa.agents.corpus.retrieval.fusion import HybridRetriever, RRFRetriever
from madqa.agents.corpus.retrieval.late import VectorRetriever
from madqa.agents.corpus.retrieval.spec import make_retriever, parse_options
from madqa.agents.corpus.retrieval.vectors import StoreWriter, VectorStore, cache_folder, maxsim, maxsim_scores
from madqa.agents.corpus.search.base import PageHit
from madqa.agents.corpus.search.index import prepare_pages

PAGES = [
    {"document": "zoo.pdf", "page": 1, "text": "penguins eat herring at the zoo"},
    {"document": "zoo.pdf", "page": 2, "text": "elephants bathe in the pool"},
    {"document": "tax.pdf", "page": 1, "text": "income tax returns are due in april"},
    {"document": "rail.pdf", "page": 1, "text": "the night train departs at eleven"},
]


class FakeRenderer:
    """The renderer's interface as the image retrievers use it: images (carrying their page text) and file paths."""

    dpi, max_side, max_pixels = 150, 2000, None

    def __init__(self, folder: Path) -> None:
        self.folder, self.texts = folder, {(p["document"], p["page"]): p["text"] for p in PAGES}
        for doc in {p["document"] for p in PAGES}:
            (folder / doc).write_bytes(b"%PDF-1.4 " + doc.encode())

    def _path(self, document: str) -> Path:
        return self.folder / document

    def image(self, document: str, page: int) -> Image.Image:
        img = Image.new("RGB", (8, 8), "white")
        img.info["text"] = self.texts[(document, page)]
        return img


def build(encoder: WordEncoder, tmp_path: Path, pages: list[dict[str, Any]] = PAGES, **kw: Any) -> VectorRetriever:
    return VectorRetriever(encoder, prepare_pages(pages), cache_dir=tmp_path / "vec", **kw)


def test_maxsim_against_hand_made_tensors(tmp_path: Path) -> None:
    q = np.array([[1, 0], [0, 1]], np.float32)
    a, b, empty = np.array([[1, 0], [0.5, 0.5]]), np.array([[0, 1]]), np.zeros((0, 2))
    assert maxsim(q, a) == 1.5 and maxsim(q, b) == 1.0 and maxsim(q, empty) == 0.0
    folder, digest = cache_folder(tmp_path, "k", "c")
    writer = StoreWriter(folder, digest)
    writer.add([a, b, empty, np.array([[-1.0, 0.0]])])  # the last: q1 -> -1, q2 -> 0
    store = writer.close()
    assert isinstance(store.tokens, np.memmap) and store.tokens.dtype == np.float16 and store.nbytes == 4 * 2 * 2
    assert maxsim_scores(q, store).tolist() == [1.5, 1.0, 0.0, -1.0]
    assert maxsim_scores(q, store, [3, 1, 0]).tolist() == [-1.0, 1.0, 1.5]
    tiny = 2 * 4 * 2 / (1024 * 1024)  # a chunk of two page vectors: pages are scored a few at a time
    assert maxsim_scores(q, store, chunk_mb=tiny).tolist() == [1.5, 1.0, 0.0, -1.0]
    assert maxsim_scores(q, store, [2, 0], chunk_mb=tiny).tolist() == [0.0, 1.5]
    assert VectorStore.open(folder, digest, 3) is None and VectorStore.open(folder, "other", 4) is None


def test_search_ranks_by_maxsim_and_reranks_given_pages(tmp_path: Path) -> None:
    retriever = build(WordEncoder(), tmp_path)
    hits = retriever.search("penguins herring", k=2)
    assert (hits[0].document, hits[0].page) == ("zoo.pdf", 1) and hits[0].score == pytest.approx(2.0, abs=1e-2)
    assert len(hits) == 2 and hits[0].score > hits[1].score
    assert retriever.search("   ") == [] and retriever.search("x", k=0) == []
    assert len(retriever.search("the", k=99)) == len(PAGES)
    got = retriever.rerank("night train", [("zoo.pdf", 1), ("nope.pdf", 9), ("rail.pdf", 1)])
    assert [(h.document, h.page) for h in got] == [("rail.pdf", 1), ("zoo.pdf", 1)]
    expected = maxsim(WordEncoder()._vectors("night train"), retriever.store.page(3))
    assert got[0].score == pytest.approx(expected, abs=1e-6)


def test_cache_is_reused_and_invalidated_by_content_and_settings(tmp_path: Path) -> None:
    first = WordEncoder()
    build(first, tmp_path)
    assert sum(map(len, first.page_batches)) == len(PAGES)
    again = WordEncoder()
    reopened = build(again, tmp_path)
    assert again.page_batches == [] and reopened.search("penguins", k=1)[0].page == 1  # from disk, no model call
    changed = [dict(p) for p in PAGES]
    changed[2]["text"] = "income tax forms"
    edited = WordEncoder()
    build(edited, tmp_path, changed)
    assert sum(map(len, edited.page_batches)) == len(PAGES)
    other_settings = WordEncoder(key="v2")
    build(other_settings, tmp_path)
    assert sum(map(len, other_settings.page_batches)) == len(PAGES)


def test_image_pages_come_from_the_renderer_and_pdf_bytes_key_the_cache(tmp_path: Path) -> None:
    renderer = FakeRenderer(tmp_path)
    enc = WordEncoder(modality="image", single=True)
    retriever = build(enc, tmp_path, renderer=renderer)
    assert retriever.store.offsets.tolist() == [0, 1, 2, 3, 4] and retriever.store.dim == 16  # one vector per page
    assert retriever.search("night train", k=1)[0].document == "rail.pdf"
    same = WordEncoder(modality="image", single=True)
    build(same, tmp_path, renderer=renderer)
    assert same.page_batches == []
    (tmp_path / "tax.pdf").write_bytes(b"%PDF-1.4 a new edition")
    changed = WordEncoder(modality="image", single=True)
    build(changed, tmp_path, renderer=renderer)
    assert sum(map(len, changed.page_batches)) == len(PAGES)
    with pytest.raises(RetrievalError, match="page renderer"):
        build(WordEncoder(modality="image"), tmp_path / "x")


def test_batches_follow_batch_size_and_give_the_same_vectors(tmp_path: Path) -> None:
    one, three = WordEncoder(batch_size=1), WordEncoder(batch_size=3)
    a, b = build(one, tmp_path / "a"), build(three, tmp_path / "b")
    assert [len(b) for b in one.page_batches] == [1, 1, 1, 1] and [len(b) for b in three.page_batches] == [3, 1]
    assert np.array_equal(np.asarray(a.store.tokens), np.asarray(b.store.tokens))


class Fixed:
    def __init__(self, name: str, ranked: list[tuple[str, int, float]]) -> None:
        self.name, self.ranked = name, ranked

    def search(self, query: str, k: int = 10) -> list[PageHit]:
        return [PageHit(d, p, s) for d, p, s in self.ranked[:k]]


def test_hybrid_weights_first_stage_scores_as_heaven(tmp_path: Path) -> None:
    second = build(WordEncoder(), tmp_path)
    first = Fixed("dse:x", [("tax.pdf", 1, 0.9), ("rail.pdf", 1, 0.5), ("zoo.pdf", 2, 0.1)])
    query = "night train at the zoo"
    s2 = {
        (h.document, h.page): h.score for h in second.rerank(query, [("tax.pdf", 1), ("rail.pdf", 1), ("zoo.pdf", 2)])
    }
    plain = HybridRetriever(first, second, candidates=3)
    assert [(h.document, h.page) for h in plain.search(query, k=3)] == sorted(s2, key=lambda key: -s2[key])
    weighted = HybridRetriever(first, second, candidates=3, beta=0.3).search(query, k=3)
    s1 = {(d, p): s for d, p, s in first.ranked}
    want = {key: 0.3 * s1[key] + 0.7 * s2[key] for key in s1}
    assert [(h.document, h.page) for h in weighted] == sorted(want, key=lambda key: -want[key])
    assert all(h.score == pytest.approx(want[(h.document, h.page)], abs=1e-6) for h in weighted)
    only_two = HybridRetriever(first, second, candidates=2).search(query, k=2)
    assert {(h.document, h.page) for h in only_two} == {("tax.pdf", 1), ("rail.pdf", 1)}
    with pytest.raises(RetrievalError, match="beta"):
        HybridRetriever(first, second, beta=2.0)


def test_build_seconds_are_written_once_and_read_back_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import types

    from madqa.agents.corpus.retrieval import vectors

    ticks = iter([100.0, 112.5, 200.0, 203.25])  # each build reads the clock at its start and at its close
    monkeypatch.setattr(vectors, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
    first = build(WordEncoder(), tmp_path)
    assert first.build_seconds == 12.5
    reopened = build(WordEncoder(), tmp_path)  # from disk: the first build's seconds, not the opening's
    assert reopened.build_seconds == first.build_seconds
    other = build(WordEncoder(single=True), tmp_path / "s")
    fused = RRFRetriever([reopened, other])
    assert other.build_seconds == 3.25 and fused.build_seconds == 15.75
    (manifest,) = (tmp_path / "vec").glob("*/manifest.json")
    written = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({k: v for k, v in written.items() if k != "build_seconds"}), encoding="utf-8")
    older = build(WordEncoder(), tmp_path)  # a cache written before the seconds were recorded: unknown, not 0
    assert older.build_seconds is None and RRFRetriever([older, other]).build_seconds is None


def test_rrf_fuses_two_vector_retrievers(tmp_path: Path) -> None:
    multi = build(WordEncoder(), tmp_path / "m")
    single = build(WordEncoder(single=True), tmp_path / "s")
    query = "penguins zoo"
    fused = RRFRetriever([multi, single]).search(query, k=4)
    ranks = [{(h.document, h.page): i for i, h in enumerate(r.search(query, k=100), 1)} for r in (multi, single)]
    for hit in fused:
        key = (hit.document, hit.page)
        assert hit.score == pytest.approx(sum(1 / (60 + r[key]) for r in ranks))
    assert (fused[0].document, fused[0].page) == ("zoo.pdf", 1)


def test_spec_options_are_parsed_named_and_checked() -> None:
    assert parse_options("colpali", "", "colpali") == ("vidore/colqwen2.5-v0.2", {}, {})
    model, options, run = parse_options("dse", "org/m:dim=512:device=cpu:batch_size=8", "s")
    assert (model, options, run) == ("org/m", {"dim": 512}, {"device": "cpu", "batch_size": 8})
    for bad, message in [
        ("m:dim=big", "dim='big' must be int"),
        ("m:colour=red", "unknown option 'colour'"),
        ("m:batch_size=0", "batch_size must be positive"),
    ]:
        with pytest.raises(RetrievalError, match=message):
            parse_options("dse", bad, f"dse:{bad}")


def test_heaven_defaults_and_hybrid_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, dict[str, Any]]] = []

    def fake(single: bool) -> Any:
        def factory(model: str, **kwargs: Any) -> WordEncoder:
            made.append((model, kwargs))
            return WordEncoder(modality="image", single=single)

        return factory

    monkeypatch.setattr(encoders, "require", lambda *a: None)
    monkeypatch.setattr(encoders, "DSEEncoder", fake(True))
    monkeypatch.setattr(encoders, "ColPaliEncoder", fake(False))
    kw = {"cache_dir": tmp_path / "vec", "index_dir": tmp_path / "ix", "renderer": FakeRenderer(tmp_path)}
    heaven = make_retriever("hybrid:dse:org/dse:dim=64>colpali:org/colqwen2.5:device=cpu", PAGES, **kw)
    assert isinstance(heaven, HybridRetriever) and (heaven.candidates, heaven.beta) == (200, 0.3)
    assert heaven.name == "hybrid:dse:org/dse:dim=64>colpali:org/colqwen2.5"
    assert made == [("org/dse", {"dim": 64}), ("org/colqwen2.5", {"device": "cpu"})]
    assert heaven.search("night train", k=1)[0].document == "rail.pdf"
    tuned = make_retriever("hybrid:candidates=20:beta=0:dse>colpali", PAGES, **kw)
    assert (tuned.candidates, tuned.beta) == (20, 0.0)
    plain = make_retriever("hybrid:bm25>colpali", PAGES, **kw)
    assert (plain.candidates, plain.beta) == (50, 0.0)


def test_missing_packages_are_one_line_naming_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(RetrievalError, match=r"needs the Python package\(s\) torch\b.*: pip install 'madqa\[late\]'$"):
        make_retriever("colbert:colbert-ir/colbertv2.0", PAGES, cache_dir=tmp_path, index_dir=tmp_path)
    assert spec.DEFAULT_MODELS["colbert"] == "colbert-ir/colbertv2.0"

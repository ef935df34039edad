"""HEAVEN's VS-pages (stage 1) and query filter (stage 2) (agents/corpus/retrieval/heaven.py, late.py, fusion.py,
spec.py).

A word-vector encoder (one unit vector per word, seeded by the word) makes the scores computable by hand here;
the last tests run the same options on the tiny randomly initialised DSE and ColQwen2.5 of
tests/agents/corpus/test_retrieval_late_models.py (skipped without torch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.search_corpus import pages_by_document
from helpers.word_encoder import WordEncoder
from PIL import Image

from madqa.agents.corpus.retrieval.base import RetrievalError
from madqa.agents.corpus.retrieval.fusion import HybridRetriever
from madqa.agents.corpus.retrieval.heaven import CHUNK_PAGES, VSPageRetriever, key_tokens, vs_groups, vs_page_image
from madqa.agents.corpus.retrieval.late import VectorRetriever
from madqa.agents.corpus.retrieval.spec import make_retriever
from madqa.agents.corpus.retrieval.vectors import maxsim
from madqa.agents.corpus.search.index import prepare_pages

PAGES = pages_by_document(
    {
        "zoo.pdf": ["penguins of the zoo\nthey eat herring every day", "elephants of the zoo\nthey bathe in the pool"],
        "tax.pdf": ["income tax guide\nreturns are due in april", "income tax forms\npenguins are not deductible"],
        "rail.pdf": [
            "night trains\nthe night train departs at eleven",
            "timetable\nthe morning train to the zoo departs at nine",
        ],
    }
)


def Words(tokens: bool = True, key: str = "v1") -> WordEncoder:  # noqa: N802 - reads as the encoder it makes
    return WordEncoder(tokens=tokens, key=key, dim=32)


def vectors(tmp_path: Path, encoder: Any = None, pages: list[dict[str, Any]] = PAGES) -> VectorRetriever:
    return VectorRetriever(encoder or Words(), prepare_pages(pages), cache_dir=tmp_path / "vec")


def test_key_tokens_are_content_words() -> None:
    tokens = [
        "[CLS]",
        "[unused0]",
        "penguins",
        "eat",
        "the",
        "ĠZoo",
        "<|endoftext|>",
        ".",
        "a",
        "##ing",
        "▁April",
        "[MASK]",
        "Query",
        "2024",
    ]
    assert key_tokens(tokens).tolist() == [
        False,
        False,
        True,
        True,
        False,
        True,
        False,
        False,
        False,
        True,
        True,
        False,
        False,
        True,
    ]


def test_vs_groups_follow_documents_and_the_reduction_factor() -> None:
    long = [{"document": "long.pdf", "page": p, "text": f"page {p}"} for p in range(40, 0, -1)]  # out of order
    records = prepare_pages([*long, *PAGES[:2]])
    groups = vs_groups(records, 15)
    assert [len(g) for g in groups] == [15, 15, 10, 2]
    assert [records[i].page for i in groups[0]] == list(range(1, 16)) and groups[3] == [40, 41]
    short = prepare_pages(long[:CHUNK_PAGES])  # up to 20 pages: one VS-page
    assert [len(g) for g in vs_groups(short, 15)] == [CHUNK_PAGES]


def test_vs_page_image_stacks_the_title_bands_centred() -> None:
    first, second = Image.new("RGB", (40, 100), "red"), Image.new("RGB", (60, 200), "blue")
    second.paste(Image.new("RGB", (60, 170), "green"), (0, 30))  # below its title band
    vs = vs_page_image([first, second])
    assert vs.size == (60, 15 + 30)
    assert vs.getpixel((30, 5)) == (255, 0, 0) and vs.getpixel((2, 5)) == (255, 255, 255)  # centred, white margin
    assert vs.getpixel((30, 20)) == (0, 0, 255) and (0, 128, 0) not in [c for _, c in vs.getcolors()]


def test_vs_page_scores_are_heavens_stage1(tmp_path: Path) -> None:
    base = vectors(tmp_path)
    vs = VSPageRetriever(base, reduction=15, vs_filter=0.5, alpha=0.1)
    assert vs.groups == [[0, 1], [2, 3], [4, 5]]  # one VS-page per document
    assert base.encoder.page_batches[-2:] == [
        ["penguins of the zoo\nelephants of the zoo", "income tax guide\nincome tax forms"],
        ["night trains\ntimetable"],
    ]
    query = "penguins herring"
    q = base.encoder.encode_queries([query])[0]
    vs_score = [maxsim(q, vs.store.page(g)) for g in (0, 0, 1, 1, 2, 2)]
    page = [maxsim(q, base.store.page(i)) for i in range(6)]
    kept = set(np.argsort(-np.asarray(vs_score), kind="stable")[:3])  # half of the 6 pages
    expected = [0.1 * vs_score[i] + 0.9 * page[i] * (i in kept) for i in range(6)]
    np.testing.assert_allclose(vs.scores(query), expected, rtol=1e-5)
    hits = vs.search(query, k=6)
    assert (hits[0].document, hits[0].page) == ("zoo.pdf", 1)
    np.testing.assert_allclose([h.score for h in hits], sorted(expected, reverse=True), rtol=1e-5)
    # "penguins" is on tax.pdf p.2 too, but tax.pdf's VS-page (its titles) is outside the kept half
    assert 3 not in kept and abs(expected[3] - 0.1 * vs_score[3]) < 1e-6
    assert vs.search("", k=3) == [] and vs.search(query, k=0) == []


def test_vs_page_vectors_are_cached_and_keyed(tmp_path: Path) -> None:
    base = vectors(tmp_path)
    assert VSPageRetriever(base).page_calls == 2  # 3 VS-pages in batches of 2
    assert VSPageRetriever(base).page_calls == 0
    assert VSPageRetriever(vectors(tmp_path, Words(key="v2"))).page_calls == 2  # another encoder setting
    edited = [dict(p) for p in PAGES]
    edited[4]["text"] = "day trains\nthe night train departs at eleven"
    assert VSPageRetriever(vectors(tmp_path, pages=edited)).page_calls == 2  # another page content
    with pytest.raises(RetrievalError, match="vs_filter in"):
        VSPageRetriever(base, vs_filter=0.0)


def test_query_filter_scores_key_tokens_then_completes_the_best(tmp_path: Path) -> None:
    base = vectors(tmp_path)
    query = "the night train of the zoo"
    q, key = base.encoder.encode_queries([query])[0], key_tokens(query.split())
    assert key.tolist() == [False, True, True, False, False, True]
    pages = [(p["document"], p["page"]) for p in PAGES]
    key_score = [maxsim(q[key], base.store.page(i)) for i in range(6)]
    rest = [maxsim(q[~key], base.store.page(i)) for i in range(6)]
    refined = set(np.argsort(-np.asarray(key_score), kind="stable")[:3])  # int(6 * 0.5)
    expected = {pages[i]: key_score[i] + rest[i] * (i in refined) for i in range(6)}
    hits = base.rerank_filtered(query, pages, 0.5)
    assert {(h.document, h.page): h.score for h in hits} == pytest.approx(expected, rel=1e-5)
    assert [h.score for h in hits] == pytest.approx(sorted(expected.values(), reverse=True), rel=1e-5)
    full = {(h.document, h.page): h.score for h in base.rerank(query, pages)}
    assert all(expected[p] == pytest.approx(full[p], rel=1e-5) for p in (pages[i] for i in refined))
    everything = base.rerank_filtered(query, pages, 1.0)  # every candidate refined: the full MaxSim
    assert [h.score for h in everything] == pytest.approx([h.score for h in base.rerank(query, pages)], rel=1e-5)
    blind = vectors(tmp_path, Words(tokens=False))  # no tokens: the plain re-ranking
    assert blind.rerank_filtered(query, pages, 0.5) == blind.rerank(query, pages)


def test_hybrid_spec_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from madqa.agents.corpus.retrieval import encoders

    monkeypatch.setattr(encoders, "require", lambda *a: None)
    monkeypatch.setattr(encoders, "ColBERTEncoder", lambda model, **kw: Words())
    kw = {"cache_dir": tmp_path / "vec", "index_dir": tmp_path / "ix"}
    hybrid = make_retriever("hybrid:vs_pages=15:query_filter=0.5:candidates=4:colbert:x>colbert:x", PAGES, **kw)
    assert isinstance(hybrid, HybridRetriever) and isinstance(hybrid.first, VSPageRetriever)
    assert (hybrid.first.reduction, hybrid.first.vs_filter, hybrid.first.alpha) == (15, 0.5, 0.1)
    assert (hybrid.query_filter, hybrid.candidates) == (0.5, 4)
    assert hybrid.name == "hybrid:vs_pages=15:query_filter=0.5:colbert:x>colbert:x"
    query = "the night train of the zoo"
    pool = hybrid.first.search(query, k=4)
    expected = hybrid.second.rerank_filtered(query, [(h.document, h.page) for h in pool], 0.5)
    assert hybrid.search(query, k=4) == expected
    tuned = make_retriever("hybrid:vs_pages=2:vs_filter=1.0:alpha=0.5:colbert:x>colbert:x", PAGES, **kw)
    assert (tuned.first.reduction, tuned.first.vs_filter, tuned.first.alpha) == (2, 1.0, 0.5)
    assert tuned.name.startswith("hybrid:vs_pages=2:vs_filter=1.0:alpha=0.5:")
    for bad, message in [
        ("hybrid:vs_filter=0.5:colbert:x>colbert:x", "add vs_pages"),
        ("hybrid:vs_pages=15:bm25>colbert:x", "needs a learned-vector first stage"),
        ("hybrid:query_filter=0.25:bm25>dense:wordllama", "needs a late-interaction second"),
        ("hybrid:query_filter=2:bm25>colbert:x", "query_filter in"),
        ("hybrid:vs_pages=x:colbert:x>colbert:x", "vs_pages='x' must be int"),
    ]:
        with pytest.raises(RetrievalError, match=message):
            make_retriever(bad, PAGES, **kw)


def test_heaven_with_both_options_on_the_tiny_models(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch", reason="the real encoders need torch (pip install -e '.[late]')")
    pytest.importorskip("transformers", reason="the real encoders need transformers (pip install -e '.[late]')")
    import helpers.tiny_models as tiny

    root = tmp_path_factory.mktemp("heaven-models")
    dse, col = tiny.qwen_folder(root, "qwen2"), tiny.qwen_folder(root, "qwen2.5", words=["night", "train"])
    (tmp_path / "pdfs").mkdir()
    renderer = tiny.Renderer(tmp_path / "pdfs")
    spec = (
        f"hybrid:vs_pages=15:query_filter=0.25:dse:{dse}:max_pixels=3136:device=cpu>"
        f"colpali:{col}:max_visual_tokens=4:device=cpu"
    )
    heaven = make_retriever(spec, tiny.PAGES, cache_dir=tmp_path / "vec", index_dir=tmp_path / "ix", renderer=renderer)
    assert isinstance(heaven.first, VSPageRetriever) and (heaven.candidates, heaven.beta) == (200, 0.3)
    assert len(heaven.first.store) == len(heaven.first.groups) == 3  # zoo, tax, rail
    assert heaven.first.store.page(0).shape == (1, 32)
    tokens = heaven.second.encoder.query_tokens(["night train"])[0]
    assert len(tokens) == len(heaven.second.encoder.encode_queries(["night train"])[0]) == 3 + 10
    assert key_tokens(tokens).tolist() == [True, False, True] + [False] * 10  # night, " ", train, augmentation
    query = "night train"
    stage1 = heaven.first.scores(query)
    pages = [(r.document, r.page) for r in heaven.first.base.records]
    second = {(h.document, h.page): h.score for h in heaven.second.rerank_filtered(query, pages, 0.25)}
    full = {(h.document, h.page): h.score for h in heaven.second.rerank(query, pages)}
    assert sum(abs(second[p] - full[p]) > 1e-4 for p in pages) == len(pages) - 1  # only int(5 * 0.25) = 1 completed
    expected = sorted(pages, key=lambda p: -(0.3 * stage1[pages.index(p)] + 0.7 * second[p]))
    hits = heaven.search(query, k=len(pages))
    assert [(h.document, h.page) for h in hits] == expected
    np.testing.assert_allclose(
        [h.score for h in hits], [0.3 * stage1[pages.index(p)] + 0.7 * second[p] for p in expected], rtol=1e-4
    )

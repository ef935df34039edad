"""The retrieval layer: real rankings (BM25, wordllama vectors), fusion, the page-vector cache, and the measures
against hand-computed values; ``madqa retrieval`` on the sample."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from madqa.agents.retrieval.base import RetrievalError
from madqa.agents.retrieval.evaluation import Question, oracle_gap, per_query, summarise, write_trec_run
from madqa.agents.retrieval.fusion import HybridRetriever, RRFRetriever
from madqa.agents.retrieval.spec import make_retriever, make_retrievers
from madqa.agents.search.base import PageHit

PAGES = [
    {"document": "zoo.pdf", "page": 1, "text": "The penguins at the city zoo are fed herring twice a day by keepers."},
    {"document": "zoo.pdf", "page": 2, "text": "Elephants at the zoo bathe in a large pool during the summer months."},
    {"document": "tax.pdf", "page": 1, "text": "Quarterly income tax returns are due on the fifteenth of April."},
    {"document": "tax.pdf", "page": 2, "text": "Depreciation of office equipment reduces taxable corporate income."},
    {"document": "rail.pdf", "page": 1, "text": "The night train to the coast departs from platform nine at 11pm."},
]


class Fixed:
    """A retriever with fixed rankings per query (for fusion arithmetic)."""

    def __init__(self, name: str, ranked: dict[str, list[tuple[str, int]]]) -> None:
        self.name, self.ranked = name, ranked

    def search(self, query: str, k: int = 10) -> list[PageHit]:
        return [PageHit(d, p, 1.0 / (i + 1)) for i, (d, p) in enumerate(self.ranked.get(query, [])[:k])]


def test_bm25_and_wordllama_rank_the_evidence_page_first(tmp_path: Path) -> None:
    bm25, dense = make_retrievers(["bm25", "dense:wordllama"], PAGES, index_dir=tmp_path / "ix",
                                  cache_dir=tmp_path / "vec")  # fmt: skip
    for query, want in (("What are the penguins fed?", ("zoo.pdf", 1)), ("When is income tax due?", ("tax.pdf", 1)),
                        ("Which platform does the night train leave from?", ("rail.pdf", 1))):  # fmt: skip
        for retriever in (bm25, dense):
            top = retriever.search(query, k=3)
            assert (top[0].document, top[0].page) == want, (retriever.name, query, top)
            assert [h.score for h in top] == sorted((h.score for h in top), reverse=True)
    assert dense.name == "dense:wordllama:256" and bm25.search("the of a", k=3) == []  # only stop words: nothing


def test_page_vectors_are_cached_by_embedder_and_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from madqa.agents import embeddings

    calls: list[int] = []
    real = embeddings.make_embedder

    def counting(spec: str, **kw: Any) -> Any:
        embedder = real(spec, **kw)
        if getattr(embedder, "counted", False):  # make_embedder keeps one instance per spec
            return embedder
        embedder.counted = True
        embed = embedder.embed

        def wrapped(texts: Any, **k: Any) -> Any:
            calls.append(len(texts))
            return embed(texts, **k)

        embedder.embed = wrapped  # type: ignore[method-assign]
        return embedder

    monkeypatch.setattr(embeddings, "make_embedder", counting)
    first = make_retriever("dense:wordllama", PAGES, cache_dir=tmp_path)
    again = make_retriever("dense:wordllama", PAGES, cache_dir=tmp_path)
    assert calls == [len(PAGES)]  # the second corpus read its page vectors from the cache
    assert (first.vectors == again.vectors).all()  # type: ignore[attr-defined]
    changed = [*PAGES[:-1], {**PAGES[-1], "text": "A different last page."}]
    make_retriever("dense:wordllama", changed, cache_dir=tmp_path)
    make_retriever("dense:wordllama:128", PAGES, cache_dir=tmp_path)
    assert calls == [len(PAGES)] * 3  # new content, or another embedder setting: embedded again
    assert len(list(tmp_path.glob("*/manifest.json"))) == 3


def test_rrf_and_hybrid_arithmetic() -> None:
    a = Fixed("a", {"q": [("x", 1), ("y", 1), ("z", 1)]})
    b = Fixed("b", {"q": [("z", 1), ("x", 1)]})
    fused = RRFRetriever([a, b]).search("q", k=3)
    # x: 1/61 + 1/62, z: 1/63 + 1/61, y: 1/62
    assert [(h.document, round(h.score, 6)) for h in fused] == [
        ("x", round(1 / 61 + 1 / 62, 6)), ("z", round(1 / 63 + 1 / 61, 6)), ("y", round(1 / 62, 6))]  # fmt: skip
    with pytest.raises(RetrievalError, match="two or more"):
        RRFRetriever([a])
    with pytest.raises(RetrievalError, match="cannot re-rank"):
        HybridRetriever(a, b)


def test_hybrid_reranks_only_the_first_stage_candidates(tmp_path: Path) -> None:
    bm25, dense = make_retrievers(["bm25", "dense:wordllama"], PAGES, index_dir=tmp_path / "ix",
                                  cache_dir=tmp_path / "vec")  # fmt: skip
    hybrid = HybridRetriever(bm25, dense, candidates=2)
    query = "zoo animals summer pool"
    pool = {(h.document, h.page) for h in bm25.search(query, k=2)}
    got = hybrid.search(query, k=5)
    assert {(h.document, h.page) for h in got} == pool and len(got) == len(pool)
    assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
    assert hybrid.name == "hybrid:bm25>dense:wordllama:256"


@pytest.mark.parametrize("spec, message", [
    ("colpali:vidore/colqwen2.5-v0.2:colour=red", "unknown option 'colour'"), ("dense:", "name the embedder"),
    ("rrf:bm25", "write rrf:A+B"), ("hybrid:bm25", "write hybrid:FIRST>SECOND"), ("bm26", "unknown retriever"),
    ("dense:nope-embedder", "dense:nope-embedder"),
])  # fmt: skip
def test_bad_specs_are_named(spec: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(RetrievalError, match=re.escape(message)):
        make_retriever(spec, PAGES, index_dir=tmp_path, cache_dir=tmp_path)


def test_measures_against_hand_computed_values(tmp_path: Path) -> None:
    questions = [Question("q1", "", (("a.pdf", 1), ("b.pdf", 2)), "cross_doc"), Question("q2", "", (("c.pdf", 3),),
                 "single"), Question("q3", "", (("d.pdf", 1),), "single")]  # fmt: skip
    rankings = {
        "q1": [PageHit("a.pdf", 2, 9.0), PageHit("b.pdf", 2, 8.0), PageHit("a.pdf", 1, 7.0)],
        "q2": [PageHit("c.pdf", 3, 5.0)],
        # q3: no ranking at all: every measure 0, the question still counts
    }
    page = per_query(rankings, questions, "page")
    assert page["R@1"] == {"q1": 0.0, "q2": 1.0, "q3": 0.0}
    assert page["R@5"] == {"q1": 1.0, "q2": 1.0, "q3": 0.0}
    # q1: gold at ranks 2 and 3: DCG = 1/log2(3) + 1/log2(4); IDCG = 1 + 1/log2(3)
    assert page["nDCG@5"]["q1"] == pytest.approx((1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3)))
    assert page["MRR@10"] == {"q1": 0.5, "q2": 1.0, "q3": 0.0}
    doc = per_query(rankings, questions, "document")
    # q1 collapsed to documents: a.pdf (rank 1, gold), b.pdf (rank 2, gold)
    assert doc["R@1"]["q1"] == 0.5 and doc["nDCG@5"]["q1"] == pytest.approx(1.0) and doc["MRR@10"]["q1"] == 1.0
    summary = summarise(rankings, questions)
    mrr = summary["page"]["all"]["MRR@10"]
    assert mrr["n"] == 3 and mrr["mean"] == pytest.approx(0.5)
    sd = math.sqrt(((0.5 - 0.5) ** 2 + (1 - 0.5) ** 2 + (0 - 0.5) ** 2) / 2)
    assert mrr["ci"][1] == pytest.approx(min(1.0, 0.5 + 4.302652729911275 * sd / math.sqrt(3)))  # t(0.975, 2)
    assert summary["page"]["by_hop"]["single"]["R@1"]["mean"] == 0.5
    gap = oracle_gap([rankings, {"q3": [PageHit("d.pdf", 1, 1.0)]}], questions, k=1)
    # top 1: q1 misses both gold pages in both rankings; q2 found; q3 found by the second ranking
    assert (gap["none_in_top_k"], gap["not_all_in_top_k"], gap["none_ids"]) == (1 / 3, 1 / 3, ["q1"])
    write_trec_run(tmp_path / "r.trec", "bm25 x", rankings)
    assert (tmp_path / "r.trec").read_text().splitlines()[0] == "q1 Q0 a.pdf#p2 1 9.000000 bm25_x"


def test_tied_engine_scores_keep_the_retrievers_order() -> None:
    # trec_eval orders tied scores by document id (descending): "z.pdf#p1" would move ahead of "a.pdf#p1"
    questions = [Question("q", "", (("z.pdf", 1),), "single")]
    values = per_query({"q": [PageHit("a.pdf", 1, 1.0), PageHit("z.pdf", 1, 1.0)]}, questions, "page")
    assert values["R@1"]["q"] == 0.0 and values["MRR@10"]["q"] == 0.5


def test_cli_prints_the_table_and_writes_trec_runs(layout, tmp_path: Path) -> None:
    specs = "bm25,dense:wordllama,rrf:bm25+dense:wordllama"
    cmd = [sys.executable, "-m", "madqa.cli", "retrieval", "--retriever", specs,
           "--split", "dev", "--limit", "10", "--runs-dir", str(tmp_path / "runs"), "--json"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["questions"] == 10 and set(out["retrievers"]) == {"bm25", "dense:wordllama:256",
                                                                  "rrf:bm25+dense:wordllama:256"}  # fmt: skip
    for summary in out["retrievers"].values():
        for level in ("page", "document"):
            assert 0.0 <= summary[level]["all"]["R@10"]["mean"] <= 1.0
    assert out["retrievers"]["bm25"]["page"]["all"]["R@10"]["mean"] > 0.5  # the sample's questions are findable
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["01.trec", "02.trec", "03.trec", "qrels.txt"]
    bad = subprocess.run([*cmd[:5], "colpali:x:nope=1", "--split", "dev"], capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "unknown option 'nope'" in bad.stderr and "Traceback" not in bad.stderr


def test_bench_retrieval_measures_each_spec_from_scratch(layout) -> None:
    from madqa.bench.retrieval import bench_retrieval

    r = bench_retrieval(["bm25", "dense:wordllama"], pages=300, queries=5)
    assert r["pages"] == 300 and r["queries"] == 5 and list(r["retrievers"]) == ["bm25", "dense:wordllama:256"]
    bm25, dense = r["retrievers"]["bm25"], r["retrievers"]["dense:wordllama:256"]
    assert bm25["index_bytes"] > 0 and bm25["vector_bytes"] == 0
    assert dense["vector_bytes"] >= 300 * 256 * 4 and dense["index_bytes"] == 0  # float32 vectors of every page
    assert all(f["build_s"] > 0 and f["query_p95_ms"] >= f["query_p50_ms"] > 0 for f in (bm25, dense))

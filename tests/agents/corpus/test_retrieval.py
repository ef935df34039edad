"""The retrieval layer: real rankings (BM25, wordllama vectors), fusion, the page-vector cache, and the measures
against hand-computed values and against trec_eval's own code (``pytrec_eval``) reading the written TREC runs;
``madqa retrieval`` on the sample."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.search_corpus import pages_by_document

from madqa.agents.corpus.retrieval.base import RetrievalError
from madqa.agents.corpus.retrieval.evaluation import (
    TREC_EVAL_MEASURES,
    Question,
    missed_by_all,
    per_query,
    summarise,
    wilson,
    write_trec_qrels,
    write_trec_run,
)
from madqa.agents.corpus.retrieval.fusion import HybridRetriever, RRFRetriever
from madqa.agents.corpus.retrieval.spec import make_retriever, make_retrievers
from madqa.agents.corpus.search.base import PageHit

PAGES = pages_by_document(
    {
        "zoo.pdf": [
            "The penguins at the city zoo are fed herring twice a day by keepers.",
            "Elephants at the zoo bathe in a large pool during the summer months.",
        ],
        "tax.pdf": [
            "Quarterly income tax returns are due on the fifteenth of April.",
            "Depreciation of office equipment reduces taxable corporate income.",
        ],
        "rail.pdf": ["The night train to the coast departs from platform nine at 11pm."],
    }
)


class Fixed:
    """A retriever with fixed rankings per query (for fusion arithmetic)."""

    def __init__(self, name: str, ranked: dict[str, list[tuple[str, int]]]) -> None:
        self.name, self.ranked = name, ranked

    def search(self, query: str, k: int = 10) -> list[PageHit]:
        return [PageHit(d, p, 1.0 / (i + 1)) for i, (d, p) in enumerate(self.ranked.get(query, [])[:k])]


def test_bm25_and_wordllama_rank_the_evidence_page_first(tmp_path: Path) -> None:
    bm25, dense = make_retrievers(
        ["bm25", "dense:wordllama"], PAGES, index_dir=tmp_path / "ix", cache_dir=tmp_path / "vec"
    )
    for query, want in (
        ("What are the penguins fed?", ("zoo.pdf", 1)),
        ("When is income tax due?", ("tax.pdf", 1)),
        ("Which platform does the night train leave from?", ("rail.pdf", 1)),
    ):
        for retriever in (bm25, dense):
            top = retriever.search(query, k=3)
            assert (top[0].document, top[0].page) == want, (retriever.name, query, top)
            assert [h.score for h in top] == sorted((h.score for h in top), reverse=True)
    assert dense.name == "dense:wordllama:256" and bm25.search("the of a", k=3) == []  # only stop words: nothing


def test_page_vectors_are_cached_by_embedder_and_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from madqa.agents.corpus import embeddings
    from madqa.agents.corpus.retrieval import rankers

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
    ticks = iter([10.0, 14.0, 20.0, 21.0, 30.0, 31.0])  # each build reads the clock before and after embedding
    monkeypatch.setattr(rankers, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
    first = make_retriever("dense:wordllama", PAGES, cache_dir=tmp_path)
    again = make_retriever("dense:wordllama", PAGES, cache_dir=tmp_path)
    assert calls == [len(PAGES)]  # the second corpus read its page vectors from the cache
    assert (first.vectors == again.vectors).all()  # type: ignore[attr-defined]
    assert first.build_seconds == again.build_seconds == 4.0  # type: ignore[attr-defined]  # the build's, from its cache
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
        ("x", round(1 / 61 + 1 / 62, 6)),
        ("z", round(1 / 63 + 1 / 61, 6)),
        ("y", round(1 / 62, 6)),
    ]
    with pytest.raises(RetrievalError, match="two or more"):
        RRFRetriever([a])
    with pytest.raises(RetrievalError, match="cannot re-rank"):
        HybridRetriever(a, b)


def test_hybrid_reranks_only_the_first_stage_candidates(tmp_path: Path) -> None:
    bm25, dense = make_retrievers(
        ["bm25", "dense:wordllama"], PAGES, index_dir=tmp_path / "ix", cache_dir=tmp_path / "vec"
    )
    hybrid = HybridRetriever(bm25, dense, candidates=2)
    query = "zoo animals summer pool"
    pool = {(h.document, h.page) for h in bm25.search(query, k=2)}
    got = hybrid.search(query, k=5)
    assert {(h.document, h.page) for h in got} == pool and len(got) == len(pool)
    assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
    assert hybrid.name == "hybrid:bm25>dense:wordllama:256"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("colpali:vidore/colqwen2.5-v0.2:colour=red", "unknown option 'colour'"),
        ("dense:", "name the embedder"),
        ("rrf:bm25", "write rrf:A+B"),
        ("hybrid:bm25", "write hybrid:FIRST>SECOND"),
        ("bm26", "unknown retriever"),
        ("dense:nope-embedder", "dense:nope-embedder"),
    ],
)
def test_bad_specs_are_named(spec: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(RetrievalError, match=re.escape(message)):
        make_retriever(spec, PAGES, index_dir=tmp_path, cache_dir=tmp_path)


def test_measures_against_hand_computed_values(tmp_path: Path) -> None:
    questions = [
        Question("q1", "", (("a.pdf", 1), ("b.pdf", 2)), "cross_doc"),
        Question("q2", "", (("c.pdf", 3),), "single"),
        Question("q3", "", (("d.pdf", 1),), "single"),
    ]
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
    z = 1.959963984540054  # Wilson at mean 0.5, n 3: centre 0.5, half z / (1 + z²/3) · sqrt(0.25/3 + z²/36)
    assert mrr["ci"][1] == pytest.approx(0.5 + z / (1 + z * z / 3) * math.sqrt(0.25 / 3 + z * z / 36))
    assert summary["page"]["by_hop"]["single"]["R@1"]["mean"] == 0.5
    assert summary["page"]["ranked"] == {"median": 1, "min": 0, "short": 3, "cut": 0}
    missed = missed_by_all([rankings, {"q3": [PageHit("d.pdf", 1, 1.0)]}], questions, k=1)
    # top 1: q1 misses both gold pages in both rankings; q2 found; q3 found by the second ranking
    assert (missed["none_in_top_k"], missed["not_all_in_top_k"], missed["none_ids"]) == (1 / 3, 1 / 3, ["q1"])
    assert missed["none_ci"] == pytest.approx(wilson([1.0, 0.0, 0.0])["ci"])
    write_trec_run(tmp_path / "r.trec", "bm25 x", rankings)
    # the score is the order (n + 1 - rank), not the engine's 9.0
    assert (tmp_path / "r.trec").read_text().splitlines()[0] == "q1 Q0 a.pdf#p2 1 3 bm25_x"


def test_tied_engine_scores_keep_the_retrievers_order_in_the_measures_and_the_trec_run(tmp_path: Path) -> None:
    # trec_eval orders tied scores by document id (descending): "z.pdf#p1" would move ahead of "a.pdf#p1"
    questions = [Question("q", "", (("z.pdf", 1),), "single")]
    rankings = {"q": [PageHit("a.pdf", 1, 1.0), PageHit("z.pdf", 1, 1.0)]}
    values = per_query(rankings, questions, "page")
    assert values["R@1"]["q"] == 0.0 and values["MRR@10"]["q"] == 0.5
    write_trec_run(tmp_path / "run", "tied", rankings)
    write_trec_qrels(tmp_path / "qrels", questions)
    got = _trec_eval(tmp_path / "qrels", tmp_path / "run")
    assert got["R@1"] == {"q": 0.0} and got["MRR@10"] == {"q": 0.5}  # trec_eval keeps the retriever's order too


def test_ids_with_whitespace_stay_one_field_in_trec_files(tmp_path: Path) -> None:
    questions = [Question("q 1", "", (("annual report.pdf", 2),), "single")]
    rankings = {"q 1": [PageHit("annual report.pdf", 1, 2.0), PageHit("annual report.pdf", 2, 1.0)]}
    write_trec_run(tmp_path / "run", "r", rankings)
    write_trec_qrels(tmp_path / "qrels", questions)
    assert (tmp_path / "qrels").read_text() == "q%201 0 annual%20report.pdf#p2 1\n"
    got = _trec_eval(tmp_path / "qrels", tmp_path / "run")
    assert got["MRR@10"] == {"q%201": 0.5} and per_query(rankings, questions, "page")["MRR@10"] == {"q 1": 0.5}


def test_the_document_level_reads_documents_beyond_the_top_ten_pages() -> None:
    # twelve pages of one document, then the gold document: its best page is 13th, the document 2nd
    questions = [Question("q", "", (("gold.pdf", 4),), "single")]
    hits = [PageHit("big.pdf", p, 20.0 - p) for p in range(1, 13)] + [PageHit("gold.pdf", 4, 1.0)]
    page, document = per_query({"q": hits}, questions, "page"), per_query({"q": hits}, questions, "document")
    assert page["R@10"]["q"] == 0.0 and document["R@5"]["q"] == 1.0 and document["MRR@10"]["q"] == 0.5
    summary = summarise({"q": hits[:10]}, questions, deep={"q": hits}, depth=13)  # the page level: the top 10
    assert summary["page"]["all"]["R@10"]["mean"] == 0.0 and summary["document"]["all"]["R@5"]["mean"] == 1.0
    assert summary["page"]["ranked"] == {"median": 10, "min": 10, "short": 0, "cut": 0}
    # two documents in 13 pages, and the ranking filled the depth: cut short by it
    assert summary["document"]["ranked"] == {"median": 2, "min": 2, "short": 1, "cut": 1}
    assert summarise({"q": hits}, questions, deep={"q": hits}, depth=20)["document"]["ranked"]["cut"] == 0


@pytest.mark.parametrize("k, n", [(0, 38), (38, 38), (24, 38), (1, 1), (3, 10)])
def test_wilson_intervals_match_scipy_and_do_not_collapse(k: int, n: int) -> None:
    from scipy import stats

    got = wilson([1.0] * k + [0.0] * (n - k))
    want = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert got["mean"] == k / n and got["ci"] == pytest.approx([want.low, want.high], abs=1e-12)
    assert got["ci"][1] - got["ci"][0] > 0.05  # never [1.00, 1.00] (or [0.00, 0.00]) on 38 questions or fewer
    if k == n == 38:  # all ones: the lower bound is n / (n + z²)
        assert got["ci"][0] == pytest.approx(38 / (38 + 1.959963984540054**2)) and got["ci"][0] < 0.91


def test_wilson_on_fractional_values_bounds_the_mean_by_the_largest_variance() -> None:
    # values in [0, 1] of mean p have variance at most p(1 - p): each bound solves (mean - p)² = z² p(1 - p) / n
    values = [1.0, 1.0, 0.5, 1 / 3, 1.0, 0.0, 1.0, 0.25]
    got = wilson(values)
    mean, n, z = sum(values) / len(values), len(values), 1.959963984540054
    for p in got["ci"]:
        assert (mean - p) ** 2 == pytest.approx(z * z * p * (1 - p) / n)
    assert got["ci"][0] < mean < got["ci"][1] and wilson([])["ci"] == [None, None]


def _trec_eval(qrels_path: Path, run_path: Path) -> dict[str, dict[str, float]]:
    """Label → query → value, by trec_eval's own code (pytrec_eval) reading the files, as ``trec_eval -c -M 10``:
    the run cut to each query's ten highest scores (unambiguous: the scores are checked to be strictly decreasing),
    and every query of the qrels counted, 0 where the run has none."""
    import pytrec_eval

    with qrels_path.open() as f:
        qrels = pytrec_eval.parse_qrel(f)
    with run_path.open() as f:
        run = pytrec_eval.parse_run(f)
    lines = [line.split() for line in run_path.read_text().splitlines()]
    for qid in run:
        scores = [float(line[4]) for line in lines if line[0] == qid]
        ranks = [int(line[3]) for line in lines if line[0] == qid]
        assert ranks == list(range(1, len(ranks) + 1)), qid
        assert all(a > b for a, b in zip(scores, scores[1:], strict=False)), f"tied scores: {run_path} {qid}"
        run[qid] = dict(sorted(run[qid].items(), key=lambda kv: -kv[1])[:10])
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recall.1,5,10", "ndcg_cut.5,10", "recip_rank"})
    per = evaluator.evaluate(run)
    return {
        label: {qid: per.get(qid, {}).get(name, 0.0) for qid in qrels} for label, name in TREC_EVAL_MEASURES.items()
    }


CELL = re.compile(r"(\d\.\d{3}) \[(\d\.\d\d),(\d\.\d\d)\]")


def _printed_tables(stdout: str) -> dict[str, dict[str, list[tuple[str, str, str]]]]:
    """level (``page``, ``document``, ``page/HOP``…) → retriever → its six printed cells (mean, low, high), read from
    the command's text output (``--by-hop`` tables are indented under ``  hop type HOP:``)."""
    tables: dict[str, dict[str, list[tuple[str, str, str]]]] = {}
    level = table = None
    for line in stdout.splitlines():
        if line.endswith("level (mean [95% Wilson interval]):"):
            level = table = line.split()[0]
            tables[table] = {}
        elif level and line.startswith("  hop type "):
            table = f"{level}/{line.removeprefix('  hop type ').rstrip(':')}"
            tables[table] = {}
        elif table and CELL.search(line):
            tables[table][line.split()[0]] = CELL.findall(line)
        elif not line.strip():
            level = table = None
    return tables


def _mean(values: dict[str, float]) -> float:
    return sum(values.values()) / len(values)


THREE_SPECS = "bm25,dense:wordllama,rrf:bm25+dense:wordllama"


def _retrieval(*args: str) -> subprocess.CompletedProcess[str]:
    """``madqa retrieval ARGS`` in a subprocess, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "madqa.cli", "retrieval", *args], capture_output=True, text=True, timeout=600
    )


def test_trec_eval_on_the_written_runs_gives_the_printed_table(layout, tmp_path: Path) -> None:
    # the case: all 38 dev questions of the sample; rrf's fused sums tie within the top 10 of several of
    # them, so a run written with the engines' scores is re-ordered by trec_eval (R@1 0.549 against 0.641)
    runs = tmp_path / "runs"
    done = _retrieval("--retriever", THREE_SPECS, "--split", "dev", "--by-hop", "--output-dir", str(runs))
    assert done.returncode == 0, done.stderr
    printed = _printed_tables(done.stdout)
    manifest = json.loads((runs / "runs.json").read_text())
    assert manifest["depth"] == 1000 and [r["retriever"] for r in manifest["runs"]] == list(printed["page"])
    from madqa.loading_script.load import load_gold

    hops: dict[str, set[str]] = {}
    for row in load_gold("dev", None):
        hops.setdefault(str(row.get("hop_type") or "") or "unknown", set()).add(str(row["id"]))
    assert len(printed["page"]) == 3 and set(printed) == {
        f"{lv}{h}" for lv in ("page", "document") for h in ("", *(f"/{hop}" for hop in hops))
    }
    for level in ("page", "document"):
        for entry in manifest["runs"]:
            got = _trec_eval(runs / manifest["qrels"][level], runs / entry[level])
            assert all(len(v) == 38 for v in got.values())
            for table, ids in (("", set(got["R@1"])), *((f"/{hop}", ids) for hop, ids in hops.items())):
                cells = printed[level + table][entry["retriever"]]
                want = [
                    f"{_mean({q: v for q, v in got[label].items() if q in ids}):.3f}" for label in TREC_EVAL_MEASURES
                ]
                assert [c[0] for c in cells] == want, (level + table, entry["retriever"])
                for mean, lo, hi in cells:  # Wilson intervals: never collapsed, even at 1.000
                    assert float(lo) <= float(mean) <= float(hi) and float(lo) < float(hi)
    for file in ("page", "document"):  # dense ranks every page: top 10 pages; every document
        ids = [ln.split()[0] for ln in (runs / manifest["runs"][1][file]).read_text().splitlines()]
        assert {ids.count(q) for q in ids} == ({10} if file == "page" else {42}), file  # 42 documents in the sample
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("  documents in the top 1000 pages"))
    assert re.search(r"; dense:wordllama:256 42 / 42 / 0 / 0;", line), line
    assert "missed by every retriever @10:" in done.stdout and "oracle gap @" not in done.stdout.lower()


@pytest.mark.slow
def test_cli_json_depth_and_bad_input(layout, tmp_path: Path) -> None:
    first_ten = ["--split", "dev", "--limit", "10"]
    done = _retrieval(
        "--retriever", THREE_SPECS, "--depth", "30", *first_ten, "--output-dir", str(tmp_path / "runs"), "--json"
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["questions"] == 10 and out["depth"] == 30 and out["interval"] == "wilson-95"
    assert set(out["retrievers"]) == {"bm25", "dense:wordllama:256", "rrf:bm25+dense:wordllama:256"}
    assert out["retrievers"]["bm25"]["page"]["all"]["R@10"]["mean"] > 0.5  # the sample's questions are findable
    assert "oracle_gap" not in out and 0.0 <= out["missed_by_all"]["none_in_top_k"] <= 1.0
    runs = tmp_path / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(
        [f"0{i}.{level}.trec" for i in (1, 2, 3) for level in ("page", "document")]
        + ["qrels.page.txt", "qrels.document.txt", "runs.json"]
    )
    manifest = json.loads((runs / "runs.json").read_text())
    for entry in manifest["runs"]:  # full precision: the JSON's means are trec_eval's on the written files
        for level in ("page", "document"):
            got = _trec_eval(runs / manifest["qrels"][level], runs / entry[level])
            block = out["retrievers"][entry["retriever"]][level]["all"]
            for label in TREC_EVAL_MEASURES:
                assert block[label]["mean"] == pytest.approx(_mean(got[label]), abs=1e-12), (level, label)
        assert out["retrievers"][entry["retriever"]]["page"]["ranked"]["median"] <= 10
    document = out["retrievers"]["dense:wordllama:256"]["document"]["ranked"]
    assert document["min"] >= 1 and document["short"] == document["cut"]  # dense fills every top 30
    shallow = _retrieval("--retriever", THREE_SPECS, "--depth", "10", *first_ten, "--json")
    assert shallow.returncode == 0, shallow.stderr
    for name, summary in json.loads(shallow.stdout)["retrievers"].items():  # --depth leaves the page level alone
        assert summary["page"] == out["retrievers"][name]["page"], name
    for extra, message in (
        (["--depth", "5"], "--depth must be at least 10"),
        (["--depth", "20", "--missed-at", "25"], "got --depth 20 and --missed-at 25"),
    ):
        bad = _retrieval("--retriever", "bm25", *extra)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    bad = _retrieval("--retriever", "colpali:x:nope=1", "--split", "dev")
    assert bad.returncode == 2 and "unknown option 'nope'" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_bench_retrieval_measures_each_spec_from_scratch(layout) -> None:
    from madqa.bench.retrieval import bench_retrieval

    r = bench_retrieval(["bm25", "dense:wordllama"], pages=300, queries=5)
    assert r["pages"] == 300 and r["queries"] == 5 and list(r["retrievers"]) == ["bm25", "dense:wordllama:256"]
    bm25, dense = r["retrievers"]["bm25"], r["retrievers"]["dense:wordllama:256"]
    assert bm25["index_bytes"] > 0 and bm25["vector_bytes"] == 0
    assert dense["vector_bytes"] >= 300 * 256 * 4 and dense["index_bytes"] == 0  # float32 vectors of every page
    assert all(f["build_s"] > 0 and f["query_p95_ms"] >= f["query_p50_ms"] > 0 for f in (bm25, dense))

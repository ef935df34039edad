"""The MTEB tasks of the retrieval track (agents/integrations/mteb_task/) on the sample, offline.

The tables (pages, questions, gold) are checked against what ``madqa retrieval`` reads without mteb. With mteb
installed (the ``mteb`` extra; ``scripts/mteb_check.sh`` builds an environment with it), ``mteb.evaluate`` runs the
text task with ``bm25``, ``dense:wordllama`` (no download: wordllama's weights are in its wheel) and ``rrf:`` of
both (whose fused scores tie) as search models, and the image task with a tiny DSE built offline; the values mteb
computes equal ``madqa retrieval --json``'s for the same rankings, to 1e-9: per question (``pytrec_eval``'s values,
captured from mteb's ``task_specific_scores`` hook) and MRR@10 (mteb's own mean); mteb's other means are rounded by
mteb to 5 decimals, and equal ours rounded. The wordllama encoder is also run through mteb's own dense search, which
must find the same rankings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from madqa.agents.integrations.mteb_task.data import load_split, parse_page_id

#: ``madqa retrieval``'s measure label → the per-question value pytrec_eval gives mteb for it.
PYTREC = {"R@1": "recall_1", "R@5": "recall_5", "R@10": "recall_10", "nDCG@5": "ndcg_cut_5", "nDCG@10": "ndcg_cut_10"}
#: ``madqa retrieval``'s label → mteb's score name.
MTEB_NAMES = {
    "R@1": "recall_at_1",
    "R@5": "recall_at_5",
    "R@10": "recall_at_10",
    "nDCG@5": "ndcg_at_5",
    "nDCG@10": "ndcg_at_10",
    "MRR@10": "mrr_at_10",
}
#: rrf:'s fused sums tie within the top 10 of several dev questions: scored by their own values, trec_eval would
#: re-order them (R@1 0.549 against 0.641); RetrieverSearch hands mteb the order instead
SPECS = ("bm25", "dense:wordllama", "rrf:bm25+dense:wordllama")


def test_tables_are_the_pages_questions_and_gold_madqa_retrieval_reads(layout) -> None:
    from madqa.loading_script.load import load_gold, load_pages

    data = load_split("dev")
    pages, gold = load_pages(None), load_gold("dev", None)
    assert [parse_page_id(row["id"]) for row in data.corpus] == [(p["document"], p["page"]) for p in pages]
    assert [row["text"] for row in data.corpus] == [p["text"] or "" for p in pages]
    assert [q["id"] for q in data.queries] == [str(r["id"]) for r in gold]
    assert [q["text"] for q in data.queries] == [r["question"] for r in gold]
    for row in gold:
        want = {f"{e['document']}#p{e['page']}" for e in row["evidence"]}
        assert data.qrels[str(row["id"])] == dict.fromkeys(sorted(want), 1)
    assert len(load_split("dev", limit=3).queries) == 3


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="not a MADQA page id"):
        parse_page_id("report.pdf-12")
    with pytest.raises(ValueError, match="limit must be positive"):
        load_split("dev", limit=0)


def test_without_mteb_the_tasks_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from madqa.agents.harness import deps
    from madqa.agents.integrations.mteb_task import tasks

    monkeypatch.setattr(deps, "is_installed", lambda module: module != "mteb")
    with pytest.raises(deps.MissingDependencyError, match=r"pip install 'madqa\[mteb\]'"):
        tasks()


# -- with mteb ------------------------------------------------------------------------------------------------------


def _mteb() -> Any:
    return pytest.importorskip("mteb", reason="the mteb extra is not installed: scripts/mteb_check.sh runs these")


def _madqa_retrieval(spec: str) -> dict[str, Any]:
    """``madqa retrieval --json`` for one retriever on the dev split: its page-level means."""
    done = subprocess.run(
        [sys.executable, "-m", "madqa.cli", "retrieval", "--retriever", spec, "--split", "dev", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (summary,) = json.loads(done.stdout)["retrievers"].values()
    return {label: m["mean"] for label, m in summary["page"]["all"].items()}


def _evaluate(task: Any, model: Any) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """mteb's scores of the dev split, and the per-question values its ``task_specific_scores`` hook was given."""
    mteb = _mteb()
    seen: dict[str, Any] = {}

    def capture(scores: Any, qrels: Any, results: Any, hf_split: str, hf_subset: str) -> dict[str, float]:
        seen["scores"] = scores
        return {}

    task.task_specific_scores = capture
    result = mteb.evaluate(model, task, cache=None, co2_tracker=False, show_progress_bar=False)
    (task_result,) = result.task_results
    (scores,) = task_result.scores["dev"]
    return scores, seen["scores"]


def _assert_equal(label: str, scores: dict[str, Any], per_question: dict[str, Any], want: dict[str, float]) -> None:
    assert len(per_question) == 38  # every dev question was ranked: none left out of mteb's means
    if label in PYTREC:
        values = [per_question[q][PYTREC[label]] for q in per_question]
        assert sum(values) / len(values) == pytest.approx(want[label], abs=1e-9), label
        assert scores[MTEB_NAMES[label]] == pytest.approx(round(want[label], 5), abs=1e-9), label
    else:  # MRR@10: mteb computes and keeps it unrounded
        assert scores[MTEB_NAMES[label]] == pytest.approx(want[label], abs=1e-9), label


def _assert_scored_as_madqa(task: Any, model: Any, want: dict[str, float]) -> dict[str, Any]:
    """Asserts that mteb's scores of ``model`` on ``task`` are ``want``, measure by measure; returns the scores."""
    scores, per_question = _evaluate(task, model)
    for label in MTEB_NAMES:
        _assert_equal(label, scores, per_question, want)
    return scores


@pytest.mark.slow
@pytest.mark.parametrize("spec", SPECS)
def test_mteb_scores_the_text_task_as_madqa_retrieval_does(layout, spec: str) -> None:
    _mteb()
    from madqa.agents.integrations.mteb_task import tasks
    from madqa.agents.integrations.mteb_task.search import RetrieverSearch

    want = _madqa_retrieval(spec)
    text_task, _ = tasks(splits=["dev"])
    scores = _assert_scored_as_madqa(text_task, RetrieverSearch(spec), want)
    assert scores["main_score"] == scores["ndcg_at_10"]


@pytest.mark.slow
def test_mteb_dense_search_with_the_wordllama_encoder_finds_madqa_s_rankings(layout) -> None:
    _mteb()
    from madqa.agents.integrations.mteb_task import tasks
    from madqa.agents.integrations.mteb_task.search import WordllamaEncoder

    want = _madqa_retrieval("dense:wordllama")
    text_task, _ = tasks(splits=["dev"])
    _assert_scored_as_madqa(text_task, WordllamaEncoder(), want)


@pytest.mark.slow
def test_the_image_task_is_vidore_shaped_and_scored_alike(layout, tmp_path: Path) -> None:
    mteb = _mteb()
    from helpers.tiny_models import qwen_folder
    from PIL import Image

    from madqa.agents.integrations.mteb_task import tasks
    from madqa.agents.integrations.mteb_task.search import RetrieverSearch

    text_task, image_task = tasks(splits=["dev"])
    image_task.load_data()
    text_task.load_data()
    corpus = image_task.corpus["dev"]
    assert corpus.column_names == ["id", "image"] and corpus["id"] == text_task.corpus["dev"]["id"]
    first = corpus[0]["image"]
    assert isinstance(first, Image.Image) and first.mode == "RGB" and max(first.size) <= 2000
    assert image_task.relevant_docs["dev"] == text_task.relevant_docs["dev"]
    assert image_task.queries["dev"]["text"] == text_task.queries["dev"]["text"]
    meta = image_task.metadata
    assert (meta.category, meta.main_score, meta.modalities) == ("t2i", "ndcg_at_5", ["text", "image"])
    assert meta.dataset["revision"] != text_task.metadata.dataset["revision"]  # the rendering is in the digest
    with pytest.raises(ValueError, match="none overlap"):  # a text retriever cannot read the image corpus
        mteb.evaluate(RetrieverSearch("bm25"), image_task, cache=None, co2_tracker=False, show_progress_bar=False)
    # a page-image retriever that needs no download: a tiny random DSE (Qwen2-VL) built here; mteb hands it the
    # task's images, madqa retrieval renders the same pages itself, at the same settings
    spec = f"dse:{qwen_folder(tmp_path, 'qwen2')}:min_pixels=784:max_pixels=3136:device=cpu"
    want = _madqa_retrieval(spec)
    scores = _assert_scored_as_madqa(image_task, RetrieverSearch(spec, cache_dir=tmp_path / "vectors"), want)
    assert scores["main_score"] == scores["ndcg_at_5"]


@pytest.mark.slow
def test_the_documented_example_runs(layout) -> None:
    _mteb()
    from helpers.paths import ROOT

    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "examples" / "mteb_retrieval.py")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert list(lines) == ["madqa/bm25", "madqa/dense:wordllama", "madqa/wordllama:256"]
    want = _madqa_retrieval("bm25")
    rounded = {label: round(value, 5) for label, value in want.items()}  # as mteb rounds, then as printed
    assert lines["madqa/bm25"] == (
        f"nDCG@10 {rounded['nDCG@10']:.4f}  R@1 {rounded['R@1']:.4f}  MRR@10 {want['MRR@10']:.4f}"
    )
    # mteb's own search over the embedder's vectors finds what the dense retriever finds
    assert lines["madqa/wordllama:256"] == lines["madqa/dense:wordllama"]


def test_a_corpus_of_other_pages_is_refused(layout) -> None:
    _mteb()
    from datasets import Dataset

    from madqa.agents.integrations.mteb_task.search import RetrieverSearch

    search = RetrieverSearch("bm25")
    with pytest.raises(
        ValueError, match=r"1 corpus page\(s\) are not pages of the dataset, e.g. \('nowhere.pdf', 3\)"
    ):
        search.index(Dataset.from_list([{"id": "nowhere.pdf#p3", "text": "x"}]))
    with pytest.raises(RuntimeError, match="index the corpus before searching it"):
        RetrieverSearch("bm25").search(Dataset.from_list([{"id": "q", "text": "x"}]), top_k=10)

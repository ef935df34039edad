"""The static RAG baseline: one retrieval, one model call that sees the retrieved pages and answers with citations;
its lines are scored by ``madqa evaluate``."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_cli import evaluate_json, madqa_env, run_agent, run_agent_lines
from helpers.fakes import ScriptedModel
from helpers.paths import TESTS

#: This file's folder: subprocesses import its model factories (``py:test_…``) by name.
HERE = Path(__file__).resolve().parent

FAKE = "py:test_agent_rag:cite_first_page"


def cite_first_page(**_: Any) -> ScriptedModel:
    """Answers with the gold answer of the sample question it recognises, citing the first page it was shown."""

    def reply(text: str, tools: list[str]) -> Any:
        assert tools == ["final_answer"], tools  # static RAG offers no search
        first = re.search(r"--- 1\. file (\S+), page (\d+) ---", text)
        cites = [{"file": first.group(1), "page": int(first.group(2))}] if first else []
        return ("final_answer", {"answer": ["no idea"], "citations": cites})

    return ScriptedModel([reply], text_only=True, usage=lambda text, n: (len(text) // 4, 9), model_id="fake-rag")


def test_rag_retrieves_once_shows_the_pages_and_answers_in_one_call(layout) -> None:
    from madqa.agents.harness.config import RunConfig
    from madqa.agents.harness.registry import get_agent
    from madqa.loading_script.load import load_gold

    gold = load_gold("dev")[:3]
    entry = get_agent("rag")
    config = RunConfig(model=FAKE, agent="rag", options={"retriever": "bm25", "top_k": 3})
    entry.check(config)
    sys.path.insert(0, str(TESTS))
    prepared = entry.prepare(config)
    try:
        assert prepared.settings["retriever"] == "bm25" and prepared.settings["max_steps"] == 1
        for row in gold:
            line = prepared.answer(row)
            (search,) = line["search_history"]
            expected = prepared.retriever.search(row["question"], k=3)
            assert search["query"] == row["question"] and search["count"] == len(expected) == 3
            assert search["results"] == [{"document": h.document, "page": h.page} for h in expected]
            assert line["steps"] == 1 and line["error"] is None
            assert list(line["usage"]["by_role"]) == ["agent"]  # bm25 embeds no query: no embedder role
            assert line["costs"]["corpus_pages"] > 0 and "index_build_s" not in line["costs"]
            assert line["costs"]["retriever_build_s"] == {"bm25": prepared.retriever.build_seconds}
            assert line["citations"] == search["results"][:1]  # the model cited the first page it was shown
        events = list(prepared.stream(gold[0]["question"], gold[0]))
        assert [type(e).__name__ for e in events] == ["SearchEvent", "AnswerEvent"]
        assert events[0].count == 3
    finally:
        prepared.close()


@pytest.mark.slow
def test_rag_runs_from_the_command_line_and_is_scored(layout, tmp_path: Path) -> None:
    out = tmp_path / "rag.jsonl"
    lines = run_agent_lines("rag", out, ["--model", FAKE, "--limit", "2"], madqa_env(HERE))
    assert len(lines) == 2 and all(line["agent"] == "rag" for line in lines)
    assert lines[0]["config"]["retriever"] == "rrf:bm25+dense:wordllama:256" and lines[0]["config"]["top_k"] == 5
    assert all(len(line["search_history"][0]["results"]) == 5 and line["usage"]["input_tokens"] > 0 for line in lines)
    report = evaluate_json(out, madqa_env(HERE))
    assert report["n_predicted"] == 2 and report["page_f1"] is not None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--retriever", "nosuch:x"], "unknown retriever"),
        (["--oracle"], "--oracle is for --agent bm25"),
        (["--top-k", "0"], "top-k must be at least 1"),
    ],
)
def test_rag_refuses_what_it_cannot_run(layout, tmp_path: Path, args: list[str], message: str) -> None:
    done = run_agent("rag", tmp_path / "x.jsonl", ["--model", FAKE, "--limit", "1", *args], madqa_env(HERE))
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


def semantic_searcher(**_: Any) -> ScriptedModel:
    """Searches once with a free-text query, then answers citing the first page it was shown."""

    def reply(text: str, tools: list[str]) -> Any:
        if "search_documents" in tools and "--- 1. " not in text and "Page 1:" not in text:
            return ("search_documents", {"query": "monthly water service charge for a household"})
        first = re.search(r"(\S+\.pdf), page (\d+)", text.split("monthly water service charge")[-1])
        cites = [{"file": first.group(1), "page": int(first.group(2))}] if first else []
        return ("final_answer", {"answer": ["no idea"], "citations": cites})

    return ScriptedModel([reply], text_only=True, model_id="fake-semantic")


def test_the_search_agent_can_search_through_a_retriever(layout) -> None:
    from madqa.agents.harness.config import RunConfig
    from madqa.agents.harness.registry import check_config, get_agent
    from madqa.loading_script.load import load_gold

    row = load_gold("dev")[0]
    entry = get_agent("bm25")
    config = RunConfig(
        model="py:test_agent_rag:semantic_searcher",
        agent="bm25",
        max_steps=3,
        options={"retriever": "dense:wordllama", "top_k": 4},
    )
    entry.check(config)
    sys.path.insert(0, str(TESTS))
    prepared = entry.prepare(config)
    try:
        assert prepared.settings["retriever"] == "dense:wordllama:256"
        line = prepared.answer(row)
        (search,) = line["search_history"]
        expected = prepared.index.search("monthly water service charge for a household", k=4)
        assert search["results"] == [{"document": h.document, "page": h.page} for h in expected]
        model = prepared._slots.get()
        assert "ranked by meaning" in model.calls[0]["text"]  # the semantic tool's description, not BM25 syntax
        # one search, one query embedding; WordLlama gives no token count through the retriever: calls only
        assert line["usage"]["by_role"]["embedder"] == {"calls": 1, "model": "wordllama:256"}
    finally:
        prepared.close()
    with pytest.raises(Exception, match="exclude each other"):
        check_config(RunConfig(agent="bm25", options={"retriever": "bm25", "oracle": True}))

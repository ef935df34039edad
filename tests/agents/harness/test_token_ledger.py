"""The token ledger of the results lines (agents/harness/record.py, metric/ledger.py) from scripted models whose
replies report cached and reasoning tokens as OpenAI-compatible providers do (``ChatMessage.raw``): hand-computed
per role (agent, sub_model, embedder), the forced final answer included, nothing made up where a provider reports
nothing; the run's non-model costs in the lines."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.fakes import ScriptedModel, code

from madqa.agents.baselines.repl.agent import build_repl_agent
from madqa.agents.baselines.repl.corpus import build_corpus
from madqa.agents.baselines.repl.prepare import record_fields as repl_fields
from madqa.agents.harness.record import build_record
from madqa.agents.sandbox.worker import ReplWorker, WorkerLimits
from madqa.agents.search_loop.agent import build_search_agent
from madqa.agents.search_loop.resources import corpus_costs
from madqa.agents.search_loop.resources import record_fields as search_fields


def provider_raw(n: int) -> dict[str, Any]:
    """Call n's raw reply as an OpenAI-compatible server sends it: 10·n cached prompt tokens, n reasoning tokens."""
    return {
        "usage": {
            "prompt_tokens": 100 * n,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 10 * n},
            "completion_tokens_details": {"reasoning_tokens": n},
        }
    }


@pytest.fixture(scope="module")
def corpus(layout):
    from madqa.agents.corpus.render import PageRenderer
    from madqa.agents.corpus.search import open_index
    from madqa.loading_script.load import load_pages

    pages = load_pages()
    return open_index(pages, layout.root / "index", progress=False), PageRenderer(None, pages=pages), pages


def record_of(agent: Any, fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return build_record(
        {"id": "x", "question": "Q?"}, agent_name="t", model="m", elapsed_s=0.1, agent=agent, **fields, **extra
    )


def test_search_agent_ledger_counts_every_call_with_its_reported_details(corpus) -> None:
    index, renderer, pages = corpus
    search = ("search_documents", {"query": "riverton"})
    # step 3 (= T) searches anyway and is refused; call 4 is the forced final answer (its step keeps no reply)
    model = ScriptedModel(
        [search, search, search, ("final_answer", {"answer": ["42"], "citations": []})], raw=provider_raw
    )
    agent = build_search_agent(model, index, renderer, max_steps=3)
    agent.solve("Q?")
    assert agent.final_state == "forced" and len(model.calls) == 4
    line = record_of(agent, search_fields(agent), costs=corpus_costs(pages, index))
    # calls 1..4: input 100+200+300+400, output 4 x 7, cached 10+20+30+40, reasoning 1+2+3+4
    agent_role = {"input_tokens": 1000, "output_tokens": 28, "calls": 4, "cached_input_tokens": 100}
    assert line["usage"]["by_role"] == {"agent": {**agent_role, "reasoning_tokens": 10}}
    totals = {k: line["usage"][k] for k in ("input_tokens", "output_tokens", "cached_input_tokens")}
    assert totals == {"input_tokens": 1000, "output_tokens": 28, "cached_input_tokens": 100}
    costs = line["costs"]
    assert costs["corpus_pages"] == len(pages) and costs["ocr_pages"] == sum(
        p["text_source"] in ("ocr", "pdf+ocr") for p in pages
    )
    assert costs["index_backend"] == "whoosh" and costs["index_build_s"] >= 0


def test_a_provider_that_reports_no_details_gets_none_made_up(corpus) -> None:
    index, renderer, _ = corpus
    model = ScriptedModel([("final_answer", {"answer": ["x"], "citations": []})])
    agent = build_search_agent(model, index, renderer, max_steps=3)
    agent.solve("Q?")
    line = record_of(agent, search_fields(agent))
    assert line["usage"] == {
        "input_tokens": 100,
        "output_tokens": 7,
        "by_role": {"agent": {"input_tokens": 100, "output_tokens": 7, "calls": 1}},
    }
    assert "costs" not in line  # nothing known: no costs field


@pytest.fixture(scope="module")
def worker():
    w = ReplWorker(WorkerLimits(memory_mb=768, cpu_s=1, wall_s=3))
    yield w
    w.close()


def test_code_agent_sub_model_tokens_are_their_own_role(worker) -> None:
    corpus = build_corpus([{"document": "a.pdf", "page": 1, "text": "Total due: $12"}])

    def sub_raw(n: int) -> dict[str, Any]:  # the sub-model's provider reports cached tokens only
        return {"usage": {"prompt_tokens_details": {"cached_tokens": 5}}}

    sub = ScriptedModel([lambda text, tools: "SUB"], text_only=True, usage=(20, 3), raw=sub_raw)
    root = ScriptedModel(
        [
            code("a = llm_query('one')\nb = llm_query_batched(['two', 'three'])\nprint(a, b)"),
            code("final_answer(answer=['$12'], citations=[{'document': 'a.pdf', 'page': 1}])"),
        ],
        text_only=True,
        usage=(100, 10),
        raw=provider_raw,
    )
    agent = build_repl_agent(root, corpus, sub_model=sub, max_steps=4, worker=worker)
    assert agent.solve("Total?")["answer"] == ["$12"]
    fields = repl_fields(agent)
    by_role = fields["usage"]["by_role"]
    # root: 2 calls of (100, 10), cached 10 + 20, reasoning 1 + 2; sub: 3 calls of (20, 3), cached 3 x 5
    assert by_role == {
        "agent": {
            "input_tokens": 200,
            "output_tokens": 20,
            "calls": 2,
            "cached_input_tokens": 30,
            "reasoning_tokens": 3,
        },
        "sub_model": {"input_tokens": 60, "output_tokens": 9, "calls": 3, "cached_input_tokens": 15},
    }
    usage = fields["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["cached_input_tokens"]) == (260, 29, 45)
    effort = agent.effort()  # the ledger agrees with the effort breakdown the line already carried
    assert (effort["sub_input_tokens"], effort["sub_output_tokens"]) == (60, 9)
    assert effort["input_tokens"] == usage["input_tokens"] and effort["output_tokens"] == usage["output_tokens"]

"""The BM25 agent driven by a scripted smolagents model on the sample corpus: searches, what reaches the model, the
forced final answer at step T, citations, trajectory and the results line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers.fakes import ScriptedModel

from madqa.agents.harness.answer import AnswerFormatError, normalise_answer
from madqa.agents.harness.record import as_prediction, build_record
from madqa.agents.prompts import load_prompts
from madqa.agents.search_loop.agent import build_search_agent
from madqa.agents.search_loop.resources import record_fields
from madqa.metric.inputs import parse_prediction

Step = tuple[str, dict[str, Any]] | str


@pytest.fixture(scope="module")
def corpus(layout, tmp_path_factory):
    from madqa.agents.corpus.render import PageRenderer
    from madqa.agents.corpus.search import open_index
    from madqa.loading_script.load import load_pages

    pages = load_pages()
    return open_index(pages, layout.root / "index", progress=False), PageRenderer(None, pages=pages)


def last_user(call: dict[str, Any]) -> Any:
    return [m for m in call["messages"] if str(getattr(m["role"], "value", m["role"])) == "user"][-1]["content"]


def kinds(content: Any) -> list[str]:
    return [part["type"] for part in content]


def search(q: str) -> Step:
    return ("search_documents", {"query": q})


def answer(values: list[str], cites: list[dict[str, Any]]) -> Step:
    return ("final_answer", {"answer": values, "citations": cites})


def test_search_results_and_page_images_reach_the_next_input(corpus) -> None:
    index, renderer = corpus
    cite = {"document": "riverton_water_annual_report_2019.pdf", "page": 5}
    model = ScriptedModel([search("riverton"), search("lead AND service"), answer(["$17.85"], [cite])])
    agent = build_search_agent(model, index, renderer, max_steps=10)
    out = agent.solve("What fixed monthly amount?")
    assert out == {"answer": ["$17.85"], "citations": [cite]} and agent.final_state == "answered"
    history = agent.search_tool.history
    expected = [{"document": h.document, "page": h.page} for h in index.search("riverton", 5)]
    assert [h.query for h in history] == ["riverton", "lead AND service"]
    assert history[0].results == expected and history[0].count == 5
    # call 2 sees the 5 page images of search 1, then the observation that lists them in the same order
    content = last_user(model.calls[1])
    assert kinds(content) == ["image_url"] * 5 + ["text"]
    assert content[0]["image_url"]["url"].startswith("data:image/png;base64,")
    listing = content[-1]["text"]
    for i, hit in enumerate(expected, 1):
        assert f"{i}. file {hit['document']}, page {hit['page']}" in listing
    # call 3: the older search's images are pruned, only the latest search's images remain
    n_images = sum(
        kinds(m["content"]).count("image_url") for m in model.calls[2]["messages"] if isinstance(m["content"], list)
    )
    assert n_images == history[1].count > 0
    assert model.calls[0]["tools"] == ["search_documents", "final_answer"]


def test_text_only_model_gets_page_texts(corpus) -> None:
    index, renderer = corpus
    model = ScriptedModel([search("riverton"), answer(["x"], [])], text_only=True)
    agent = build_search_agent(model, index, renderer, page_chars=500)
    agent.solve("Q?")
    top = index.search("riverton", 5)[0]
    text = model.calls[1]["messages"][-1]["content"]
    assert isinstance(text, str) and "Observation:" in text
    assert f"file {top.document}, page {top.page} ---" in text
    assert renderer.text(top.document, top.page).strip()[:200] in text
    assert "(page text cut at 500 characters)" in text
    with pytest.raises(ValueError, match="text only"):
        build_search_agent(model, index, renderer, observe="image")


def test_unsearchable_or_empty_queries_are_observations(corpus) -> None:
    index, renderer = corpus
    model = ScriptedModel([search("the of"), search("zzqqxx"), answer([], [])], text_only=True)
    agent = build_search_agent(model, index, renderer)
    agent.solve("Q?")
    errors = [h.error for h in agent.search_tool.history]
    assert "stop words" in errors[0] and "No pages matched 'zzqqxx'" in errors[1]
    assert "No pages matched" in model.calls[2]["messages"][-1]["content"]
    assert all(s.error is None for s in agent.memory.steps[1:])


def test_last_step_offers_only_final_answer_and_says_so(corpus) -> None:
    index, renderer = corpus
    model = ScriptedModel([search("riverton"), search("water"), answer(["17.85"], [{"file": "a.pdf", "page": "2"}])])
    agent = build_search_agent(model, index, renderer, max_steps=3)
    out = agent.solve("Q?")
    assert [c["tools"] for c in model.calls] == [["search_documents", "final_answer"]] * 2 + [["final_answer"]]
    assert load_prompts("bm25")["madqa"]["last_step"].split(":")[0] in last_user(model.calls[2])[-1]["text"]
    assert out == {"answer": ["17.85"], "citations": [{"document": "a.pdf", "page": 2}]}
    assert agent.final_state == "answered" and len(agent.search_tool.history) == 2


def _record_of_q(agent: Any, output: dict[str, Any] | None, model: str) -> dict[str, Any]:
    """The results line of the search agent's answer ``output`` to question "Q?" (id "x")."""
    return build_record(
        {"id": "x", "question": "Q?"},
        agent_name="bm25",
        model=model,
        elapsed_s=0.1,
        output=output,
        agent=agent,
        **record_fields(agent),
    )


def test_forced_structured_answer_when_step_t_fails(corpus) -> None:
    index, renderer = corpus
    # step 3 (= T) searches anyway: refused; the fallback call offers only final_answer and is parsed
    model = ScriptedModel([search("riverton"), search("water"), search("again"), answer(["42"], [])])
    agent = build_search_agent(model, index, renderer, max_steps=3)
    out = agent.solve("Q?")
    assert out == {"answer": ["42"], "citations": []} and agent.final_state == "forced"
    assert len(model.calls) == 4 and model.calls[3]["tools"] == ["final_answer"]
    assert len(agent.search_tool.history) == 2
    record = _record_of_q(agent, out, model="scripted")
    assert record["error"] is None and record["final_state"] == "forced"
    assert record["trajectory"][-1]["tool_calls"][0]["name"] == "final_answer"
    assert "AgentMaxStepsError" in record["trajectory"][-1]["error"]


def test_no_answer_at_all_is_recorded_as_error(corpus) -> None:
    index, renderer = corpus
    model = ScriptedModel(["I think it is 42."], text_only=True)
    agent = build_search_agent(model, index, renderer, max_steps=2)
    assert agent.solve("Q?") == {"answer": [], "citations": []}
    record = _record_of_q(agent, None, model="m")
    assert record["final_state"] == "no_answer" and record["error"].startswith("no final answer after 2 steps")


def test_invalid_citation_is_sent_back_and_fixed(corpus) -> None:
    index, renderer = corpus
    good = {"document": "b.pdf", "page": 1}
    model = ScriptedModel([answer(["x"], [{"document": "b.pdf", "page": 0}]), answer(["x"], [good])], text_only=True)
    agent = build_search_agent(model, index, renderer)
    assert agent.solve("Q?")["citations"] == [good]
    assert "pages are whole numbers counted from 1" in model.calls[1]["messages"][-1]["content"]


def test_trajectory_usage_and_results_line(corpus) -> None:
    index, renderer = corpus
    model = ScriptedModel([search("riverton"), answer(["$17.85"], [{"document": "r.pdf", "page": 5}])])
    agent = build_search_agent(model, index, renderer)
    out = agent.solve("Q?")
    record = build_record(
        {"id": "q9", "question": "Q?"},
        agent_name="bm25",
        model="scripted",
        elapsed_s=1.5,
        output=out,
        agent=agent,
        config={"top_k": 5},
        **record_fields(agent),
    )
    line = json.loads(json.dumps(record))
    assert line["steps"] == 1 and line["usage"] == {
        "input_tokens": 300,
        "output_tokens": 14,
        "by_role": {"agent": {"input_tokens": 300, "output_tokens": 14, "calls": 2}},  # the token ledger
    }
    traj = line["trajectory"]
    assert [t["tool_calls"][0]["name"] for t in traj] == ["search_documents", "final_answer"]
    assert traj[0]["images"] == 5 and traj[0]["input_tokens"] == 100 and traj[0]["duration_s"] >= 0
    assert traj[1]["final"] is True
    pred = parse_prediction(line, "line 1")
    assert pred == as_prediction(line)
    assert pred.steps == 1 and pred.citations[0].page == 5 and pred.answer == ("$17.85",)


def test_oracle_pages_are_given_up_front(corpus, layout) -> None:
    _, renderer = corpus
    evidence = [
        {"document": "riverton_water_annual_report_2019.pdf", "page": 5},
        {"document": "riverton_water_annual_report_2020.pdf", "page": 5},
    ]
    model = ScriptedModel([answer(["$17.85"], evidence[:1])])
    agent = build_search_agent(model, None, renderer, oracle_pages=evidence)
    assert agent.solve("Q?")["answer"] == ["$17.85"]
    assert model.calls[0]["tools"] == ["final_answer"]
    task = last_user(model.calls[0])
    assert kinds(task) == ["text", "image_url", "image_url"]
    assert "1. file riverton_water_annual_report_2019.pdf, page 5" in task[0]["text"]
    text_model = ScriptedModel([answer(["x"], [])], text_only=True)
    build_search_agent(text_model, None, renderer, oracle_pages=evidence).solve("Q?")
    assert renderer.text(evidence[1]["document"], 5).strip()[:100] in text_model.calls[0]["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("answer_in", "cites_in", "expected"),
    [
        ("Paris", None, {"answer": ["Paris"], "citations": []}),
        (
            [" a ", "", 3],
            [{"file": "x.pdf", "page": 2.0}],
            {"answer": ["a", "3"], "citations": [{"document": "x.pdf", "page": 2}]},
        ),
    ],
)
def test_normalise_answer(answer_in: Any, cites_in: Any, expected: dict[str, Any]) -> None:
    assert normalise_answer(answer_in, cites_in) == expected


@pytest.mark.parametrize(
    "bad",
    [
        {"answer": {"a": 1}},
        {"citations": [{"page": 1}]},
        {"citations": ["a.pdf"]},
        {"citations": [{"document": "a.pdf", "page": "one"}]},
    ],
)
def test_normalise_answer_rejects_bad_shapes(bad: dict[str, Any]) -> None:
    with pytest.raises(AnswerFormatError, match="final_answer was not accepted"):
        normalise_answer(bad.get("answer", ["x"]), bad.get("citations", []))


def test_min_searches_offers_only_search_until_done(corpus) -> None:
    index, renderer = corpus
    model = ScriptedModel([answer(["too early"], []), search("riverton"), answer(["x"], [])], text_only=True)
    agent = build_search_agent(model, index, renderer, min_searches=1)
    assert agent.solve("Q?")["answer"] == ["x"]
    assert [c["tools"] for c in model.calls] == [
        ["search_documents"],
        ["search_documents"],
        ["search_documents", "final_answer"],
    ]
    assert "Search at least 1 time(s) before answering" in model.calls[1]["messages"][-1]["content"]


def test_engine_failure_is_an_observation(corpus) -> None:
    from madqa.agents.search_loop.tools import SearchDocumentsTool

    class Broken:
        def search(self, query: str, k: int = 5):
            raise RuntimeError("index file vanished")

    tool = SearchDocumentsTool(Broken(), corpus[1])  # type: ignore[arg-type]
    assert tool.forward("riverton").startswith("The search failed (RuntimeError: index file vanished)")
    assert tool.history[0].as_dict() == {
        "query": "riverton",
        "results": [],
        "count": 0,
        "error": tool.history[0].error,
    }

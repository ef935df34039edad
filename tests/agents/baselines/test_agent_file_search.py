"""The managed RAG baseline (``--agent file-search``, paper G.2) against a local stand-in of each provider's HTTP
API (:mod:`provider_standin`), through the official SDKs pointed at it by base URL: the collection is uploaded
once, the store ids are cached and reused, the retrieved chunks and cited files come back as corpus pages, and a
provider error becomes an error line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_cli import evaluate_json, madqa_env, run_agent_lines
from helpers.provider_standin import StandIn, serve

from madqa.agents.harness.config import RunConfig, RunError

pytestmark = pytest.mark.server

#: This file's folder: subprocesses import its model factories (``py:test_…``) by name.
HERE = Path(__file__).resolve().parent

FAST_POLL = 0.001  # seconds between indexing polls (the stand-in is done on the second poll)


@pytest.fixture
def standin() -> Iterator[tuple[StandIn, str]]:
    state, server = serve()
    try:
        yield state, server.base
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-standin")
    monkeypatch.setenv("GEMINI_API_KEY", "g-standin")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    for name in ("OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)


def _options(provider: str, base: str) -> dict[str, Any]:
    return {"api_base": base + "/v1" if provider == "openai" else base, "poll_interval": FAST_POLL, "retries": 0}


def _prepare(provider: str, base: str, **config: Any) -> Any:
    from madqa.agents.harness.registry import get_agent

    entry = get_agent("file-search")
    run = RunConfig(agent="file-search", options={"provider": provider, **config})
    entry.check(run)
    return entry.prepare(run, model_options=_options(provider, base), dataset={"name": "sample", "revision": None})


def _uploads(state: StandIn, provider: str) -> list[dict[str, Any]]:
    if provider == "openai":
        return state.calls("POST", r"^/v1/files$")
    return state.calls("POST", r":uploadToFileSearchStore$")


def _text_question(gold: list[dict[str, Any]], state: StandIn) -> dict[str, Any]:
    """A dev question whose retrieval by the stand-in finds chunks (pages with a text layer)."""
    file_ids = list(state.files)
    for row in gold:
        if state.search(row["question"], file_ids):
            return row
    raise AssertionError("no dev question retrieves anything from the stand-in")


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_uploads_once_reuses_the_cached_store_and_maps_citations_to_pages(
    layout, keys, standin, provider: str
) -> None:
    from madqa.loading_script.load import load_documents, load_gold

    state, base = standin
    documents = sorted(str(d["document"]) for d in load_documents())
    prepared = _prepare(provider, base)
    try:
        uploads = _uploads(state, provider)
        assert len(uploads) == len(documents)  # every PDF once
        if provider == "openai":
            assert sorted(f["filename"] for f in state.files.values()) == documents
            assert all(r["headers"]["authorization"] == "Bearer sk-standin" for r in state.requests)
            (batch,) = state.calls("POST", r"/file_batches$")
            assert {f["attributes"]["document"] for f in batch["json"]["files"]} == set(documents)
            assert len(state.calls("GET", r"/file_batches/")) == 2  # polled until indexed
        else:
            assert all(r["headers"]["x-goog-upload-command"] == "start" for r in uploads)
            assert {state.files[f]["document"] for f in state.files} == set(documents)
            assert len(state.calls("GET", r"/upload/operations/")) == 2 * len(documents)  # each import polled
        assert prepared.settings["provider"] == provider and prepared.settings["max_steps"] == 1
        row = _text_question(load_gold("dev"), state)
        chunks = state.search(row["question"], list(state.files))
        line = prepared.answer(row)
        assert line["error"] is None and line["agent"] == "file-search" and line["answer"] == ["stand-in"]
        # The stand-in model cites the best chunk's file and page: the line's citations name that corpus page.
        assert line["citations"] == [{"document": chunks[0].document, "page": chunks[0].page}]
        (search,) = line["search_history"]
        expected = []
        for c in chunks:  # each retrieved chunk's page, recovered (OpenAI: from its text; Gemini: pageNumber)
            if {"document": c.document, "page": c.page} not in expected:
                expected.append({"document": c.document, "page": c.page})
        assert search["results"] == expected and search["count"] == len(chunks) and row["question"] in search["query"]
        assert line["file_search"]["cited_pages"][0] == expected[0]  # the annotation / grounding support
        assert line["steps"] == 1 and line["usage"]["input_tokens"] > 0 and line["usage"]["output_tokens"] > 0
        agent_role = line["usage"]["by_role"]["agent"]  # one service call; its totals are the line's
        assert agent_role["calls"] == 1 and agent_role["input_tokens"] == line["usage"]["input_tokens"]
        # the service's fee is per search call: counted in costs, not priced by tokens
        assert line["costs"] == {"managed_service": f"{provider}-file-search", "service_search_calls": 1}
        assert len(state.calls("POST", r"/responses$|:generateContent$")) == 1  # one call per question
    finally:
        prepared.close()
    store = line["file_search"]["store"]
    before = len(state.requests)
    again = _prepare(provider, base)  # a second run: the cached store, nothing uploaded
    new = state.requests[before:]
    assert again.store.store == store and len(_uploads(state, provider)) == len(documents)
    assert [(r["method"], r["path"].rsplit("/", 1)[-1]) for r in new] == [("GET", store.rsplit("/", 1)[-1])]
    fresh = _prepare(provider, base, refresh_store=True)
    assert fresh.store.store != store and len(_uploads(state, provider)) == 2 * len(documents)


def test_a_chunk_without_a_stated_page_is_placed_by_its_text(layout, keys, standin) -> None:
    from madqa.loading_script.load import load_gold

    state, base = standin
    state.gemini_pages = False
    prepared = _prepare("gemini", base)
    row = _text_question(load_gold("dev"), state)
    chunks = state.search(row["question"], list(state.files))
    line = prepared.answer(row)
    assert line["search_history"][0]["results"][0] == {"document": chunks[0].document, "page": chunks[0].page}


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_provider_error_becomes_an_error_line_not_a_crash(layout, keys, standin, provider: str) -> None:
    from madqa.agents.harness.protocol import AnswerEvent
    from madqa.loading_script.load import load_gold

    state, base = standin
    prepared = _prepare(provider, base)
    state.fail_answers = 400
    row = load_gold("dev")[0]
    events = list(prepared.stream(row["question"], row))
    (done,) = events
    assert isinstance(done, AnswerEvent) and done.record == prepared.answer(row) | {"elapsed_s": done.elapsed_s}
    line = done.record
    assert line["error_kind"] == "provider" and "400" in line["error"] and line["final_state"] == "error"
    assert line["answer"] == [] and line["citations"] == [] and line["steps"] == 0


def test_a_reply_without_the_json_answer_is_the_models_failure(layout, keys, standin) -> None:
    from madqa.loading_script.load import load_gold

    state, base = standin
    state.reply = lambda question, chunks: "I could not find it."
    prepared = _prepare("openai", base)
    row = _text_question(load_gold("dev"), state)
    line = prepared.answer(row)
    assert line["error_kind"] == "model" and line["final_state"] == "no_answer" and "no final answer" in line["error"]
    assert line["search_history"][0]["count"] > 0 and line["trajectory"][0]["model_output"] == "I could not find it."


def test_cited_files_outside_the_corpus_are_dropped_and_counted(layout, keys, standin) -> None:
    from madqa.loading_script.load import load_gold

    state, base = standin
    row = load_gold("dev")[0]
    doc = row["evidence"][0]["document"] if row.get("evidence") else None
    state.reply = lambda q, c: json.dumps(
        {
            "answer": "x",
            "citations": [
                {"file": "nowhere.pdf", "page": 1},
                {"file": str(doc).upper(), "page": 1},
                {"file": str(doc), "page": 999},
            ],
        }
    )
    prepared = _prepare("openai", base)
    line = prepared.answer(row)
    assert line["answer"] == ["x"] and line["citations"] == [{"document": doc, "page": 1}]
    assert line["file_search"]["dropped_citations"] == 2


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_missing_key_stops_the_run_before_anything_is_sent(
    layout, keys, standin, monkeypatch, provider: str
) -> None:
    state, base = standin
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RunError, match="OPENAI_API_KEY" if provider == "openai" else "GOOGLE_API_KEY or GEMINI"):
        _prepare(provider, base)
    assert state.requests == []


def test_settings_the_agent_cannot_use_are_refused() -> None:
    from madqa.agents.harness.registry import check_config, get_agent

    entry = get_agent("file-search")
    with pytest.raises(RunError, match="needs --provider openai or gemini"):
        entry.check(RunConfig(agent="file-search"))
    with pytest.raises(RunError, match="litellm:gemini/MODEL_ID"):
        entry.check(RunConfig(agent="file-search", model="openai:gpt-5", options={"provider": "gemini"}))
    with pytest.raises(RunError, match="--retriever is for"):
        check_config(RunConfig(agent="file-search", options={"provider": "openai", "retriever": "bm25"}))
    entry.check(
        RunConfig(agent="file-search", model="litellm:gemini/gemini-2.5-flash", options={"provider": "gemini"})
    )


def test_page_recovery_places_every_text_page_of_the_corpus_on_itself(layout) -> None:
    from madqa.agents.baselines.file_search.answers import locate_page
    from madqa.agents.baselines.file_search.store import page_texts
    from madqa.loading_script.load import load_pages

    pages = page_texts(load_pages())
    placed = [
        (doc, n, locate_page(text, texts))
        for doc, texts in pages.items()
        for n, text in texts.items()
        if len(text.split()) >= 20
    ]
    assert len(placed) > 20 and all(n == got for _, n, got in placed), [p for p in placed if p[1] != p[2]][:3]


def test_cli_run_against_the_standin_is_scored_by_evaluate(layout, standin, tmp_path: Path) -> None:
    state, base = standin
    env = madqa_env(HERE, OPENAI_API_KEY="sk-standin")
    env.pop("OPENAI_BASE_URL", None)
    out = tmp_path / "fs.jsonl"
    flags = [
        "--provider",
        "openai",
        "--split",
        "dev",
        "--limit",
        "2",
        "--api-base",
        base + "/v1",
        "--model-option",
        f"poll_interval={FAST_POLL}",
    ]
    lines = run_agent_lines("file-search", out, flags, env)
    assert len(lines) == 2 and all(x["agent"] == "file-search" and x["error"] is None for x in lines)
    assert lines[0]["config"]["provider"] == "openai" and lines[0]["config"]["service_model"] == "gpt-5.2-2025-12-11"
    assert "api_key" not in json.dumps(lines[0]["config"]) and len(state.calls("POST", r"/responses$")) == 2
    assert evaluate_json(out, env)["n_predicted"] == 2

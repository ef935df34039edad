"""The token ledger (metric/ledger.py): cached and reasoning tokens read from real provider reply types (OpenAI's
``ChatCompletion``, LiteLLM's ``ModelResponse``) only where reported, never a made-up 0; the published results schema
describes ``usage.by_role`` and ``costs``."""

from __future__ import annotations

import doctest
import importlib
import json
from typing import Any

import jsonschema
import pytest
from helpers.paths import ROOT
from smolagents import ChatMessage, MessageRole
from smolagents.monitoring import TokenUsage

from madqa.metric.ledger import Tally, message_usage, reported_details, tally_of, totals

SCHEMA = json.loads((ROOT / "metric" / "results.schema.json").read_text(encoding="utf-8"))
LINE = {"id": "q1", "answer": ["x"], "citations": [], "steps": 2}


def test_doctests() -> None:
    result = doctest.testmod(importlib.import_module("madqa.metric.ledger"))
    assert result.attempted >= 6 and result.failed == 0


def openai_reply(details: dict[str, Any]) -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500, **details},
        }
    )


def test_openai_reply_details_only_where_reported() -> None:
    both = openai_reply(
        {"prompt_tokens_details": {"cached_tokens": 1024}, "completion_tokens_details": {"reasoning_tokens": 256}}
    )
    assert reported_details(both) == {"cached_input_tokens": 1024, "reasoning_tokens": 256}
    # a reported 0 is kept (the provider said so); an absent detail is absent, not 0
    zero = openai_reply({"prompt_tokens_details": {"cached_tokens": 0}})
    assert reported_details(zero) == {"cached_input_tokens": 0}
    assert reported_details(openai_reply({})) == {}
    message = ChatMessage(
        role=MessageRole.ASSISTANT,
        content="hi",
        raw=both,
        token_usage=TokenUsage(input_tokens=1200, output_tokens=300),
    )
    assert message_usage(message) == {
        "input_tokens": 1200,
        "output_tokens": 300,
        "cached_input_tokens": 1024,
        "reasoning_tokens": 256,
    }
    assert message_usage(ChatMessage(role=MessageRole.ASSISTANT, content="x")) is None  # no token usage at all


def test_litellm_reply_details(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else importing LiteLLM fetches its cost map
    litellm = pytest.importorskip("litellm")
    reply = litellm.ModelResponse(
        choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
        usage={
            "prompt_tokens": 50,
            "completion_tokens": 9,
            "total_tokens": 59,
            "prompt_tokens_details": {"cached_tokens": 32},
            "completion_tokens_details": {"reasoning_tokens": 4},
        },
    )
    assert reported_details(reply) == {"cached_input_tokens": 32, "reasoning_tokens": 4}


def test_tally_by_hand() -> None:
    calls = [
        {"input_tokens": 100, "output_tokens": 10, "cached_input_tokens": 60},
        {"input_tokens": 200, "output_tokens": 20, "reasoning_tokens": 5},
        None,  # a call whose reply had no token usage: counted as a call, adds no tokens
    ]
    assert tally_of(calls) == {
        "input_tokens": 300,
        "output_tokens": 30,
        "calls": 3,
        "cached_input_tokens": 60,
        "reasoning_tokens": 5,
    }
    tally = Tally()
    tally.add(None)
    assert tally.unreported == 1 and "cached_input_tokens" not in tally.as_dict()
    by_role = {"agent": tally_of(calls), "sub_model": tally_of([{"input_tokens": 7, "output_tokens": 1}])}
    by_role["embedder"] = {"calls": 2, "model": "wordllama"}  # embedder tokens are not generation tokens
    assert totals(by_role) == {"input_tokens": 307, "output_tokens": 31, "cached_input_tokens": 60}


def valid(line: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(SCHEMA).is_valid(line)


def test_schema_describes_the_ledger_and_costs() -> None:
    ledger = {
        "input_tokens": 307,
        "output_tokens": 31,
        "cached_input_tokens": 60,
        "by_role": {
            "agent": {"input_tokens": 300, "output_tokens": 30, "calls": 3, "cached_input_tokens": 60},
            "sub_model": {"input_tokens": 7, "output_tokens": 1, "calls": 1, "reasoning_tokens": 0},
            "embedder": {"calls": 2, "model": "wordllama"},
        },
    }
    costs = {"index_build_s": 1.5, "index_backend": "tantivy", "ocr_pages": 3, "corpus_pages": 40}
    assert valid({**LINE, "usage": ledger, "costs": costs})
    assert valid({**LINE, "usage": {"input_tokens": 1, "output_tokens": 1}})  # an old line: no ledger
    assert not valid({**LINE, "usage": {**ledger, "by_role": {"agent": {"input_tokens": -1, "calls": 1}}}})
    assert not valid({**LINE, "usage": {**ledger, "by_role": {"oracle": {"calls": 1}}}})  # not a role
    assert not valid({**LINE, "usage": {**ledger, "by_role": {"agent": {"calls": 1, "input_tokens": 2.5}}}})
    assert not valid({**LINE, "costs": {"index_build_s": -2}})
    assert valid({**LINE, "costs": {"retriever_build_s": {"bm25": 0.7, "dense:wordllama:256": 3.2}}})
    assert not valid({**LINE, "costs": {"retriever_build_s": {"bm25": -1}}})

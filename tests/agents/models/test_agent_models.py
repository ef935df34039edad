"""Model specs → smolagents models: parsing, clear errors, schema bounds, and the bundled local model (if built)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from smolagents import ChatMessage, MessageRole, Model

from madqa.agents.harness import deps
from madqa.agents.harness.answer import FinalAnswerTool
from madqa.agents.models import factory as models
from madqa.agents.models import llamacpp
from madqa.agents.models.factory import (
    MissingDependencyError,
    bounded_schema,
    make_model,
    parse_spec,
    tool_call_schema,
)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("local", ("local", "")),
        ("local:/m/x.gguf", ("local", "/m/x.gguf")),
        ("openai:gpt-4.1", ("openai", "gpt-4.1")),
        ("litellm:anthropic/claude-sonnet-4-5", ("litellm", "anthropic/claude-sonnet-4-5")),
        ("hf:Qwen/Qwen3-VL-8B-Instruct", ("hf", "Qwen/Qwen3-VL-8B-Instruct")),
        ("transformers:HuggingFaceTB/SmolLM2-135M-Instruct", ("transformers", "HuggingFaceTB/SmolLM2-135M-Instruct")),
        (" py:mod:factory ", ("py", "mod:factory")),
    ],
)
def test_parse_spec(spec: str, expected: tuple[str, str]) -> None:
    assert parse_spec(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4", "has no provider"),
        ("anthropic:claude", "has no provider"),
        ("openai:", "names no model"),
        ("py:nowhere:f", "cannot import"),
    ],
)
def test_bad_specs_are_value_errors(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_model(spec)


def test_missing_extra_names_the_pip_extra(monkeypatch) -> None:
    monkeypatch.setattr(deps.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'madqa\[litellm\]'"):
        make_model("litellm:gpt-4.1")
    with pytest.raises(ValueError, match=r"madqa\[local\]"):  # also a ValueError, so CLIs report it as one line
        make_model("local")
    with pytest.raises(ImportError, match=r"madqa\[transformers\]"):
        make_model("transformers:some/model")


def test_openai_needs_a_key_or_a_server(monkeypatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        make_model("openai:gpt-4.1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = make_model("openai:served-model")
    assert model.model_id == "served-model" and model.client_kwargs["base_url"] == "http://127.0.0.1:9/v1"


def test_hf_spec_builds_an_inference_client_model_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_test")  # checked up front (test_model_options.py); never sent here
    model = make_model("hf:Qwen/Qwen2.5-VL-7B-Instruct")
    assert type(model).__name__ == "InferenceClientModel" and model.model_id == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert not models.is_text_only(model)


def test_py_spec_builds_a_custom_model() -> None:
    model = make_model("py:test_agent_models:echo_model", model_id="e")
    assert isinstance(model, Model) and model.model_id == "e"
    with pytest.raises(ValueError, match="not a smolagents Model"):
        make_model("py:test_agent_models:not_a_model")


class EchoModel(Model):
    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        return ChatMessage(role=MessageRole.ASSISTANT, content='{"reasoning": "same", "verdict": "correct"}')


def echo_model(**kwargs: Any) -> EchoModel:
    return EchoModel(**kwargs)


def not_a_model() -> str:
    return "nope"


def test_models_serve_as_the_evaluate_judge() -> None:
    from madqa.cli import UserError
    from madqa.cli.evaluate_cmd import resolve_judge
    from madqa.metric.judge import as_complete, parse_verdict

    model = make_model("py:test_agent_models:echo_model")
    assert parse_verdict(as_complete(model)("Grade this.")) == "correct"
    with pytest.raises(UserError, match="has no provider"):  # spec errors become one-line CLI errors
        resolve_judge("gpt-4")


def test_bounded_schema_closes_objects_and_bounds_lists() -> None:
    schema = tool_call_schema([FinalAnswerTool()])
    args = schema["properties"]["arguments"]
    assert schema["properties"]["name"] == {"const": "final_answer"}
    assert args["additionalProperties"] is False and args["required"] == ["answer", "citations"]
    assert args["properties"]["answer"]["maxItems"] == llamacpp.MAX_ARRAY_ITEMS
    assert args["properties"]["answer"]["items"]["maxLength"] == llamacpp.MAX_STRING_CHARS
    cite = args["properties"]["citations"]["items"]
    assert cite["required"] == ["document", "page"] and cite["additionalProperties"] is False
    assert bounded_schema({"type": "string", "enum": ["a"]}) == {"type": "string", "enum": ["a"]}


@pytest.fixture(scope="module")
def local_model():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'madqa[local]'")
    return make_model("local", max_tokens=160)


@pytest.mark.slow
def test_local_model_always_makes_a_well_formed_tool_call(local_model) -> None:
    from madqa.agents.search_loop.tools import SearchDocumentsTool

    tool = SearchDocumentsTool(None, None)  # type: ignore[arg-type]  # only its schema is used
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Answer questions by calling a tool."}]},
        {"role": "user", "content": [{"type": "text", "text": "Question: What did phase one cost?"}]},
    ]
    reply = local_model.generate(messages, tools_to_call_from=[tool, FinalAnswerTool()])
    assert reply.tool_calls and reply.tool_calls[0].function.name in ("search_documents", "final_answer")
    args = reply.tool_calls[0].function.arguments
    assert isinstance(args, dict) and set(args) in ({"query"}, {"answer", "citations"})
    assert reply.token_usage.input_tokens > 0 and reply.token_usage.output_tokens > 0
    forced = local_model.generate(messages, tools_to_call_from=[FinalAnswerTool()])
    assert forced.tool_calls[0].function.name == "final_answer"
    assert local_model.model_id.startswith("local:") and local_model.flatten_messages_as_text


def test_local_model_honours_a_json_schema_response_format(local_model) -> None:
    from madqa.metric.judge import VERDICT_SCHEMA, as_complete, parse_verdict

    reply = as_complete(local_model)('Is "17.85" the same as "$17.85"? Reply with JSON {"reasoning", "verdict"}.')
    data = json.loads(reply)
    assert set(data) == {"reasoning", "verdict"} and parse_verdict(data) is not None
    assert VERDICT_SCHEMA["properties"]["verdict"]["enum"] == ["correct", "partial", "incorrect"]


def test_local_model_drops_old_turns_to_fit_its_context() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'madqa[local]'")
    model = make_model("local", n_ctx=512, max_tokens=48)
    turns = [
        {"role": "system", "content": [{"type": "text", "text": "Answer in JSON."}]},
        {"role": "user", "content": [{"type": "text", "text": "Question: which page?"}]},
    ]
    for i in range(12):
        turns.append({"role": "assistant", "content": [{"type": "text", "text": f"search {i} " + "words " * 30}]})
        turns.append({"role": "user", "content": [{"type": "text", "text": f"Observation {i}: " + "text " * 40}]})
    reply = model.generate(
        turns,
        response_format={
            "type": "json_schema",
            "json_schema": {"schema": {"type": "object", "properties": {"page": {"type": "integer"}}}},
        },
    )
    assert 0 < reply.token_usage.input_tokens <= 512 - 48 and set(json.loads(reply.content)) == {"page"}
    assert 1 <= json.loads(reply.content)["page"] <= 9999


def test_local_model_fit_keeps_a_stable_prefix_as_the_conversation_grows() -> None:
    """Turns are left out in bulk and stay out, so most calls extend the previous prompt (llama.cpp's cache)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'madqa[local]'")
    model = make_model("local", n_ctx=512, max_tokens=48)
    chat = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "Question: which page?"}]
    assert model._fit(list(chat)) == chat  # fits: unchanged
    previous: list[dict[str, str]] = []
    extended = shifted = 0
    for i in range(40):
        chat.append({"role": "assistant" if i % 2 == 0 else "user", "content": f"turn {i} " + "words " * 25})
        fitted = model._fit(list(chat))
        assert fitted[:2] == chat[:2] and fitted[-1] == chat[-1]
        assert sum(model._count(m["content"]) + 16 for m in fitted) <= 512 - 48 - 64
        if previous:
            same = fitted[: len(previous)] == previous
            extended, shifted = extended + same, shifted + (not same)
        previous = fitted
    assert shifted >= 2 and extended >= 3 * shifted  # without bulk drops every call past the budget would shift
    other = [{"role": "system", "content": "Another task."}, {"role": "user", "content": "Q2"}]
    assert model._fit(other + chat[2:4]) == other + chat[2:4]  # a new conversation that fits is not cut

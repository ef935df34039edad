"""Provider settings (`--model-option`), the request rewriting for self-hosted servers, credentials, time budgets."""

from __future__ import annotations

import pytest

from madqa.agents.harness.config import public_options
from madqa.agents.models.factory import check_credentials, effective_options, is_text_only, make_model
from madqa.agents.models.options import (
    ModelOptionError,
    ModelOptions,
    endpoint_profile,
    parse_model_options,
)
from madqa.agents.models.server_compat import adapt_request, is_truncated_reply

LOCAL_SERVER = "http://127.0.0.1:8080/v1"


def test_options_are_typed_and_checked() -> None:
    assert parse_model_options(["max_tokens=64", "temperature=0", "seed=3", "timeout=2.5", "retries=0"]) == {
        "max_tokens": 64,
        "temperature": 0.0,
        "seed": 3,
        "timeout": 2.5,
        "retries": 0,
    }
    # a key we do not know goes to the provider as it is, its value read as JSON when it parses
    assert parse_model_options(["reasoning_effort=low", 'logit_bias={"1": -5}']) == {
        "reasoning_effort": "low",
        "logit_bias": {"1": -5},
    }
    for bad, says in [
        ("max_token=5", "did you mean 'max_tokens'"),
        ("max_tokens=many", "expected int"),
        ("tool_choice=always", "expected one of required, auto, none"),
        ("timeout=0", "positive"),
        ("temperature", "KEY=VALUE"),
        ("retries=99", "between 0 and 20"),
    ]:
        with pytest.raises(ModelOptionError, match=says):
            parse_model_options([bad])


def test_secrets_are_never_recorded() -> None:
    options = {"api_key": "sk-1", "x_api_token": "t", "client_secret": "s", "max_tokens": 5, "api_base": "http://h"}
    assert public_options(options) == {"max_tokens": 5, "api_base": "http://h"}
    # a key inside the base URL (user:password or a query parameter) is not recorded either
    assert public_options({"api_base": "http://u:sk-9@[::1]:8080/v1?api-key=sk-8"}) == {
        "api_base": "http://[::1]:8080/v1"
    }


def test_profiles_follow_the_endpoint() -> None:
    assert endpoint_profile(None) == "openai" and endpoint_profile("https://api.openai.com/v1") == "openai"
    assert endpoint_profile(LOCAL_SERVER) == endpoint_profile("https://my-vllm.example/v1") == "compatible"
    hosted, local = ModelOptions.resolve({}), ModelOptions.resolve({}, api_base=LOCAL_SERVER)
    assert (hosted.tool_choice, hosted.content, hosted.response_format) == ("required", "parts", "json_schema")
    assert (local.tool_choice, local.content, local.response_format) == ("auto", "text", "json_object")
    assert local.max_tokens < hosted.max_tokens
    assert ModelOptions.resolve({"content": "parts", "max_tokens": 7}, api_base=LOCAL_SERVER).content == "parts"


def _request(**extra):
    return {
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {
                "role": "user",
                "content": [{"type": "text", "text": "q"}, {"type": "image_url", "image_url": {"url": "data:"}}],
            },
        ],
        **extra,
    }


def test_requests_are_rewritten_for_a_compatible_server() -> None:
    options = ModelOptions.resolve({}, api_base=LOCAL_SERVER)
    schema = {"type": "object"}
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    out = adapt_request(
        _request(tools=[{"t": 1}, {"t": 2}], tool_choice="required", response_format=fmt), options, "compatible"
    )
    assert out["messages"][0]["content"] == "a\nb"  # system: one string
    assert isinstance(out["messages"][1]["content"], list)  # a user message with an image keeps its parts
    assert out["tool_choice"] == "auto"
    assert out["response_format"]["type"] == "json_object"
    assert out["response_format"]["schema"]["type"] == "object"
    assert out["max_tokens"] == options.max_tokens and "max_completion_tokens" not in out
    forced = {"type": "function", "function": {"name": "final_answer"}}
    final_only = [{"type": "function", "function": {"name": "final_answer"}}]
    assert (
        adapt_request(_request(tools=final_only, tool_choice="required"), options, "compatible")["tool_choice"]
        == forced
    )
    assert adapt_request(_request(tools=[{}], tool_choice=forced), options, "compatible")["tool_choice"] == forced
    no_tools = adapt_request(
        _request(tools=[{}], tool_choice="required"), ModelOptions.resolve({"tool_choice": "none"}), "compatible"
    )
    assert "tools" not in no_tools and "tool_choice" not in no_tools


def test_requests_to_openai_keep_its_richer_forms() -> None:
    options = ModelOptions.resolve({})
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}
    out = adapt_request(_request(tools=[{}], tool_choice="required", response_format=fmt), options, "openai")
    assert out["tool_choice"] == "required" and out["response_format"] == fmt
    assert out["max_completion_tokens"] == options.max_tokens and "max_tokens" not in out
    plain = adapt_request(_request(response_format=fmt), ModelOptions.resolve({"response_format": "none"}), "openai")
    assert "response_format" not in plain


def test_openai_spec_to_a_local_server_is_a_text_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", LOCAL_SERVER)
    model = make_model("openai:served")
    assert is_text_only(model)  # the bm25 agent then shows page texts, never images the server would choke on
    assert not is_text_only(make_model("openai:served", content="parts"))
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert not is_text_only(make_model("openai:gpt-4.1"))


def test_credentials_are_checked_before_any_question(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HF_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # no token saved by `hf auth login` either
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        check_credentials("openai:gpt-4.1")
    with pytest.raises(ValueError, match="HF_TOKEN"):
        check_credentials("hf:Qwen/Qwen2.5-VL-7B-Instruct")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        check_credentials("litellm:anthropic/claude-sonnet-4-5")
    check_credentials("openai:served", api_base=LOCAL_SERVER)  # a local server needs no key
    check_credentials("litellm:openai/served", api_base=LOCAL_SERVER)
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    check_credentials("hf:Qwen/Qwen2.5-VL-7B-Instruct")


def test_a_run_with_a_bad_option_or_credential_stops_before_the_first_question(
    built_home, tmp_path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from madqa.cli import main

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    out = tmp_path / "r.jsonl"
    assert main(["run", "--model", "local", "--model-option", "max_token=5", "-o", str(out), "--no-progress"]) == 2
    assert "did you mean 'max_tokens'" in caplog.text
    caplog.clear()
    assert main(["run", "--model", "hf:some/model", "--limit", "1", "-o", str(out), "--no-progress"]) == 2
    assert "HF_TOKEN" in caplog.text
    assert not out.exists()


def test_truncated_replies_are_recognised() -> None:
    import json

    try:
        json.loads('{"choices": [')
    except ValueError as exc:
        wrapped = RuntimeError("parse failed")
        wrapped.__cause__ = exc
        assert is_truncated_reply(wrapped)
    assert not is_truncated_reply(RuntimeError("HTTP 401 Unauthorized"))


def test_lines_record_the_settings_actually_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The endpoint's defaults are recorded with the given options, so --resume compares what was really sent."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    local = public_options(effective_options("openai:m", {"api_base": LOCAL_SERVER, "api_key": "sk-1", "seed": 1}))
    assert local["tool_choice"] == "auto" and local["content"] == "text" and local["seed"] == 1
    assert "api_key" not in local
    assert effective_options("openai:gpt-4.1", {})["tool_choice"] == "required"
    assert effective_options("local", {"max_tokens": 5}) == {"max_tokens": 5}

"""Streamed attempts (madqa.agents.models.streaming) against a local SSE stand-in: the assembled reply equals the
non-streamed one, and the stream is closed (the server sees the client go) at the deadline and at max_tokens."""

from __future__ import annotations

import time
from collections.abc import Iterator

import openai
import pytest
from helpers.streaming_standin import StreamStandIn, serve

from madqa.agents.models.factory import make_model
from madqa.agents.models.options import ModelOptions
from madqa.agents.models.retry_policy import is_retryable
from madqa.agents.models.streaming import should_stream, streamed_completion

TOOL_PIECES = [
    (0, "search", '{"que'),
    (0, "search", 'ry": "cats"}'),
    (1, "final_answer", '{"answer": '),
    (1, "x", '"42"}'),
]


@pytest.fixture
def standin() -> Iterator[tuple[StreamStandIn, str]]:
    state = StreamStandIn()
    server, url = serve(state)
    yield state, url
    server.shutdown()


def _client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="x", max_retries=0)


def _wait_for_disconnect(state: StreamStandIn, seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while not state.disconnected and time.monotonic() < end:
        time.sleep(0.02)


@pytest.mark.parametrize("pieces", [["Hello", ", ", "world", "."], TOOL_PIECES, ["Let me search.", *TOOL_PIECES[:2]]])
@pytest.mark.parametrize("send_usage", [True, False])
def test_assembled_stream_equals_the_non_streamed_reply(standin, pieces, send_usage) -> None:
    state, url = standin
    state.pieces, state.send_usage = pieces, send_usage
    client = _client(url)
    kwargs = {"model": "standin", "messages": [{"role": "user", "content": "Find cats in the documents."}]}
    plain = client.chat.completions.create(**kwargs)
    streamed = streamed_completion(client.chat.completions.create, {**kwargs, "timeout": 10}, max_tokens=1000)
    assert state.requests[-1]["stream"] is True and state.requests[-1]["stream_options"] == {"include_usage": True}
    assert streamed.choices[0].message == plain.choices[0].message
    assert streamed.choices[0].finish_reason == plain.choices[0].finish_reason
    if send_usage:
        assert streamed.usage == plain.usage
    else:  # estimated: one token per chunk with text or arguments, the prompt at 4 characters a token
        assert streamed.usage.completion_tokens == len(pieces)
        assert streamed.usage.prompt_tokens == -(-len("Find cats in the documents.") // 4)


def test_smolagents_sees_the_same_message_streamed_or_not(standin) -> None:
    state, url = standin
    state.pieces = ["The answer", " is 42."]
    replies = {}
    for stream in ("on", "off"):
        model = make_model("openai:standin", api_base=url, stream=stream)
        replies[stream] = model.generate([{"role": "user", "content": [{"type": "text", "text": "Q?"}]}])
    assert [r.get("stream", False) for r in state.requests] == [True, False]
    assert replies["on"].content == replies["off"].content == "The answer is 42."
    assert replies["on"].token_usage == replies["off"].token_usage


def test_the_stream_is_closed_at_the_deadline(standin) -> None:
    state, url = standin
    state.pieces, state.gap_s = ["word "] * 2000, 0.01  # 20 s of generation, max_tokens ignored
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        streamed_completion(
            _client(url).chat.completions.create,
            {"model": "standin", "messages": [{"role": "user", "content": "Go on."}], "timeout": 1.0},
            max_tokens=100_000,
        )
    assert time.monotonic() - start < 5
    _wait_for_disconnect(state)
    assert state.disconnected, "the server never saw the client go: the stream was not closed"
    assert state.disconnected[0] - start < 6 and state.sent_chunks[0] < 1000


def test_the_stream_is_cut_at_max_tokens_when_the_server_ignores_it(standin) -> None:
    state, url = standin
    state.pieces, state.gap_s = [f"w{i} " for i in range(2000)], 0.005
    reply = streamed_completion(
        _client(url).chat.completions.create,
        {"model": "standin", "messages": [{"role": "user", "content": "Go on."}], "timeout": 60, "max_tokens": 5},
        max_tokens=5,
    )
    assert reply.choices[0].message.content == "w0 w1 w2 w3 w4 "
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 5
    _wait_for_disconnect(state)
    assert state.disconnected and state.sent_chunks[0] < 1000


def test_a_stream_ending_without_a_finish_reason_is_a_truncated_reply(standin) -> None:
    state, url = standin
    state.finish, state.send_usage = False, False
    with pytest.raises(openai.APIResponseValidationError, match="without a finish reason") as caught:
        streamed_completion(
            _client(url).chat.completions.create,
            {"model": "standin", "messages": [{"role": "user", "content": "Hi"}], "timeout": 10},
            max_tokens=100,
        )
    assert is_retryable(caught.value)


def test_model_option_stream_decides_what_is_streamed() -> None:
    local = "http://127.0.0.1:8080/v1"
    plain = {"messages": []}
    auto_tools = {"messages": [], "tools": [{}], "tool_choice": "auto"}
    forced = {"messages": [], "tools": [{}], "tool_choice": {"type": "function", "function": {"name": "f"}}}
    auto = ModelOptions.resolve({}, api_base=local)
    assert [should_stream(k, auto) for k in (plain, auto_tools, forced)] == [True, False, True]
    on = ModelOptions.resolve({"stream": "on"}, api_base=local)
    assert should_stream(auto_tools, on) and not should_stream(plain, ModelOptions.resolve({"stream": "off"}))
    assert not should_stream(plain, ModelOptions.resolve({}))  # OpenAI's own API: unchanged
    assert not should_stream({**plain, "stream": True}, on)  # a caller that streams itself is left alone

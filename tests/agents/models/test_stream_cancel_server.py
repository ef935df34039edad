"""An abandoned call frees a single-slot server: llama-cpp-python's real server, a call that times out mid-generation,
then the next call (madqa.agents.models.streaming; issue 48, item 4).

The server has one slot: a call sent while it generates waits until that generation ends. A timed-out call that
is not streamed leaves the server generating to its cap; a streamed one is closed at its deadline, which stops the
generation, so the next call starts at once. The long generation is made certain (``logit_bias`` bans the
end-of-turn tokens) and long (3,000 tokens: a minute or more for a 135M model on one thread).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import openai
import pytest
from smolagents import ChatMessage, MessageRole

from madqa.agents.models.factory import make_model
from madqa.bench.llama_server import ALIAS, LlamaServer, llama_server

pytestmark = [pytest.mark.server, pytest.mark.slow]

LONG_TOKENS = 3000
FIRST_TIMEOUT_S = 3.0
#: Slack over a free server's latency for the next call: generous for a loaded machine, far under the generation's
#: remaining minute.
SLACK_S = 15.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    with llama_server(tmp_path_factory.mktemp("llama"), n_ctx=4096) as running:
        yield running


def _ask(model, text: str) -> object:
    return model.generate([ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": text}])])


def _short_call_seconds(server: LlamaServer) -> float:
    model = make_model(f"openai:{ALIAS}", api_base=server.base_url, api_key="x", max_tokens=4, timeout=300)
    start = time.monotonic()
    _ask(model, "Say hi.")
    return time.monotonic() - start


def test_the_next_call_starts_at_once_after_a_timed_out_one(server: LlamaServer) -> None:
    free = _short_call_seconds(server)  # also warms the server up
    long_model = make_model(
        f"openai:{ALIAS}",
        api_base=server.base_url,
        api_key="x",
        max_tokens=LONG_TOKENS,
        timeout=FIRST_TIMEOUT_S,
        retries=0,
        extra_body={"min_tokens": LONG_TOKENS},  # generates to its cap
    )
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        _ask(long_model, "Write a very long story about the sea, chapter after chapter.")
    abandoned = time.monotonic() - start
    assert abandoned < FIRST_TIMEOUT_S + 10, "the streamed call was not cut at its deadline"
    after = _short_call_seconds(server)
    assert after < free + SLACK_S, (
        f"the next call took {after:.1f} s (free server: {free:.1f} s): the abandoned generation still held the "
        f"server\n{server.log_tail()}"
    )

"""The inspect task against a real self-hosted server, through inspect's own providers (the routes docs/inspect.md
names for local servers): llama-cpp-python's OpenAI-compatible server with the bundled GGUF, reached as
``llama-cpp-python/``, ``openai-api/<service>/`` and ``vllm/`` (an OpenAI-compatible server given by URL).

inspect's plain ``openai/`` route is not one of them: inspect 0.3.285 sends a model name OpenAI does not know to
``/v1/responses``, which such servers do not serve (404 on every sample).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from madqa.bench.llama_server import ALIAS, LlamaServer, llama_server

pytestmark = [pytest.mark.server, pytest.mark.slow]

INSPECT = shutil.which("inspect", path=str(Path(sys.executable).parent))
INFRA_KINDS = {"provider", "transport", "timeout", "worker"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    with llama_server(tmp_path_factory.mktemp("llama"), n_ctx=4096) as running:
        yield running


def _route(route: str, base_url: str) -> tuple[list[str], dict[str, str]]:
    """The model arguments and environment the docs give for each route (docs/inspect.md, "Self-hosted servers")."""
    if route == "llama-cpp-python":
        return ["--model", f"llama-cpp-python/{ALIAS}", "--model-base-url", base_url], {}
    if route == "openai-api":
        return ["--model", f"openai-api/local/{ALIAS}"], {"LOCAL_BASE_URL": base_url, "LOCAL_API_KEY": "none"}
    return ["--model", f"vllm/{ALIAS}"], {"VLLM_BASE_URL": base_url, "VLLM_API_KEY": "none"}


@pytest.mark.parametrize("route", ["llama-cpp-python", "openai-api", "vllm"])
def test_the_documented_routes_for_local_servers_answer_and_import(
    route: str, server: LlamaServer, tmp_path: Path, layout
) -> None:
    assert INSPECT, "the inspect command is installed with the inspect extra"
    model_args, env = _route(route, server.base_url)
    logs = tmp_path / "logs"
    command = [INSPECT, "eval", "madqa/bm25", *model_args, "-T", "split=dev", "-T", "limit=1", "-T", "max_steps=2"]
    command += ["--max-tokens", "128", "--log-dir", str(logs), "--display", "none"]
    full_env = {**os.environ, **env, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "c")}
    done = subprocess.run(command, capture_output=True, text=True, env=full_env, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:], server.log_tail())
    (log,) = logs.glob("*.eval")

    out = tmp_path / "imported.jsonl"
    imported = subprocess.run(
        [sys.executable, "-m", "madqa.cli", "import-inspect", str(log), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert imported.returncode == 0, imported.stderr
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    # A 135M model answers badly; the route works when the sample reached the model and came back without an
    # infrastructure error, with tokens counted on every model call.
    assert line.get("error_kind") not in INFRA_KINDS, (line.get("error"), server.log_tail())
    assert line["trajectory"] and all(step["input_tokens"] > 0 for step in line["trajectory"])
    assert line["model"] == model_args[1]

    scored = subprocess.run(
        [sys.executable, "-m", "madqa.cli", "evaluate", str(out), "--split", "dev", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["n_predicted"] == 1

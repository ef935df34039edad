"""``madqa run --agent file-search --resume`` with the identical command: a run killed (SIGKILL) as its second
question reaches the managed service (the stand-in) is completed by the same command plus ``--resume``, nothing
lost or repeated; file search records ``max_steps=1`` whatever ``--max-steps`` says, and resume compares that.
A setting that really differs (a model option) is still refused."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_cli import madqa_env, results_lines
from helpers.every_agent import check_resumed, dev_ids, madqa_until_exit
from helpers.provider_standin import StandIn, default_reply, serve

pytestmark = [pytest.mark.slow, pytest.mark.server]

HERE = Path(__file__).resolve().parent
LIMIT = 3


def test_the_identical_command_resumes_a_killed_file_search_run(layout, tmp_path: Path) -> None:
    """The managed service is the stand-in; it kills the run as the second question reaches it."""
    running: list[subprocess.Popen[bytes]] = []
    answers: list[str] = []

    def kill_on_the_second(question: str, chunks: list[Any]) -> str:
        answers.append(question)
        if len(answers) == 2 and running:
            running[0].send_signal(signal.SIGKILL)
        return default_reply(question, chunks)

    _, server = serve(StandIn(reply=kill_on_the_second))
    env = madqa_env(HERE, OPENAI_API_KEY="sk-standin")
    env.pop("OPENAI_BASE_URL", None)
    out = tmp_path / "fs.jsonl"
    args = ["-q", "run", "--agent", "file-search", "--provider", "openai", "--split", "dev", "--limit", str(LIMIT)]
    args += ["--api-base", server.base + "/v1", "--model-option", "poll_interval=0.001", "-o", str(out)]
    args += ["--no-progress"]
    try:
        with open(tmp_path / "first.log", "w", encoding="utf-8") as sink:
            running.append(
                subprocess.Popen([sys.executable, "-m", "madqa.cli", *args], env=env, stdout=sink, stderr=sink)
            )
            assert running[0].wait(timeout=600) == -signal.SIGKILL, (tmp_path / "first.log").read_text()
        before = results_lines(out)
        assert before[0]["config"]["max_steps"] == 1
        code, log = madqa_until_exit([*args, "--resume"], env, tmp_path / "resume.log")
        assert code == 0, log
        check_resumed(before, results_lines(out), dev_ids(LIMIT))
        other = [*args, "--limit", str(LIMIT + 1), "--model-option", "max_output_tokens=64", "--resume"]
        code, log = madqa_until_exit(other, env, tmp_path / "x.log")
        assert code == 2 and "holds lines written with" in log, log
    finally:
        server.shutdown()
        server.server_close()

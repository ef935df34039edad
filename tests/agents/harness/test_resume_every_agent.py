"""``madqa run --resume`` with the identical command, for every agent: a run killed (SIGKILL) in the middle of its
second question is completed by the same command plus ``--resume``, nothing lost or repeated, while a setting that
really differs is still refused. Static RAG, MDocAgent and file search record their own ``max_steps`` (1, 5, 1)
whatever ``--max-steps`` says; resume compares that, not the command line's default."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_cli import madqa_env, results_lines
from helpers.every_agent import FAKE_ANY
from helpers.provider_standin import StandIn, default_reply, serve

from madqa.agents.baselines.mdoc.options import MDocOptions
from madqa.agents.baselines.mdoc.pipeline import ROLES

HERE = Path(__file__).resolve().parent
LIMIT = 3

#: Per agent: the max_steps its lines record, and a setting that changes its answers (refused on resume).
AGENTS: dict[str, tuple[int, list[str]]] = {
    "bm25": (10, ["--max-steps", "4"]),
    "repl": (10, ["--max-steps", "4"]),
    "shell": (10, ["--max-steps", "4"]),
    "rag": (1, ["--top-k", "2"]),
    "mdoc": (5, ["--top-k", "2"]),
}


def madqa_until_exit(args: list[str], env: dict[str, str], log: Path) -> tuple[int, str]:
    """``madqa ARGS`` to its end; output to a file (a killed run's worker may keep a pipe open after it)."""
    with open(log, "w", encoding="utf-8") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "madqa.cli", *args], env=env, stdout=sink, stderr=sink)
        code = proc.wait(timeout=600)
    return code, log.read_text(encoding="utf-8")


def check_resumed(before: list[dict[str, Any]], after: list[dict[str, Any]], first_ids: list[str]) -> None:
    """The lines of the killed run kept as they were; every question of the limit exactly once, without error."""
    assert len(before) == 1, before
    assert after[0] == before[0]
    assert [r["id"] for r in after] == first_ids, [r["id"] for r in after]
    assert all(r["error"] is None for r in after), [r["error"] for r in after]
    assert all(r["config"] == after[0]["config"] for r in after)


def dev_ids(layout) -> list[str]:
    from madqa.loading_script.load import load_questions

    return [str(q["id"]) for q in load_questions("dev")[:LIMIT]]


@pytest.mark.slow
@pytest.mark.parametrize("agent", list(AGENTS))
def test_the_identical_command_resumes_a_killed_run(layout, tmp_path: Path, agent: str) -> None:
    recorded_steps, different = AGENTS[agent]
    out = tmp_path / f"{agent}.jsonl"
    args = ["-q", "run", "--agent", agent, "--model", FAKE_ANY, "--split", "dev", "--limit", str(LIMIT)]
    args += ["-o", str(out), "--no-progress"]
    env = madqa_env(HERE)
    code, log = madqa_until_exit(args, {**env, "MADQA_FAKE_KILL_AFTER": f"{out}:1"}, tmp_path / "first.log")
    assert code == -signal.SIGKILL, log
    before = results_lines(out)
    assert before[0]["config"]["max_steps"] == recorded_steps

    code, log = madqa_until_exit([*args, "--resume"], env, tmp_path / "resume.log")
    assert code == 0, log
    check_resumed(before, results_lines(out), dev_ids(layout))

    code, log = madqa_until_exit([*args, "--limit", str(LIMIT + 1), *different, "--resume"], env, tmp_path / "x.log")
    assert code == 2 and "holds lines written with" in log, log
    assert len(results_lines(out)) == LIMIT


def test_mdoc_records_one_step_per_agent_of_its_pipeline() -> None:
    assert MDocOptions.fixed_max_steps == len(ROLES)


@pytest.mark.slow
@pytest.mark.server
def test_the_identical_command_resumes_a_killed_file_search_run(layout, tmp_path: Path) -> None:
    """The managed service is the stand-in; it kills the run as the second question reaches it."""
    running: list[subprocess.Popen[bytes]] = []
    answers: list[str] = []

    def kill_on_the_second(question: str, chunks: list[Any]) -> str:
        answers.append(question)
        if len(answers) == 2 and running:
            running[0].send_signal(signal.SIGKILL)
        return default_reply(question, chunks)

    state, server = serve(StandIn(reply=kill_on_the_second))
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
        check_resumed(before, results_lines(out), dev_ids(layout))
        other = [*args, "--limit", str(LIMIT + 1), "--model-option", "max_output_tokens=64", "--resume"]
        code, log = madqa_until_exit(other, env, tmp_path / "x.log")
        assert code == 2 and "holds lines written with" in log, log
    finally:
        server.shutdown()
        server.server_close()

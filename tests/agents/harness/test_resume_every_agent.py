"""``madqa run --resume`` with the identical command, for every agent: a run killed (SIGKILL) in the middle of its
second question is completed by the same command plus ``--resume``, nothing lost or repeated, while a setting that
really differs is still refused. Static RAG, MDocAgent and file search record their own ``max_steps`` (1, 5, 1)
whatever ``--max-steps`` says; resume compares that, not the command line's default. File search, whose model is
a service stand-in, is in ``test_resume_file_search.py``."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from helpers.agent_cli import madqa_env, results_lines
from helpers.every_agent import FAKE_ANY, check_resumed, dev_ids, madqa_until_exit

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
    check_resumed(before, results_lines(out), dev_ids(LIMIT))

    code, log = madqa_until_exit([*args, "--limit", str(LIMIT + 1), *different, "--resume"], env, tmp_path / "x.log")
    assert code == 2 and "holds lines written with" in log, log
    assert len(results_lines(out)) == LIMIT


def test_mdoc_records_one_step_per_agent_of_its_pipeline() -> None:
    assert MDocOptions.fixed_max_steps == len(ROLES)

"""A third-party agent as a plugin: a toy package with a ``*.dist-info`` (an entry point of the group
``madqa.agents``) in a temporary folder, found by :mod:`importlib.metadata` through ``sys.path`` / ``PYTHONPATH``,
runs through ``madqa run``, ``madqa evaluate``, the Space's agent tab and ``madqa view`` without any change to the
project. It follows ARCHITECTURE.md's "A new agent" recipe: an options class, an ``Agent`` with ``prepare``, and an
entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: The toy agent: answers every question with its ``answer`` option, citing nothing, through the protocol itself.
TOY_MODULE = '''
"""A toy agent: answers with its option ``answer`` (a plugin of madqa, installed by a dist-info only)."""

import time
from dataclasses import dataclass
from typing import Any, ClassVar

from madqa.agents.harness.options import AgentOptions, RunError, option
from madqa.agents.harness.protocol import AnswerEvent, Host
from madqa.agents.harness.record import build_record


@dataclass(frozen=True)
class ToyOptions(AgentOptions):
    """The toy's settings."""

    summary: ClassVar[str] = "answers every question with one fixed text"

    answer: str = option("17.85", help="the answer it gives")
    repeat: int = option(1, metavar="N", help="times the answer is listed")

    def check(self, run: Any) -> None:
        if self.repeat < 1:
            raise RunError("repeat must be at least 1")


class PreparedToy:
    def __init__(self, config, settings, dataset):
        self.config, self.settings, self.dataset = config, settings, dataset

    def answer(self, item):
        return dict(list(self.stream(str(item["question"]), item))[-1].record)

    def stream(self, question, item=None, *, stop=None):
        item = item if item is not None else {"id": "", "question": question}
        start = time.perf_counter()
        given = self.config.typed(ToyOptions)
        output = {"answer": [given.answer] * given.repeat, "citations": []}
        record = build_record(
            item,
            agent_name="toy",
            model=self.config.model,
            elapsed_s=time.perf_counter() - start,
            output=output,
            config=self.settings,
            dataset=self.dataset,
            steps=1,
        )
        yield AnswerEvent(tuple(record["answer"]), (), 1, record["elapsed_s"], None, record)

    def close(self):
        pass


class ToyAgent:
    name = "toy"
    options = ToyOptions

    def check(self, config):
        pass

    def prepare(self, config, *, slots=1, model_options=None, dataset=None, host=Host()):
        return PreparedToy(config, config.settings(ToyOptions), dataset)


AGENT = ToyAgent()
'''


def _distribution(site: Path, name: str, entry_points: str) -> None:
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[madqa.agents]\n{entry_points}\n", encoding="utf-8")


@pytest.fixture
def toy_site(tmp_path: Path) -> Path:
    """A folder holding the toy package and its dist-info, as pip would install it."""
    site = tmp_path / "site"
    (site / "toy_agent").mkdir(parents=True)
    (site / "toy_agent" / "__init__.py").write_text(textwrap.dedent(TOY_MODULE), encoding="utf-8")
    _distribution(site, "toy_agent", "toy = toy_agent:AGENT\nbm25 = toy_agent:AGENT")
    return site


def _madqa(site: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, "-m", "madqa.cli", *argv], capture_output=True, text=True, env=env)


@pytest.mark.slow
def test_a_plugin_agent_runs_and_is_scored_without_editing_the_project(layout, toy_site: Path, tmp_path: Path) -> None:
    out = tmp_path / "toy.jsonl"
    run = _madqa(toy_site, "run", "--agent", "toy", "--limit", "2", "-o", str(out), "--no-progress")
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 2 and {r["agent"] for r in lines} == {"toy"} and lines[0]["answer"] == ["17.85"]
    assert list(lines[0]["config"])[:8] == [
        "model",
        "agent",
        "split",
        "dataset",
        "max_steps",
        "question_timeout",
        "answer",
        "repeat",
    ]
    assert "ignoring the entry point bm25 = toy_agent:AGENT" in run.stderr  # a built-in name wins
    scored = _madqa(toy_site, "evaluate", str(out), "--split", "dev", "--json")
    assert scored.returncode == 0, scored.stderr
    report = json.loads(scored.stdout)
    assert report["n_predicted"] == 2 and report["accuracy"] > 0  # "17.85" answers the first dev question

    # its options: --agent-option typed by its class, its own check, its help, and the framework's refusal
    again = tmp_path / "twice.jsonl"
    twice = _madqa(toy_site, "run", "--agent", "toy", "--agent-option", "repeat=2", "--limit", "1", "-o", str(again))
    assert twice.returncode == 0, twice.stderr
    assert json.loads(again.read_text(encoding="utf-8"))["answer"] == ["17.85", "17.85"]
    bad = _madqa(toy_site, "run", "--agent", "toy", "--agent-option", "repeat=0", "-o", str(tmp_path / "x.jsonl"))
    assert bad.returncode == 2 and "repeat must be at least 1" in bad.stderr
    other = _madqa(toy_site, "run", "--agent", "toy", "--oracle", "-o", str(tmp_path / "y.jsonl"))
    assert other.returncode == 2 and "--oracle is for --agent bm25; --agent toy has no option 'oracle'" in other.stderr
    shown = " ".join(_madqa(toy_site, "run", "--agent", "toy", "--help").stdout.split())
    assert "--agent toy options: answers every question" in shown and "--repeat N" in shown
    assert "toy: answers every question with one fixed text" in shown and "--sub-model" not in shown

    # madqa view's run loading lists the run
    from madqa.cli import build_parser
    from madqa.cli.view_cmd import prepare

    workspace, _ = prepare(build_parser().parse_args(["view", str(out), "--split", "dev", "--no-thumbnails"]))
    assert [r.name for r in workspace.runs] == ["toy"] and workspace.runs[0].records


def test_the_space_agent_tab_offers_a_plugin_agent(toy_site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gradio")
    from madqa.space import agent_tab

    assert "toy" not in agent_tab.agent_choices().values()
    monkeypatch.syspath_prepend(str(toy_site))
    offered = agent_tab.agent_choices()
    assert offered["toy: answers every question with one fixed text"] == "toy"
    assert {k: v for k, v in offered.items() if v != "toy"} == agent_tab.AGENTS  # the built-ins as before
    from madqa.space.agent_runtime import space_options

    assert space_options("toy") == {}  # its class's defaults


def test_a_broken_plugin_is_one_clear_error(tmp_path: Path) -> None:
    site = tmp_path / "broken"
    _distribution(site, "broken_agent", "broken = no_such_module_anywhere:AGENT")
    run = _madqa(site, "run", "--agent", "broken", "-o", str(tmp_path / "b.jsonl"), "--no-progress")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "agent 'broken' cannot be loaded from its entry point broken = no_such_module_anywhere:AGENT" in run.stderr
    assert "group madqa.agents, distribution broken_agent" in run.stderr
    help_text = _madqa(site, "run", "--help")  # the others still work
    assert help_text.returncode == 0 and "--agent bm25 options" in help_text.stdout

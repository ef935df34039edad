"""The agent protocol: registry lookup, typed step events, ``answer`` = the stream's last record, the host's demands
(fail closed without the REPL walls, a fresh sandbox per question), the one ``MODULE:NAME`` resolver, the shared
prompt fragments, and the layout rules of ``agents/`` (no import cycle, small modules)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import ROOT

from madqa.agents.harness.config import COMMON_FIELDS, RunConfig, RunError
from madqa.agents.harness.protocol import AgentUnavailableError, AnswerEvent, Citation, CodeEvent, Host, SearchEvent
from madqa.agents.harness.registry import get_agent, names
from madqa.agents.harness.resolve import load_object

AGENTS_DIR = ROOT / "agents"
FAKE = "py:helpers.fake_runs:fake_model"
FAKE_REPL = "py:helpers.fake_runs:fake_repl_model"


def dev_item() -> dict[str, Any]:
    from madqa.loading_script.load import load_questions

    return load_questions("dev")[0]


def test_registry_names_and_unknown_agent() -> None:
    assert names()[:3] == ("bm25", "repl", "rag") and {"file-search", "mdoc", "shell"} <= set(names())
    with pytest.raises(RunError, match="unknown agent 'nope'; available: bm25, repl"):
        get_agent("nope")
    fields = {name: get_agent(name).options.recorded_names() for name in names()}
    config_fields = set(RunConfig.__dataclass_fields__)
    assert set(fields["bm25"]).isdisjoint(fields["repl"])
    assert all(set(f).isdisjoint(config_fields | set(COMMON_FIELDS)) for f in fields.values())


def test_looking_up_an_agent_imports_no_other_agent() -> None:
    code = (
        "import sys; from madqa.agents.harness.registry import get_agent; get_agent('bm25'); "
        "print(sorted(m for m in sys.modules if m.startswith('madqa.agents.baselines.repl')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_search_agent_streams_typed_events_and_answer_is_the_last_record(layout) -> None:
    item = dev_item()
    prepared = get_agent("bm25").prepare(RunConfig(model=FAKE), host=Host(progress=False))
    try:
        events = list(prepared.stream(str(item["question"]), item))
        record = prepared.answer(item)
    finally:
        prepared.close()
    search, done = events
    assert isinstance(search, SearchEvent) and search.step == 1 and search.query == "riverton OR invoice OR menu"
    assert search.count == len(search.pages) > 0 and all(isinstance(p, Citation) for p in search.pages)
    assert isinstance(done, AnswerEvent) and done.answer == ("17.85",) and done.citations == search.pages[:1]
    assert done.steps == 1 and done.error is None and done.record["id"] == item["id"]
    same = {k: v for k, v in record.items() if k not in ("elapsed_s", "trajectory")}
    assert same == {k: v for k, v in done.record.items() if k not in ("elapsed_s", "trajectory")}
    assert record["search_history"][0]["query"] == search.query and "effort" not in record
    assert set(record["config"]) == set(COMMON_FIELDS) | set(get_agent("bm25").options.recorded_names())


def test_a_failing_question_ends_the_stream_with_its_error(layout, monkeypatch) -> None:
    monkeypatch.setenv("MADQA_FAKE_FAIL", "?")  # every question has one
    prepared = get_agent("bm25").prepare(RunConfig(model=FAKE), host=Host(progress=False))
    events = list(prepared.stream("What is it?"))
    assert len(events) == 1 and isinstance(events[0], AnswerEvent)
    assert "provider exploded" in events[0].error and events[0].record["final_state"] == "error"
    assert events[0].record["id"] == ""  # a typed question has no id


@pytest.mark.parametrize("fresh", [False, True])
def test_code_agent_streams_code_steps_and_honours_a_fresh_sandbox_per_question(layout, fresh: bool) -> None:
    config = RunConfig(model=FAKE_REPL, agent="repl", max_steps=3)
    prepared = get_agent("repl").prepare(config, host=Host(sandbox_per_question=fresh))
    try:
        events = list(prepared.stream("Which document?"))
        worker = prepared._slots.queue[0].worker
        assert worker.alive is not fresh  # reused by the runner; stopped after each question for the Space
        again = list(prepared.stream("And again?"))
    finally:
        prepared.close()
    assert not worker.alive
    for run in (events, again):
        code, done = run[0], run[-1]
        assert isinstance(code, CodeEvent) and code.step == 1 and "llm_query" in code.code and code.error is None
        assert code.output.strip()  # what the step printed: the first document's name and the sub-call's reply
        assert isinstance(done, AnswerEvent) and done.answer == ("17.85",) and done.error is None
        assert "search_history" not in done.record and done.record["repl"]["walls"]
        assert done.steps == done.record["effort"]["steps"] >= 3  # root calls + the sub-call


def test_a_host_that_requires_isolation_refuses_before_loading_any_model(monkeypatch) -> None:
    from madqa.agents.sandbox import worker as repl_worker

    monkeypatch.setattr(repl_worker, "SKIP_WALLS", ("syscalls",))
    # The model spec cannot be loaded: reaching it would raise a ValueError instead.
    with pytest.raises(AgentUnavailableError, match="isolation is incomplete"):
        get_agent("repl").prepare(
            RunConfig(model="py:no_such_module:f", agent="repl"), host=Host(require_isolation=True)
        )


def test_agents_check_only_their_own_settings() -> None:
    from madqa.agents.harness.registry import check_config

    with pytest.raises(RunError, match="--oracle is for --agent bm25"):
        check_config(RunConfig(agent="repl", options={"oracle": True}))
    with pytest.raises(RunError, match="--sub-model is for --agent repl"):
        check_config(RunConfig(options={"sub_model": "local"}))
    with pytest.raises(RunError, match="top-k must be at least 1"):
        check_config(RunConfig(options={"top_k": 0}))
    # not its setting: the framework refuses it before repl's own checks (issue 40: no agent refuses another's)
    with pytest.raises(RunError, match="--top-k is for --agent bm25, rag, mdoc or shell; --agent repl has no option"):
        check_config(RunConfig(agent="repl", options={"top_k": 0}))


def test_one_resolver_for_py_specs(tmp_path: Path) -> None:
    from madqa.agents.models.factory import make_model
    from madqa.cli import UserError
    from madqa.cli.evaluate_cmd import resolve_judge

    assert load_object("py:json:dumps") is load_object("json:dumps")
    for bad in ("json", "json:", ":dumps"):
        with pytest.raises(ValueError, match="is not MODULE:NAME"):
            load_object(bad)
    with pytest.raises(ValueError, match=r"^py:json:nope: cannot import 'nope' from 'json'"):
        make_model("py:json:nope")
    with pytest.raises(UserError, match=r"^--judge py:json:nope: cannot import 'nope' from 'json'"):
        resolve_judge("py:json:nope")


def test_the_answer_format_is_written_once_and_shared() -> None:
    from madqa.agents.prompts import load_prompts, shared_fragments

    fragment = shared_fragments()["answer_format"]
    for name in ("bm25", "repl", "rag"):
        prompt = load_prompts(name)["system_prompt"]
        assert fragment.splitlines()[0] in prompt and fragment.splitlines()[-1].strip() in prompt
        assert "[[" not in str(load_prompts(name))
    json_rule = shared_fragments()["answer_json"].splitlines()[0]
    repl = load_prompts("repl")
    assert json_rule in repl["final_answer"]["post_messages"] and json_rule in repl["madqa"]["extract"]


def _imports(path: Path, module: str) -> set[str]:
    """The ``madqa.agents`` modules ``path`` imports (also inside functions and TYPE_CHECKING blocks)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            found.update(f"{target}.{a.name}" for a in node.names)
            found.add(target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {f for f in found if f.startswith("madqa.agents")}


def test_agents_have_no_import_cycle() -> None:
    # (the module length cap, on formatted lines, is tests/project/test_architecture.py's, for every folder)
    modules: dict[str, Path] = {}
    for path in AGENTS_DIR.rglob("*.py"):
        parts = ("madqa", "agents", *path.relative_to(AGENTS_DIR).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {m: {i for i in _imports(p, m) if i in modules and i != m} for m, p in modules.items()}
    # A package imports its modules to re-export them; a module importing its own package would be a cycle.
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join([*trail, node, nxt])}"
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for module in graph:
        if module not in state:
            visit(module, [])

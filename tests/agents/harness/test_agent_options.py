"""Each agent's options class: the results line's ``config`` it gives (keys, order and defaults as before the
classes existed), the framework's refusal of an option the agent does not have, ``--agent-option`` and the
generated ``madqa run`` flags and help."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from madqa.agents.harness.config import RunConfig, RunError
from madqa.agents.harness.registry import check_config, names, options_class
from madqa.cli import build_parser, main
from madqa.cli.agent_options import options_of
from madqa.cli.errors import UserError

COMMON_ORDER = ("model", "agent", "split", "dataset", "max_steps", "question_timeout")
COMMON = {"model": "local", "split": "dev", "dataset": None, "max_steps": 10, "question_timeout": None}
#: Each built-in agent's ``config`` of a default run before the agent resolves its model-dependent defaults, as the
#: flat RunConfig gave it (captured from the code before the options classes: ``RunConfig(agent=NAME,
#: top_k=<madqa run's default>).settings(agent.fields)``).
EXPECTED: dict[str, dict[str, Any]] = {
    "bm25": {
        "top_k": 5,
        "observe": None,
        "oracle": False,
        "search_backend": "whoosh",
        "page_chars": None,
        "image_steps": 1,
        "min_searches": None,
        "search_timeout": 120.0,
        "search_max_terms": 5000,
        "search_max_postings": 500000,
        "retriever": None,
    },
    "repl": {
        "sub_model": None,
        "sub_calls": None,
        "sub_call_chars": None,
        "observation_chars": None,
        "step_timeout": 30.0,
    },
    "rag": {"top_k": 5, "observe": None, "page_chars": None, "retriever": None},
    "file-search": {"provider": "openai"},
    "mdoc": {"top_k": 4, "observe": None, "page_chars": None, "retriever": None, "image_retriever": None},
    "shell": {"top_k": 3, "min_searches": None, "step_timeout": 30.0, "retriever": None},
}

#: The agents whose model calls per question are their own, whatever ``--max-steps`` says.
OWN_MAX_STEPS = {"rag": 1, "file-search": 1, "mdoc": 5}


@pytest.mark.parametrize("agent", list(EXPECTED))
def test_a_default_run_records_the_same_config_as_before(agent: str) -> None:
    given = {"provider": "openai"} if agent == "file-search" else {}
    config = RunConfig(agent=agent, options=given)
    settings = config.settings(options_class(agent))
    expected = {"model": "local", "agent": agent, **{k: v for k, v in COMMON.items() if k != "model"}}
    # static RAG, file search and MDocAgent record their own step count, as their lines always did (issue 48)
    expected = {**expected, "max_steps": OWN_MAX_STEPS.get(agent, COMMON["max_steps"]), **EXPECTED[agent]}
    assert list(settings.items()) == list(expected.items())  # the keys in the same order, the same values
    check_config(config)  # the defaults are valid


def test_every_built_in_agent_is_covered_and_refresh_store_is_not_recorded() -> None:
    assert set(EXPECTED) <= set(names())
    cls = options_class("file-search")
    assert "refresh_store" in cls.names() and "refresh_store" not in cls.recorded_names()


@pytest.mark.parametrize(
    ("agent", "options", "message"),
    [
        ("repl", {"oracle": True}, "--oracle is for --agent bm25; --agent repl has no option 'oracle'"),
        ("bm25", {"sub_model": "local"}, "--sub-model is for --agent repl; --agent bm25 has no option 'sub_model'"),
        ("repl", {"top_k": 3}, "--top-k is for --agent bm25, rag, mdoc or shell; --agent repl has no option"),
        ("shell", {"observe": "text"}, "--observe is for --agent bm25, rag or mdoc; --agent shell has no option"),
        ("rag", {"topk": 3}, "--agent rag has no option 'topk'; did you mean 'top_k'?"),
        ("mdoc", {"zzz": 1}, "--agent mdoc has no option 'zzz' (its options: top_k, observe, page_chars"),
    ],
)
def test_the_framework_refuses_an_option_the_agent_does_not_have(agent: str, options: dict, message: str) -> None:
    with pytest.raises(RunError) as info:
        check_config(RunConfig(agent=agent, options=options))
    assert message in str(info.value)


def test_an_options_own_check_still_runs() -> None:
    with pytest.raises(RunError, match="min-searches must be between 0 and max-steps - 1"):
        check_config(RunConfig(agent="shell", max_steps=2, options={"min_searches": 2}))
    with pytest.raises(RunError, match="observe must be one of image, text"):
        check_config(RunConfig(options={"observe": "audio"}))


def _args(*words: str) -> Any:
    return build_parser().parse_args(["run", "-o", "r.jsonl", "--no-progress", *words])


def test_agent_option_is_typed_by_the_agents_class() -> None:
    given = options_of(_args("--agent", "bm25", "--agent-option", "top_k=3", "--agent-option", "oracle=yes"))
    assert given == {"top_k": 3, "oracle": True} and isinstance(given["top_k"], int)
    given = options_of(
        _args("--agent", "repl", "--agent-option", "sub-calls=none", "--agent-option", "step_timeout=2")
    )
    assert given == {"sub_calls": None, "step_timeout": 2.0}
    assert options_of(_args("--agent", "rag", "--top-k", "2")) == {"top_k": 2}  # a generated flag, given


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (("--agent-option", "top_k"), "--agent-option takes KEY=VALUE, got 'top_k'"),
        (("--agent-option", "top_k=many"), "option 'top_k' of --agent bm25 takes a int, got 'many'"),
        (("--agent-option", "oracle=perhaps"), "option 'oracle' of --agent bm25 takes a bool"),
        (("--agent", "repl", "--agent-option", "top_k=3"), "--top-k is for --agent bm25, rag, mdoc or shell"),
        (("--agent-option", "topk=3"), "did you mean 'top_k'?"),
    ],
)
def test_agent_option_errors_name_the_problem(words: tuple[str, ...], message: str) -> None:
    with pytest.raises(UserError) as info:
        options_of(_args(*words))
    assert message in str(info.value)


def test_flags_not_given_take_the_chosen_agents_defaults() -> None:
    args = _args("--agent", "mdoc")
    assert options_of(args) == {} and args.top_k == 4  # MDocAgent's own default, not the search agent's 5
    assert _args("--agent", "shell").top_k == 3 and _args().top_k == 5


def test_a_flag_of_another_agent_is_refused_by_the_run(tmp_path, caplog) -> None:
    out = tmp_path / "r.jsonl"
    assert main(["run", "--agent", "repl", "--oracle", "-o", str(out), "--no-progress", "--split", "test"]) == 2
    assert "--oracle is for --agent bm25; --agent repl has no option 'oracle'" in caplog.text
    assert not out.exists()


def _help(*words: str) -> str:
    code = (
        "import sys, json\nfrom madqa.cli import main\n"
        f"try:\n    main({list(words)!r})\n"
        "except SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('smolagents', 'torch', 'gradio'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    text, _, heavy = done.stdout.rstrip().rpartition("\n")
    assert json.loads(heavy) == [], heavy  # the help is built from the light options classes only
    return " ".join(text.split())


def test_run_help_of_one_agent_lists_its_options_only() -> None:
    text = _help("run", "--agent", "repl", "--help")
    assert "--agent repl options" in text and "--sub-model SPEC" in text and "--step-timeout S" in text
    assert "--oracle" not in text and "--agent bm25 options" not in text
    assert "wall-clock seconds per code step, sub-model time excluded (default: 30.0)" in text


def test_run_help_lists_every_agents_options_and_every_agent() -> None:
    text = _help("run", "--help")
    for name in EXPECTED:
        assert f"--agent {name} options" in text, name
    assert "file-search: managed RAG" in text  # --agent's own help comes from the registry
    assert "pages per retrieval (MDocAgent's top-4) (default: 4)" in text and "pages per search (default: 5)" in text


def test_a_real_default_run_writes_the_same_config_keys_in_the_same_order(layout, tmp_path) -> None:
    from madqa.agents.harness.runner import run_benchmark

    out = tmp_path / "r.jsonl"
    run_benchmark(RunConfig(model="py:helpers.fake_runs:fake_model", limit=1), out)
    config = json.loads(out.read_text(encoding="utf-8").splitlines()[0])["config"]
    assert list(config) == [*COMMON_ORDER, *EXPECTED["bm25"], "model_options"]
    resolved = {"observe", "page_chars", "min_searches"}  # the model-dependent defaults, resolved in prepare
    assert {k: v for k, v in config.items() if k in EXPECTED["bm25"] and k not in resolved} == {
        k: v for k, v in EXPECTED["bm25"].items() if k not in resolved
    }
    assert config["observe"] in ("image", "text") and config["page_chars"] > 0 and config["min_searches"] == 0


def test_a_sweep_reads_each_configurations_options_through_its_agents_class(tmp_path) -> None:
    from madqa.cli.sweep_cmd import load_sweep

    path = tmp_path / "sweep.yaml"
    path.write_text(
        "top_k: 2\nconfigurations:\n  - {name: a, agent: bm25}\n  - {name: b, agent: repl, step_timeout: 5}\n"
        "  - {name: c, agent: mdoc}\n",
        encoding="utf-8",
    )
    a, b, c = load_sweep(path)
    assert a.config.options == {"top_k": 2} and c.config.options == {"top_k": 2}  # a default, where the agent has it
    assert b.config.options == {"step_timeout": 5}  # repl has no top_k: the default does not apply to it
    path.write_text("configurations:\n  - {name: a, agent: repl, oracle: true}\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"configurations\[0\] \(a\): --oracle is for --agent bm25; --agent repl"):
        load_sweep(path)
    path.write_text("configurations:\n  - {name: a, top_kk: 3}\n", encoding="utf-8")
    with pytest.raises(UserError, match="unknown field 'top_kk'; did you mean 'top_k'?"):
        load_sweep(path)

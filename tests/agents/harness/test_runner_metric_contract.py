"""The runner/metric contract (issue 22 item 4): every line `madqa run` writes is accepted and scored by
`madqa evaluate`, the evaluate module and the Space's submission scoring, whatever the model answered.

The property test fuzzes model outputs (pages huge, negative, zero, strings, floats; unknown or huge document names;
huge, empty and non-string answers; missing keys; malformed tool calls) and feeds them through the real runner
(:func:`madqa.agents.harness.runner.run_benchmark`, with a ``py:`` model spec whose factory returns ``ScriptedModel``)
into the
three scoring paths. One hypothesis example is one run of several questions, each with its own script, so that a
few examples cover many model outputs.

Not fuzzed: NaN/Infinity and lone surrogates in a model's arguments (JSON allows ``\ud800``; Python's json reads
``NaN``). They end the run before any line is written: an expected failure below, until agents/harness/record.py keeps
them out of the trajectory.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers.fakes import ScriptedModel, code
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from madqa.agents.harness import answer
from madqa.metric import schema

MODEL = "py:test_runner_metric_contract:fuzzed_model"
QUESTIONS = 6  # questions per run (one hypothesis example)

#: The scripts of the current run, by question text (the model factory is called by the runner, with no arguments).
SCRIPTS: dict[str, list[Any]] = {}
_LOCK = threading.Lock()


def fuzzed_model(**_: Any) -> ScriptedModel:
    """The model of the fuzzed runs: each question's calls replay that question's script from :data:`SCRIPTS`."""
    calls: dict[str, int] = {}

    def reply(text: str, tools: list[str]) -> Any:
        found = re.search(r"Question: (.*)", text)
        if found is None:  # a code agent's llm_query sub-call
            return "a sub-model reply"
        question = found.group(1).strip()
        with _LOCK:
            script = SCRIPTS[question]
            n = calls[question] = calls.get(question, -1) + 1
        return script[min(n, len(script) - 1)]

    return ScriptedModel([reply], text_only=True, model_id="fuzzed")


# --- strategies: what a real model may put in a final answer or a tool call ------------------------------------

DOCUMENTS = ["riverton_water_annual_report_2019.pdf", "nope.pdf"]  # one sample document (checked below), one unknown


def long_text(chars: str, low: int, high: int) -> st.SearchStrategy[str]:
    """Strings of ``low``..``high`` characters, built (hypothesis draws at most a few kB of text itself)."""
    return st.builds(lambda ch, n: ch * n, st.sampled_from(list(chars)), st.integers(low, high))


pages = st.one_of(
    st.integers(-5, 5),
    st.integers(schema.MAX_PAGE - 2, 10**12),  # 314680, 1506387294, … (issue 22)
    st.integers(10**20, 10**300),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    st.sampled_from([0.0, 3.0, 2.5, "7", " 12 ", "0", "-3", "abc", "²", True, None, [1], {}]),
    long_text("9", 20, 5000),  # int() refuses past 4,300 digits
)
documents = st.one_of(
    st.sampled_from(DOCUMENTS + ["", "   ", " a.pdf "]),
    long_text("x/", 900, 3000),
    st.text(max_size=30),
    st.none(),
    st.integers(),
    st.lists(st.text(max_size=3), max_size=2),
)
citation = st.one_of(
    st.fixed_dictionaries({"document": documents, "page": pages}),
    st.fixed_dictionaries({"file": documents, "page": pages}),
    st.fixed_dictionaries(
        {},
        optional={
            "document": documents,
            "file": documents,
            "page": pages,
            "pgae": pages,
            "extra": st.text(max_size=5),
        },
    ),
    st.text(max_size=20),
    st.integers(),
    st.none(),
)
answer_item = st.one_of(
    st.text(max_size=40),
    long_text("xy ", 900, 5000),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
answers = st.one_of(
    st.lists(answer_item, max_size=60),
    st.text(max_size=50),
    long_text("z", 9000, 12000),
    st.integers(),
    st.none(),
    st.booleans(),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
citations = st.one_of(st.lists(citation, max_size=60), citation, st.none())
# Well-formed but extreme: what the strict final_answer accepts, so that it reaches the results line at once.
positive_pages = st.one_of(
    st.integers(1, 10**12),
    st.integers(10**20, 10**300),
    st.floats(1, 1e300).map(float.__ceil__).map(float),
    long_text("9", 19, 5000),
    st.integers(1, 10**9).map(str),
)
extreme_args = st.fixed_dictionaries(
    {
        "answer": st.lists(st.one_of(st.text(max_size=20), long_text("xy", 500, 3000), st.integers()), max_size=60),
        "citations": st.lists(
            st.fixed_dictionaries(
                {"document": st.one_of(st.sampled_from(DOCUMENTS), long_text("x/", 990, 3000)), "page": positive_pages}
            ),
            max_size=60,
        ),
    }
)
final_args = st.one_of(
    extreme_args,
    st.fixed_dictionaries(
        {}, optional={"answer": answers, "citations": citations, "anwser": answers, "citatons": citations}
    ),
)
tool_call = st.one_of(
    st.tuples(st.just("final_answer"), final_args),
    st.tuples(st.just("final_answer"), st.one_of(st.text(max_size=30), st.integers(), st.lists(st.integers()))),
    st.tuples(
        st.just("search_documents"),
        st.fixed_dictionaries(
            {},
            optional={
                "query": st.one_of(st.text(max_size=30), st.integers(), st.none(), st.lists(st.text(max_size=5))),
                "k": st.integers(),
            },
        ),
    ),
    st.tuples(
        st.sampled_from(["no_such_tool", "", "final_answer " * 3]), st.dictionaries(st.text(max_size=5), st.integers())
    ),
    st.text(max_size=60),  # a reply with no tool call at all
)
scripts = st.lists(st.lists(tool_call, min_size=1, max_size=4), min_size=QUESTIONS, max_size=QUESTIONS)
# The code agent calls final_answer in its code: the same values, written as Python literals (a float's repr such as
# `inf` is a NameError in the worker: a failed step, as a model's bad code is).
repl_step = st.one_of(
    st.builds(lambda args: code("final_answer(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"), final_args),
    st.builds(lambda a, c: code(f"final_answer({a!r}, {c!r})"), answers, citations),
    st.text(max_size=60),
    st.just(code("print(documents[:1])")),
    st.just(code("final_answer(")),
)
repl_scripts = st.lists(st.lists(repl_step, min_size=1, max_size=3), min_size=QUESTIONS, max_size=QUESTIONS)


# --- the three scoring paths --------------------------------------------------------------------------------------


def evaluate_cli(path: Path) -> dict[str, Any]:
    from madqa.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["evaluate", str(path), "--split", "dev", "--json", "--resamples", "10"]) == 0
    return json.loads(out.getvalue())


def evaluate_module(lines: list[dict[str, Any]], gold: list[dict[str, Any]], cache: Path) -> dict[str, Any]:
    from madqa.metric.madqa import Madqa

    metric = Madqa(keep_in_memory=True, cache_dir=str(cache))
    padded = lines + [None] * (len(gold) - len(lines))  # evaluate needs one prediction per reference
    return metric.compute(predictions=padded, references=gold, n_resamples=10)


def evaluate_space(text: str, gold: list[dict[str, Any]]) -> Any:
    from madqa.metric.inputs import parse_references
    from madqa.metric.report import ReportOptions
    from madqa.space.submission import evaluate_results

    refs = parse_references(gold, "dev")
    return evaluate_results(text, refs, {r.id for r in refs}, {}, options=ReportOptions(n_resamples=10))


@pytest.fixture(scope="module")
def dev(layout) -> dict[str, Any]:
    from madqa.loading_script.load import load_gold, load_questions

    questions = load_questions("dev")[:QUESTIONS]
    assert len(questions) == QUESTIONS and len({q["question"] for q in questions}) == QUESTIONS
    return {"questions": questions, "gold": load_gold("dev")}


def test_the_runners_caps_are_within_the_metrics() -> None:
    assert answer.MAX_ANSWER_ITEM_CHARS <= schema.MAX_ANSWER_STRING_CHARS
    assert answer.MAX_LIST_ITEMS <= min(schema.MAX_ANSWER_ITEMS, schema.MAX_CITATIONS)
    assert answer.MAX_ANSWER_TOTAL_CHARS <= schema.MAX_ANSWER_LINE_CHARS
    assert answer.MAX_DOCUMENT_CHARS <= schema.MAX_ID_CHARS


def test_final_answer_normalisation_writes_only_what_the_metric_accepts() -> None:
    """Each cut failed before its fix: 20,000 characters of answer, a 2,000-character name and a 5,000-digit page
    made a line the metric refuses (the last one an uncaught ValueError from int()); ``document: null`` dropped a
    citation whose ``file`` the metric reads."""
    from madqa.metric.inputs import parse_results_text

    out = answer.normalise_answer(
        ["y" * 1500] * 20,
        [
            {"document": "d" * 2000, "page": 1},
            {"document": "a.pdf", "page": "9" * 5000},
            {"document": "a.pdf", "page": "0" * 40 + "7"},
            {"document": None, "file": "b.pdf", "page": 1506387294},
        ],
    )
    assert [len(a) for a in out["answer"]] == [1000] * 8 and sum(map(len, out["answer"])) == 8000
    assert [c["page"] for c in out["citations"]] == [1, int("9" * 20), 7, 1506387294]
    assert len(out["citations"][0]["document"]) == schema.MAX_ID_CHARS and out["citations"][3]["document"] == "b.pdf"
    [pred] = parse_results_text(json.dumps({"id": "q1", **out}), "r.jsonl")  # accepted, never refused
    assert len(pred.citations) == 4
    assert answer.normalise_answer([10**5000], [], strict=False)["answer"] == ["<an integer of about 5000 digits>"]


FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.slow
@settings(FUZZ, max_examples=15)
@given(scripts=scripts)
def test_every_line_the_runner_writes_is_scored_by_all_three_paths(dev, tmp_path_factory, scripts) -> None:
    check_run(dev, tmp_path_factory.mktemp("fuzz"), scripts, agent="bm25")


@pytest.mark.slow
@settings(FUZZ, max_examples=6)
@given(scripts=repl_scripts)
def test_every_line_the_code_agent_writes_is_scored_by_all_three_paths(dev, tmp_path_factory, scripts) -> None:
    check_run(dev, tmp_path_factory.mktemp("fuzz_repl"), scripts, agent="repl")


def check_run(dev: dict[str, Any], tmp: Path, scripts: list[list[Any]], *, agent: str) -> None:
    """One run of the real runner on the questions' scripts, then the three scoring paths on its file."""
    from madqa.agents.harness.runner import RunConfig, run_benchmark

    SCRIPTS.clear()
    SCRIPTS.update({q["question"].strip(): s for q, s in zip(dev["questions"], scripts, strict=True)})
    out = tmp / "r.jsonl"
    config = RunConfig(
        model=MODEL, agent=agent, limit=QUESTIONS, max_steps=3, options={"top_k": 1} if agent == "bm25" else {}
    )
    summary = run_benchmark(config, out)
    text = out.read_text(encoding="utf-8")
    lines = [json.loads(x) for x in text.split("\n") if x.strip()]  # not splitlines: U+0085 in a line
    assert summary.written == len(lines) == QUESTIONS

    cli = evaluate_cli(out)
    module = evaluate_module(lines, dev["gold"], tmp / "cache")
    space = evaluate_space(text, dev["gold"])
    for report in (cli, module, space.report):
        assert report["n_predicted"] == QUESTIONS and report["n_unknown"] == 0, report
    assert cli["input_notes"] == module["input_notes"]
    assert len(space.warnings) == len(cli["warnings"])


def test_the_issue_22_model_outputs_are_scored_as_wrong_citations_not_refused(dev, tmp_path: Path) -> None:
    """The outputs seen from a real model in issue 22, and the caps where runner and metric disagreed."""
    from madqa.agents.harness.runner import RunConfig, run_benchmark

    doc = DOCUMENTS[0]
    finals = [
        {"answer": ["17.85"], "citations": [{"document": doc, "page": 314680}, {"document": doc, "page": 1506387294}]},
        {"answer": ["y" * 1000] * 20, "citations": [{"document": doc, "page": 5}]},  # 20,000 characters in all
        {"answer": ["x"], "citations": [{"document": "d" * 2000 + ".pdf", "page": 1}]},  # a 2,004-character name
        {"answer": ["x"], "citations": [{"document": doc, "page": "9" * 5000}]},  # int() refuses 5,000 digits
        {"answer": "x", "citations": [{"document": None, "file": doc, "page": 5.0}]},
        {"answer": None, "citations": None},
    ]
    SCRIPTS.clear()
    SCRIPTS.update(
        {q["question"].strip(): [("final_answer", f)] for q, f in zip(dev["questions"], finals, strict=True)}
    )
    out = tmp_path / "r.jsonl"
    assert (
        run_benchmark(RunConfig(model=MODEL, limit=QUESTIONS, max_steps=2, options={"top_k": 1}), out).written
        == QUESTIONS
    )
    text = out.read_text(encoding="utf-8")
    lines = [json.loads(x) for x in text.split("\n") if x.strip()]
    by_id = {r["id"]: r for r in lines}
    first, second, third = (by_id[q["id"]] for q in dev["questions"][:3])
    assert [c["page"] for c in first["citations"]] == [314680, 1506387294]
    assert sum(map(len, second["answer"])) == schema.MAX_ANSWER_LINE_CHARS  # cut to the metric's cap ...
    assert second["trajectory"][0]["tool_calls"][0]["arguments"]["answer"] == ["y" * 1000] * 20  # ... kept here
    assert len(third["citations"][0]["document"]) == schema.MAX_ID_CHARS
    cli = evaluate_cli(out)
    module = evaluate_module(lines, dev["gold"], tmp_path / "cache")
    space = evaluate_space(text, dev["gold"])
    for report in (cli, module, space.report):
        assert report["n_predicted"] == QUESTIONS
    assert cli["input_notes"]["citations_above_max_page"] == module["input_notes"]["citations_above_max_page"] == 3
    assert cli["page_f1"] == module["page_f1"] == space.report["page_f1"]
    assert space.warnings == ("results.jsonl: 3 citation(s) to pages above 100,000 scored as wrong citations",)


@pytest.mark.parametrize(
    "args",
    [
        {"answer": ["x"], "citations": [{"document": DOCUMENTS[0], "page": float("nan")}]},
        {"answer": [float("inf")], "citations": []},
        {"answer": ["\ud83d"], "citations": [{"document": DOCUMENTS[0], "page": 3}]},  # half of an escaped emoji
    ],
)
def test_non_finite_or_surrogate_arguments_do_not_end_the_run(dev, tmp_path: Path, args: dict[str, Any]) -> None:
    from madqa.agents.harness.runner import RunConfig, run_benchmark

    SCRIPTS.clear()
    SCRIPTS.update({q["question"].strip(): [("final_answer", args)] for q in dev["questions"]})
    out = tmp_path / "r.jsonl"
    assert (
        run_benchmark(RunConfig(model=MODEL, limit=QUESTIONS, max_steps=2, options={"top_k": 1}), out).written
        == QUESTIONS
    )
    assert evaluate_cli(out)["n_predicted"] == QUESTIONS

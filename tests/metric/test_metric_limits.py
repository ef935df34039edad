"""Input caps (issue #10): bounded scoring cost per results file, in every mode, checked before any scoring work.

Costs are measured with counters (ANLS* calls and the characters handed to ANLS*, ``json.loads`` calls, judge
calls), never with a clock.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from madqa.metric import jsonl, schema, scoring
from madqa.metric.inputs import InputError, parse_prediction, parse_references, parse_results_text
from madqa.metric.report import ReportOptions, evaluate_predictions

GOLD = parse_references(
    [
        {
            "id": f"g{i}",
            "question": f"Q{i}?",
            "answer_variants": [[f"answer {i}"]],
            "evidence": [{"document": "d.pdf", "page": 1 + i}],
        }
        for i in range(10)
    ],
    "gold",
)


class AnlsCounter:
    """Stands in for ``anls_star.anls_score``: counts calls and the predicted characters it would process."""

    def __init__(self, real):
        self.real, self.calls, self.chars = real, 0, 0

    def __call__(self, gold, pred):
        self.calls += 1
        self.chars += sum(len(s) for s in pred)
        return self.real(gold, pred)


@pytest.fixture
def anls(monkeypatch) -> AnlsCounter:
    counter = AnlsCounter(scoring.anls_score)
    monkeypatch.setattr(scoring, "anls_score", counter)
    return counter


def ordinary_lines() -> list[str]:
    return [
        json.dumps(
            {"id": f"g{i}", "answer": [f"answer {i}"], "steps": 2, "citations": [{"document": "d.pdf", "page": 1 + i}]}
        )
        for i in range(10)
    ]


def judge_never_called(requests):
    raise AssertionError(f"the judge was asked about {len(requests)} items of a file that must be rejected")


def score_file(text: str, mode: str = "anls") -> dict:
    """What every caller does (CLI, Space, evaluate module): parse the whole file, then score it."""
    judge = judge_never_called if mode == "judge" else None
    options = ReportOptions(mode=mode, n_resamples=10)
    return evaluate_predictions(parse_results_text(text, "r.jsonl"), GOLD, options, judge=judge)


def error_of(text: str, mode: str = "anls") -> InputError:
    with pytest.raises(InputError) as info:
        score_file(text, mode)
    return info.value


def with_line(**fields) -> str:
    """The ordinary file with line 4 (id g3) changed."""
    lines = ordinary_lines()
    record = json.loads(lines[3])
    record.update(fields)
    lines[3] = json.dumps(record)
    return "\n".join(lines)


CAP_CASES = [
    # (field values just over a cap, message fragment naming the field and the limit)
    (dict(answer=["x" * (schema.MAX_ANSWER_STRING_CHARS + 1)]), "answer[0] has 4001 characters; the limit is 4000"),
    (dict(answer="x" * (schema.MAX_ANSWER_STRING_CHARS + 1)), "answer[0] has 4001 characters"),
    (dict(answer=["x" * 4000, "y" * 4000, "z"]), "field 'answer' has 8001 characters in all; the limit is 8000"),
    (dict(answer=["x"] * (schema.MAX_ANSWER_ITEMS + 1)), "field 'answer' has 201 items; the limit is 200"),
    (dict(citations=[{"document": "d.pdf", "page": 1}] * 1001), "field 'citations' has 1001 items; the limit is 1000"),
    (dict(citations=[{"document": "d" * 1001, "page": 1}]), "the document name has 1001 characters"),
    (dict(steps=100_001), "field 'steps' is 100001; the limit is 100000"),
    (dict(steps=10**6), "field 'steps' is 1000000; the limit is 100000"),
    (dict(steps=10**10), "field 'steps' is 10000000000"),
    (dict(steps=2**63), "field 'steps' is 9223372036854775808"),
    (dict(steps=-1), "field 'steps' must be a non-negative integer, got -1"),
    (dict(steps=2.5), "field 'steps' must be a non-negative integer, got 2.5"),
    (dict(steps=3.0), "field 'steps' must be a non-negative integer, got 3.0"),
    (dict(steps="3"), "field 'steps' must be a non-negative integer, got '3'"),
    (dict(steps=True), "field 'steps' must be a non-negative integer, got True"),
    (dict(iterations=10**10), "field 'iterations' is 10000000000"),
    (dict(search_history=[], steps=2**63), "field 'steps' is 9223372036854775808"),  # checked even when unused
    (dict(search_history=[0] * 100_001), "field 'search_history' has 100001 entries; the limit is 100000"),
    (dict(id="g" * 1001), "field 'id' has 1001 characters; the limit is 1000"),
    (dict(question="q" * 20_001), "field 'question' has 20001 characters; the limit is 20000"),
]


@pytest.mark.parametrize("mode", ["anls", "judge"])
@pytest.mark.parametrize(("fields", "message"), CAP_CASES)
def test_each_cap_is_an_input_error_before_any_scoring(anls, mode, fields, message):
    err = error_of(with_line(**fields), mode)
    assert err.count == 1
    assert err.problems[0].startswith("r.jsonl line 4: ") and message in err.problems[0], err.problems
    assert anls.calls == 0  # rejected before any ANLS* work (and the judge would have raised)


def test_values_at_the_caps_are_accepted():
    at_caps = dict(
        answer=["x" * 4000, "y" * 3999, "z"],
        steps=schema.MAX_EFFORT,
        citations=[{"document": "d.pdf", "page": schema.MAX_PAGE}] * schema.MAX_CITATIONS,
    )
    assert score_file(with_line(**at_caps))["n_predicted"] == 10
    assert score_file(with_line(answer=["x"] * schema.MAX_ANSWER_ITEMS, iterations=0))["n_predicted"] == 10


def test_evaluate_module_dict_inputs_get_the_same_caps():
    # madqa.compute() parses each prediction dict with parse_prediction: the caps hold there too
    with pytest.raises(InputError, match=r"^predictions\[3\]: answer\[0\] has 4001 characters"):
        parse_prediction({"id": "g3", "answer": ["x" * 4001]}, "predictions[3]")
    with pytest.raises(InputError, match=r"^predictions\[0\]: field 'steps' is 10000000000"):
        parse_prediction({"id": "g3", "answer": [], "steps": 10**10}, "predictions[0]")


def test_over_long_line_is_refused_before_json_parsing(monkeypatch):
    calls = []
    real = jsonl.json.loads
    monkeypatch.setattr(jsonl.json, "loads", lambda text, **kw: calls.append(len(text)) or real(text, **kw))
    huge = json.dumps({"id": "g3", "answer": ["x" * schema.MAX_LINE_CHARS]})
    lines = ordinary_lines()
    lines[3] = huge
    err = error_of("\n".join(lines))
    assert err.problems == [f"r.jsonl line 4: the line has {len(huge)} characters; the limit is 2000000"]
    assert max(calls) < 1000  # the huge line itself was never handed to the JSON parser


@pytest.mark.parametrize("mode", ["anls", "judge"])
def test_cost_of_a_huge_answer_is_bounded_relative_to_an_ordinary_file(anls, mode):
    # issue #10: a 1 MB answer cost ~23 s of ANLS*; now the parser refuses it. Compare counted ANLS* work.
    # answers close to the gold but not equal to it: an identical answer scores 1.0 without running ANLS*
    ordinary = "\n".join(line.replace('"answer ', '"Answer ') for line in ordinary_lines())
    score_file(ordinary)
    ordinary_calls, ordinary_chars = anls.calls, anls.chars
    assert ordinary_calls == 10 and ordinary_chars > 0
    for size, cap in ((10**6, "answer[0] has 1000000 characters"), (19 * 10**6, "the line has 19000089 characters")):
        anls.calls = anls.chars = 0
        assert str(error_of(with_line(answer=["x" * size]), mode)).startswith(f"r.jsonl line 4: {cap}")
        assert anls.calls / ordinary_calls == 0 and anls.chars / ordinary_chars == 0
    # the most a legal file can cost: every line's answer at the per-line cap
    worst = "\n".join(json.dumps({"id": f"g{i}", "answer": ["x" * 4000, "y" * 4000]}) for i in range(10))
    anls.calls = anls.chars = 0
    score_file(worst)
    assert anls.chars <= len(GOLD) * schema.MAX_ANSWER_LINE_CHARS  # one variant per gold item
    assert anls.chars / ordinary_chars <= schema.MAX_ANSWER_LINE_CHARS / len("answer 0")


def test_huge_steps_give_a_small_exact_report():
    # issue #10: "steps": 1000000 stored a 37 MB budget curve; 10**10 raised MemoryError, 2**63 OverflowError
    lines = ordinary_lines()
    lines[0] = json.dumps({"id": "g0", "answer": ["answer 0"], "steps": schema.MAX_EFFORT})
    report = score_file("\n".join(lines))
    curve = report["budget_curve"]
    assert [p["budget"] for p in curve] == [1, 2, schema.MAX_EFFORT]
    assert [p["accuracy"] for p in curve] == [0.0, 0.9, 1.0]
    assert len(json.dumps(report)) < 20_000


def test_caps_are_documented_in_the_metric_card():
    card = (Path(schema.__file__).parent / "README.md").read_text(encoding="utf-8")
    names = [n for n in vars(schema) if re.fullmatch(r"MAX_[A-Z_]+", n) and n != "MAX_ANSWER_CHARS"]
    assert len(names) == 9
    for name in names:
        value = getattr(schema, name)
        assert f"`{name}`" in card and f"{value:,}" in card, name


def test_duplicate_line_flood_gives_a_small_message(anls):
    # issue #10: a file of 10^5 copies of one line produced a 1.2 MB error message (every line number listed)
    line = json.dumps({"id": "g0", "answer": ["answer 0"]})
    err = error_of("\n".join([line] * 100_000))
    assert str(err).startswith("duplicate predictions: gold id 'g0' is predicted more than once (line 1, line 2,")
    assert "and 99995 more)" in str(err) and len(str(err)) < 500
    assert anls.calls == 0

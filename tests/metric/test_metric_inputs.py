"""Input validation: policies and messages that name the file, the line and the field."""

from __future__ import annotations

import doctest
import json

import pytest

from madqa.metric import inputs, jsonl
from madqa.metric.calibration_inputs import parse_calibration, parse_calibration_labels
from madqa.metric.inputs import (
    InputError,
    parse_prediction,
    parse_reference,
    parse_references,
    parse_results_text,
    read_jsonl_text,
)
from madqa.metric.schema import Citation


def line(**fields) -> str:
    base = {"id": "q1", "answer": ["x"]}
    base.update(fields)
    return json.dumps(base)


def one(**fields):
    return parse_results_text(line(**fields), "r.jsonl")[0]


def error_of(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        parse_results_text(text, "r.jsonl")
    return info.value


def test_page_policy():
    assert one(citations=[{"document": "a.pdf", "page": "5"}]).citations == (Citation("a.pdf", 5),)
    assert one(citations=[{"document": "a.pdf", "page": " 7 "}]).citations == (Citation("a.pdf", 7),)
    assert one(citations=[{"document": "a.pdf", "page": 5.0}]).citations == (Citation("a.pdf", 5),)
    assert one(citations=[{"document": "a.pdf"}]).citations == (Citation("a.pdf", None),)
    assert one(citations=[{"file": "b.pdf", "page": 2}]).citations == (Citation("b.pdf", 2),)
    for bad, shown in [
        (0, "got 0 (pages are 1-based"),
        (-1, "got -1"),
        ("abc", "got 'abc'"),
        (True, "got True"),
        (2.5, "got 2.5"),
        ("-3", "got '-3'"),
    ]:
        err = error_of(line(citations=[{"document": "a.pdf", "page": bad}]))
        assert str(err).startswith("r.jsonl line 1: citations[0]: page must be a positive integer"), bad
        assert shown in str(err)


def test_answer_policy():
    assert one(answer="Paris").answer == ("Paris",)
    assert one(answer=None).answer == ()
    assert one(answer=[42, "x", 1.5]).answer == ("42", "x", "1.5")
    assert "field 'answer' must be a list of strings or a string, got dict" in str(error_of(line(answer={"a": 1})))
    assert "answer[0] must be a string, got None" in str(error_of(line(answer=[None])))
    assert "answer[1] must be a string, got ['y']" in str(error_of(line(answer=["x", ["y"]])))


def test_a_line_without_answer_is_no_answer_with_one_warning_per_file():
    # issue 22: the public harness writes failed questions without an 'answer' key; the file was refused whole
    text = "\n".join([json.dumps({"id": "q1"}), line(id="q2"), json.dumps({"id": "q3", "error": "timeout"})])
    parsed = inputs.parse_results(text, "r.jsonl")
    assert [p.answer for p in parsed.predictions] == [(), ("x",), ()]
    assert parsed.notes.lines_without_answer == 2
    assert parsed.notes.warnings() == ["r.jsonl: 2 line(s) have no 'answer' field; scored as no answer"]


def test_citation_and_effort_types():
    assert "field 'citations' must be a list" in str(error_of(line(citations="a.pdf p5")))
    assert "citations[0] must be an object" in str(error_of(line(citations=["a.pdf"])))
    assert "citations[1] needs a non-empty 'document' (or 'file')" in str(
        error_of(line(citations=[{"document": "a.pdf", "page": 1}, {"page": 2}]))
    )
    assert one(search_history=["a", "b"], steps=7).steps == 2  # search_history wins
    assert one(steps=4).steps == 4
    assert one(iterations=3).steps == 3
    assert one(search_history=[]).steps == 0
    assert one().steps is None
    assert "field 'steps' must be a non-negative integer, got -2" in str(error_of(line(steps=-2)))
    assert "field 'search_history' must be a list" in str(error_of(line(search_history="q")))


def test_nan_and_invalid_json_name_file_and_line():
    text = "\n".join([line(), "{not json", line(id="q3", steps=float("nan")), "", line(id="q5", answer={"a": 1})])
    err = error_of(text)
    assert len(err.problems) == 3
    assert err.problems[0].startswith("r.jsonl line 2: invalid JSON")
    assert err.problems[1] == "r.jsonl line 3: invalid JSON (NaN is not valid JSON (use null or a number))"
    assert err.problems[2].startswith("r.jsonl line 5: field 'answer'")  # blank line 4 skipped, numbering kept


def test_empty_file_and_non_object_lines():
    assert str(error_of("")) == "r.jsonl: the file is empty (no JSON lines)"
    assert str(error_of("\n  \n")) == "r.jsonl: the file is empty (no JSON lines)"
    assert "line 1: a results line must be a JSON object, got list" in str(error_of("[1, 2]"))
    assert "neither 'id' nor 'question'" in str(error_of(json.dumps({"answer": ["x"]})))


def test_error_message_is_one_line_and_bounded():
    text = "\n".join(line(id=f"q{i}", answer={"bad": i}) for i in range(25))
    err = error_of(text)
    assert (err.count, len(err.problems)) == (25, jsonl.MAX_REPORTED_PROBLEMS)
    assert "\n" not in str(err)
    assert str(err).endswith("… and 5 more problem(s)")


def test_error_message_stays_small_for_huge_files_and_values():
    # issue #10: a 10^5-duplicate-line file gave a 1.2 MB message; huge values are quoted cut short
    bad = "\n".join([line(answer={"a": 1})] * 100_000)
    err = error_of(bad)
    assert err.count == 100_000 and len(err.problems) == 20
    assert len(str(err)) < 4000 and str(err).endswith("… and 99980 more problem(s)")
    huge = error_of(line(citations=[{"document": "a.pdf", "page": "x" * 1_000_000}]))
    assert len(str(huge)) <= jsonl.MAX_PROBLEM_CHARS
    assert "got 'xxx" in str(huge) and "(1000002 characters)" in str(huge)
    assert "a list of 5000 items" in str(error_of(line(id=list(range(5000)))))
    direct = InputError([f"x.jsonl line {i}: bad " + "y" * 1000 for i in range(100_000)])  # as matching raises it
    assert (direct.count, len(direct.problems)) == (100_000, 20) and len(str(direct)) < 7000
    assert all(len(p) == jsonl.MAX_PROBLEM_CHARS and p.endswith("…") for p in direct.problems)
    collected = jsonl.Problems()  # the parser keeps 20 problems in memory, not 10^5
    for i in range(1000):
        collected.add(InputError(f"line {i}: bad"))
    assert (len(collected.kept), collected.count) == (20, 1000)


def test_lines_split_on_newline_only():
    # U+2028/U+2029/U+0085 are valid raw inside a JSON string; str.splitlines would cut the line there
    for sep in ("\u2028", "\u2029", "\x85"):
        first = json.dumps({"id": "q1", "answer": [f"a{sep}b"]}, ensure_ascii=False)
        assert sep in first
        preds = parse_results_text(first + "\r\n" + line(id="q2") + "\n", "r.jsonl")
        assert [p.answer for p in preds] == [(f"a{sep}b",), ("x",)] and [p.line for p in preds] == [1, 2]
        err = error_of(first + "\r\n" + line(id="q2", steps="bad"))  # a later line keeps its number
        assert err.problems == ["r.jsonl line 2: field 'steps' must be a non-negative integer, got 'bad'"]
    # the other splitlines separators are control characters: invalid raw in JSON, reported on their own line
    for sep in ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e"):
        text = line(id="q1") + "\n" + '{"id": "q2", "answer": ["a' + sep + 'b"]}' + "\n" + line(id="q3")
        err = error_of(text)
        assert err.count == 1 and err.problems[0].startswith("r.jsonl line 2: invalid JSON (Invalid control"), sep


def test_unicode_digit_pages_are_input_errors():
    for bad in ("²", "٣", "５", "1²", "1_0"):
        err = error_of(line(citations=[{"document": "a.pdf", "page": bad}]))
        assert str(err) == f"r.jsonl line 1: citations[0]: page must be a positive integer, got {bad!r}"
    assert one(citations=[{"document": "a.pdf", "page": "12"}]).citations == (Citation("a.pdf", 12),)


def test_pages_above_the_cap_are_wrong_citations_counted_once_per_file():
    # issue 22: models cite pages like 314680 and 1506387294; the whole file was refused (page > MAX_PAGE)
    cites = [
        {"document": "a", "page": 314680},
        {"document": "a", "page": 1506387294},
        {"document": "a", "page": 2},
        {"document": "a", "page": "9" * 20},
        {"document": "a", "page": "0" * 30 + "7"},
    ]
    parsed = inputs.parse_results("\n".join([line(citations=cites), line(id="q2", citations=cites[:1])]), "r.jsonl")
    pages = [c.page for c in parsed.predictions[0].citations]
    assert pages == [314680, 1506387294, 2, int("9" * 20), 7]
    assert parsed.notes.citations_above_max_page == 4
    assert parsed.notes.warnings() == ["r.jsonl: 4 citation(s) to pages above 100,000 scored as wrong citations"]
    # int() would refuse 5000 digits (and costs quadratic time): only the first 20 significant digits are read
    [huge] = one(citations=[{"document": "a", "page": "9" * 5000}]).citations
    assert huge.page == int("9" * 20)
    assert one(citations=[{"document": "a", "page": 10**300}]).citations[0].page == 10**300
    assert "got 0 (pages are 1-based" in str(error_of(line(citations=[{"document": "a", "page": "000"}])))


@pytest.mark.parametrize(
    ("fields", "where", "name", "suggestion"),
    [
        ({"citatons": [{"document": "a", "page": 1}]}, "r.jsonl line 1", "citatons", "citations"),
        ({"answer": None, "anwser": ["x"]}, "r.jsonl line 1", "anwser", "answer"),
        ({"serach_history": ["q"]}, "r.jsonl line 1", "serach_history", "search_history"),
        ({"Steps": 3}, "r.jsonl line 1", "Steps", "steps"),
        ({"citations": [{"document": "a", "pgae": 3}]}, "r.jsonl line 1 (in citations)", "pgae", "page"),
        ({"citations": [{"documnet": "a", "page": 3, "file": "a"}]}, None, None, None),  # 'file' names the document
    ],
)
def test_a_misspelt_field_is_warned_about_by_name_once_per_file(fields, where, name, suggestion):
    # issue 22: a misspelt 'citatons' was ignored silently (Page F1 100 % -> 0 %)
    base = {"id": "q1", "answer": ["x"], **fields}
    text = "\n".join(json.dumps({**base, "id": f"q{i}"}) for i in range(3))
    warnings = inputs.parse_results(text, "r.jsonl").notes.warnings()
    if name is None:
        assert warnings == []
    else:
        expected = f"{where}: unknown field {name!r} (did you mean {suggestion!r}?); it is ignored, on 3 lines in all"
        assert warnings == [expected]


def test_extra_fields_that_runners_write_are_not_warned_about():
    record = {
        "id": "q1",
        "question": "Q?",
        "answer": ["x"],
        "citations": [{"document": "a", "page": 1, "snippet": "…", "score": 0.5}],
        "search_history": [],
        "steps": 0,
        "agent": "bm25",
        "model": "m",
        "usage": {},
        "trajectory": [],
        "config": {},
        "error": None,
        "final_state": "answered",
        "elapsed_s": 1,
        "dataset": {},
        "schema_version": 1,
        "effort": {},
        "repl": {},
        "page_views": [],
        "system_type": "human",
        "annotator": "a",
        "batch": 1,
        "split": "dev",
        "mode": "x",
        "started_at": "",
        "ended_at": "",
        "iterations": 2,
        "step": 3,
        "answers": 1,
        "questionnaire": 2,
    }
    assert inputs.parse_results(json.dumps(record), "r.jsonl").notes.warnings() == []


def test_unknown_field_checks_are_bounded():
    from madqa.metric import notes

    record = {"id": "q1", "answer": [], **{f"k{i}": 0 for i in range(5000)}, "x" * 10**5: 1}
    parsed = inputs.parse_results(json.dumps(record), "r.jsonl")
    assert len(parsed.notes._checked) == notes.MAX_CHECKED_KEYS  # the 10^5-character name is never compared
    many = "\n".join(json.dumps({"id": f"q{i}", "answer": [], f"citation{'s' * 0}{i}": 1}) for i in range(30))
    warnings = inputs.parse_results(many, "r.jsonl").notes.warnings()
    assert len(warnings) == notes.MAX_WARNED_KEYS + 1 and warnings[-1].startswith("r.jsonl: 20 more unknown field")


def test_int_ids_are_text():
    assert parse_prediction({"id": 7, "answer": []}, "x").id == "7"


def gold(**fields):
    base = {"id": "g1", "question": "Q?", "answer_variants": [["a"]], "evidence": [{"document": "d.pdf", "page": 1}]}
    base.update(fields)
    return base


def test_reference_parsing():
    r = parse_reference(gold(), "gold.jsonl record 1")
    assert (r.hop_type, r.domain, r.document_category) == ("single", "unknown", "unknown")
    r2 = parse_reference(gold(evidence=[{"document": "d.pdf", "page": 1}, {"document": "e.pdf", "page": 2}]), "g")
    assert r2.hop_type == "cross_doc"
    assert parse_reference(gold(answer_variants=["a", ["b", "c"]]), "g").answer_variants == (("a",), ("b", "c"))
    with pytest.raises(InputError, match="unlabelled rows cannot be scored"):
        parse_reference(gold(evidence=[]), "g")
    with pytest.raises(InputError, match="answer_variants"):
        parse_reference(gold(answer_variants=[]), "g")
    with pytest.raises(InputError, match="every evidence item needs a page"):
        parse_reference(gold(evidence=[{"document": "d.pdf"}]), "g")
    with pytest.raises(InputError, match=r"duplicate gold ids \['g1'\]"):
        parse_references([gold(), gold()], "gold.jsonl")
    with pytest.raises(InputError, match="no gold questions"):
        parse_references([], "gold.jsonl")


def test_gold_fields_exist_in_dataset_features():
    from madqa.loading_script.features import QA_FEATURES

    for key in ("id", "question", "answer_variants", "evidence", "hop_type", "domain", "document_category"):
        assert key in QA_FEATURES


def test_calibration_parsing():
    cal = parse_calibration({"q0": 0.9, "q1": 0.8, "m0": 10, "m1": 20}, "c.json")
    assert (cal.q0, cal.q1, cal.m0, cal.m1, cal.source) == (0.9, 0.8, 10, 20, "c.json")
    with pytest.raises(InputError, match="q0 \\+ q1 must exceed 1"):
        parse_calibration({"q0": 0.5, "q1": 0.5, "m0": 10, "m1": 20}, "c.json")
    with pytest.raises(InputError, match="field 'm1' must be a positive integer"):
        parse_calibration({"q0": 0.9, "q1": 0.8, "m0": 10, "m1": 0}, "c.json")
    with pytest.raises(InputError, match="field 'q0' must be a number in \\[0, 1\\]"):
        parse_calibration({"q0": 1.5, "q1": 0.8, "m0": 10, "m1": 2}, "c.json")


def test_calibration_labels():
    rows = read_jsonl_text('{"human": "correct", "judge": "partial"}\n{"human": false, "judge": 0}\n', "l.jsonl")
    assert parse_calibration_labels(rows, "l.jsonl") == ([True, False], [0.5, 0.0])
    with pytest.raises(InputError, match="l.jsonl line 1: field 'human': human labels must be binary"):
        parse_calibration_labels([(1, {"human": "partial", "judge": 1})], "l.jsonl")
    with pytest.raises(InputError, match="line 2: each line needs the fields 'human' and 'judge'"):
        parse_calibration_labels([(1, {"human": 1, "judge": 1}), (2, {"human": 1})], "l.jsonl")


def test_module_has_no_file_io():
    source = open(inputs.__file__, encoding="utf-8").read()
    assert "open(" not in source and "read_text" not in source


def test_jsonl_doctests():
    assert doctest.testmod(jsonl).failed == 0


def test_notes_doctests():
    from madqa.metric import notes

    result = doctest.testmod(notes)
    assert result.attempted > 0 and result.failed == 0

"""``madqa evaluate``, ``madqa calibrate`` and the metric bench, driven with ``--gold`` fixtures (no dataset)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from helpers.gold import gold_record
from helpers.report_keys import REPORT_KEYS

from madqa import cli
from madqa.bench import metric as bench_metric
from madqa.cli import UserError, calibrate_cmd, evaluate_cmd

GOLD = [
    gold_record("dev/0", "Total revenue?", [["$1.2M"]], [("a.pdf", 2)], "finance", "report"),
    gold_record(
        "dev/1", "Who signed?", [["Alice Smith"], ["A. Smith"]], [("b.pdf", 1), ("b.pdf", 3)], "legal", "contract"
    ),
    gold_record("dev/2", "Which is lower?", [["Firearms"]], [("c.pdf", 4), ("d.pdf", 1)], "education", "plan"),
]
SYSTEM_A = [
    {"id": "dev/0", "answer": ["$1.2M"], "citations": [{"document": "a.pdf", "page": 2}], "search_history": ["q"]},
    {"question": "Who signed?", "answer": "alice smith", "citations": [{"file": "b.pdf", "page": "3"}], "steps": 3},
    {"id": "dev/9", "answer": ["x"]},
]
SYSTEM_B = [
    {"id": "dev/0", "answer": ["$9"], "steps": 5},
    {"id": "dev/1", "answer": ["Alice Smith"], "steps": 1},
    {"id": "dev/2", "answer": ["Firearms"], "steps": 2},
]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("MADQA_HOME", str(tmp_path / "home"))
    return {
        "gold": write_jsonl(tmp_path / "gold.jsonl", GOLD),
        "a": write_jsonl(tmp_path / "a.jsonl", SYSTEM_A),
        "b": write_jsonl(tmp_path / "b.jsonl", SYSTEM_B),
        "dir": tmp_path,
    }


def run(module, *argv: str) -> int:
    parser = argparse.ArgumentParser()
    module.configure(parser)
    return module.run(parser.parse_args([str(a) for a in argv]))


def test_evaluate_json(files, capsys):
    assert run(evaluate_cmd, files["a"], "--gold", files["gold"], "--json", "--resamples", 100) == 0
    report = json.loads(capsys.readouterr().out)
    for key in REPORT_KEYS:
        assert key in report
    assert (report["n"], report["n_predicted"], report["missing"], report["matched_by_question"]) == (3, 2, 1, 1)
    assert report["unknown_ids"] == ["dev/9"]
    assert report["accuracy"] == pytest.approx(2 / 3)
    assert report["page_f1"] == pytest.approx((1 + 2 / 3 + 0) / 3)


def test_evaluate_table_and_warnings(files, capsys, caplog):
    caplog.set_level("WARNING")
    assert run(evaluate_cmd, files["a"], "--gold", files["gold"]) == 0
    out = capsys.readouterr().out
    assert "accuracy" in out and "Page F1" in out and "by hop type" in out and "≤1:" in out
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "matched by question text" in messages and "dev/9" in messages and "no prediction" in messages


def test_evaluate_compare_kappa_and_ctt(files, capsys):
    out_ctt = files["dir"] / "ctt.json"
    code = run(
        evaluate_cmd,
        files["a"],
        "--gold",
        files["gold"],
        "--compare",
        files["b"],
        "--json",
        "--ctt",
        out_ctt,
        "--ctt-test-size",
        2,
        "--ctt-dev-size",
        1,
        "--kuiper-order",
        "file",
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    compare = report["compare"]
    assert compare["systems"] == [str(files["a"]), str(files["b"])]
    # A: [1, 1, 0], B: [0, 1, 1]: po = 1/3, pe = 4/9 + 1/9 = 5/9 -> kappa = (1/3 - 5/9) / (4/9) = -1/2
    assert compare["kappa"][str(files["a"])][str(files["b"])] == pytest.approx(-0.5)
    assert compare["reports"][str(files["b"])]["accuracy"] == pytest.approx(2 / 3)
    assert report["kuiper_order"] == "file"
    ctt = json.loads(out_ctt.read_text())
    assert len(ctt["test"]) == 2 and len(ctt["dev"]) == 1 and len(ctt["train"]) == 0
    assert {i["id"] for i in ctt["items"]} == {"dev/0", "dev/1", "dev/2"}
    run(evaluate_cmd, files["a"], "--gold", files["gold"], "--compare", files["b"])
    assert "Cohen's kappa" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "a.jsonl: the file is empty"),
        ('{"id": "dev/0", "answer": ["x"]}\n{oops\n', "a.jsonl line 2: invalid JSON"),
        ('{"id": "dev/0", "answer": {"a": 1}}\n', "a.jsonl line 1: field 'answer' must be a list of strings"),
        (
            '{"id": "dev/0", "answer": ["x"], "citations": [{"document": "a.pdf", "page": -1}]}\n',
            "a.jsonl line 1: citations[0]: page must be a positive integer, got -1",
        ),
        (
            '{"id": "dev/0", "answer": ["x"], "citations": {"document": "a.pdf"}}\n',
            "a.jsonl line 1: field 'citations' must be a list",
        ),
        ('{"id": "dev/0", "answer": ["x"], "steps": NaN}\n', "a.jsonl line 1: invalid JSON (NaN is not valid JSON"),
        (
            '{"id": "dev/0", "answer": ["x"]}\n{"id": "dev/0", "answer": ["y"]}\n',
            "gold id 'dev/0' is predicted more than once (line 1, line 2)",
        ),
    ],
)
def test_evaluate_bad_input_is_one_clear_user_error(files, content, message):
    files["a"].write_text(content, encoding="utf-8")
    with pytest.raises(UserError) as info:
        run(evaluate_cmd, files["a"], "--gold", files["gold"])
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_evaluate_many_problems_are_logged(files, caplog):
    files["a"].write_text('{"id": "dev/0", "answer": {}}\n[1]\n', encoding="utf-8")
    with pytest.raises(UserError, match="2 problems \\(listed above\\); nothing was scored"):
        run(evaluate_cmd, files["a"], "--gold", files["gold"])
    assert "a.jsonl line 2: a results line must be a JSON object" in caplog.text


def test_evaluate_user_errors(files):
    with pytest.raises(UserError, match="no such file"):
        run(evaluate_cmd, files["dir"] / "nope.jsonl", "--gold", files["gold"])
    with pytest.raises(UserError, match="--mode judge needs --judge"):
        run(evaluate_cmd, files["a"], "--gold", files["gold"], "--mode", "judge")
    with pytest.raises(UserError, match="cannot import"):
        run(evaluate_cmd, files["a"], "--gold", files["gold"], "--mode", "judge", "--judge", "py:no_such_mod:f")
    bad_gold = write_jsonl(
        files["dir"] / "bad_gold.jsonl", [{"id": "x", "question": "q", "answer_variants": [["a"]], "evidence": []}]
    )
    with pytest.raises(UserError, match="unlabelled rows cannot be scored"):
        run(evaluate_cmd, files["a"], "--gold", bad_gold)
    with pytest.raises(UserError, match="--ctt needs at least two systems"):
        run(evaluate_cmd, files["a"], "--gold", files["gold"], "--ctt", files["dir"] / "c.json")
    with pytest.raises(UserError, match="given twice"):
        run(evaluate_cmd, files["a"], "--gold", files["gold"], "--compare", files["a"])


def test_judge_mode_with_py_spec_calibration_and_cache(files, capsys, monkeypatch):
    module = files["dir"] / "fake_judge_mod.py"
    module.write_text(
        "CALLS = []\n"
        "def complete(prompt):\n"
        "    CALLS.append(prompt)\n"
        '    return \'{"reasoning": "ok", "verdict": "partial"}\'\n',
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(files["dir"]))
    rows = [{"human": "correct", "judge": "correct"}] * 9 + [{"human": "correct", "judge": "incorrect"}]
    rows += [{"human": "incorrect", "judge": "incorrect"}] * 4 + [{"human": 0, "judge": "partial"}]
    labels = write_jsonl(files["dir"] / "labels.jsonl", rows)
    cal_path = files["dir"] / "cal.json"
    assert run(calibrate_cmd, labels, "-o", cal_path, "--json") == 0
    cal = json.loads(capsys.readouterr().out)
    assert (cal["q1"], cal["q0"], cal["m1"], cal["m0"]) == (0.9, 0.9, 10, 5)
    args = [
        files["b"],
        "--gold",
        files["gold"],
        "--mode",
        "judge",
        "--judge",
        "py:fake_judge_mod:complete",
        "--calibration",
        cal_path,
        "--json",
    ]
    assert run(evaluate_cmd, *args) == 0
    report = json.loads(capsys.readouterr().out)
    import fake_judge_mod  # type: ignore[import-not-found]

    assert len(fake_judge_mod.CALLS) == 1  # dev/1 and dev/2 are exact matches
    assert report["accuracy_raw"] == pytest.approx((0.5 + 1 + 1) / 3)
    assert report["accuracy"] == pytest.approx(min(1.0, (2.5 / 3 + 0.9 - 1) / 0.8))
    assert report["calibration"]["source"] == str(cal_path)
    assert (files["dir"] / "home" / "judge_cache.jsonl").is_file()  # default cache under MADQA_HOME
    assert run(evaluate_cmd, *args) == 0
    assert len(fake_judge_mod.CALLS) == 1  # second run: zero calls


def test_calibrate_errors(files):
    labels = write_jsonl(files["dir"] / "l.jsonl", [{"human": "correct", "judge": "correct"}])
    with pytest.raises(UserError, match="items labelled correct and items labelled incorrect"):
        run(calibrate_cmd, labels, "-o", files["dir"] / "c.json")
    bad = write_jsonl(files["dir"] / "l2.jsonl", [{"human": "maybe", "judge": 1}])
    with pytest.raises(UserError, match="l2.jsonl line 1: field 'human'"):
        run(calibrate_cmd, bad)


def test_bench_metric(capsys):
    parser = argparse.ArgumentParser()
    bench_metric.configure(parser)
    assert bench_metric.run(parser.parse_args(["--n", "60", "--repeat", "1", "--resamples", "100", "--json"])) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] == 60 and result["score_s"] > 0 and result["bootstrap_s"] > 0


def test_subcommands_are_registered(files, capsys):
    names = dict(cli.SUBCOMMANDS)
    assert names["evaluate"] == "madqa.cli.evaluate_cmd" and names["calibrate"] == "madqa.cli.calibrate_cmd"
    try:
        cli.build_parser()
    except ImportError as exc:  # another subcommand module not importable yet
        pytest.skip(f"CLI parser not buildable: {exc}")
    assert cli.main(["evaluate", str(files["a"]), "--gold", str(files["gold"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 3
    assert cli.main(["evaluate", str(files["dir"] / "missing.jsonl"), "--gold", str(files["gold"])]) == 2


def test_judge_text_names_where_the_correction_comes_from(files, capsys, monkeypatch):
    """The paper's calibration corrects only the paper's judge; the text says which calibration, or why raw."""
    from madqa.cli.table import format_report
    from madqa.metric.inputs import parse_references, parse_results_text
    from madqa.metric.judge import Judge
    from madqa.metric.report import ReportOptions, evaluate_predictions

    module = files["dir"] / "half_judge_mod.py"
    module.write_text('def complete(prompt):\n    return \'{"reasoning": "ok", "verdict": "partial"}\'\n')
    monkeypatch.syspath_prepend(str(files["dir"]))
    args = [files["b"], "--gold", files["gold"], "--mode", "judge", "--judge", "py:half_judge_mod:complete"]
    assert run(evaluate_cmd, *args) == 0
    text = capsys.readouterr().out
    assert "raw: no calibration for judge py:half_judge_mod:complete" in text and "gemini-2.5-flash only" in text
    assert "accuracy        83.3%" in text, text  # (0.5 + 1 + 1) / 3, uncorrected
    cal = write_jsonl(files["dir"] / "own.json", [{"q0": 0.9, "q1": 0.9, "m0": 5, "m1": 10}])
    assert run(evaluate_cmd, *args, "--calibration", cal) == 0
    text = capsys.readouterr().out
    assert f"bias-corrected with the calibration {cal} for judge py:half_judge_mod:complete" in text
    paper = Judge(lambda prompt: '{"reasoning": "ok", "verdict": "partial"}', "gemini:gemini-2.5-flash")
    preds = parse_results_text((files["b"]).read_text(encoding="utf-8"), "b.jsonl")
    report = evaluate_predictions(preds, parse_references(GOLD, "gold"), ReportOptions(mode="judge"), judge=paper)
    assert "(bias-corrected with the paper's calibration for gemini-2.5-flash); raw 83.3%" in format_report(report)
    assert report["accuracy"] == pytest.approx((2.5 / 3) / 0.98)


def test_judge_tokens_are_reported_per_run_apart_from_the_agents(files, capsys, monkeypatch):
    """The judge's calls and tokens (cached and reasoning as its provider reports them) and its cost, per run."""
    module = files["dir"] / "usage_judge_mod.py"
    module.write_text(
        "from smolagents import ChatMessage, MessageRole\n"
        "from smolagents.monitoring import TokenUsage\n"
        "class Judge:\n"
        "    model_id = 'usage-judge'\n"
        "    def generate(self, messages, **kwargs):\n"
        "        raw = {'usage': {'prompt_tokens_details': {'cached_tokens': 300},\n"
        "                         'completion_tokens_details': {'reasoning_tokens': 12}}}\n"
        '        verdict = \'{"reasoning": "r", "verdict": "incorrect"}\'\n'
        "        return ChatMessage(role=MessageRole.ASSISTANT, content=verdict,\n"
        "                           raw=raw, token_usage=TokenUsage(input_tokens=900, output_tokens=40))\n"
        "JUDGE = Judge()\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(files["dir"]))
    args = [files["b"], "--gold", files["gold"], "--mode", "judge", "--judge", "py:usage_judge_mod:JUDGE"]
    assert run(evaluate_cmd, *args, "--json") == 0
    used = json.loads(capsys.readouterr().out)["judge_usage"]
    # one judged item (dev/0; dev/1 and dev/2 match exactly): one call, 900 in (300 cached), 40 out (12 reasoning)
    assert {
        k: used[k] for k in ("calls", "input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")
    } == {
        "calls": 1,
        "input_tokens": 900,
        "cached_input_tokens": 300,
        "output_tokens": 40,
        "reasoning_tokens": 12,
    }
    assert used["model"] == "py:usage_judge_mod:JUDGE" and used["cache_hits"] == 0 and used["usd"] is None
    assert used["usd_reason"].startswith("no price for model py:usage_judge_mod:JUDGE in built-in prices.yaml")
    assert run(evaluate_cmd, *args) == 0  # again: the verdict comes from the cache, no call, nothing spent
    text = capsys.readouterr().out
    assert "judge py:usage_judge_mod:JUDGE: 0 calls, 0 in, 0 out, 1 cached verdict(s), $0.0000" in text
    assert run(evaluate_cmd, files["b"], "--gold", files["gold"], "--json") == 0
    assert "judge_usage" not in json.loads(capsys.readouterr().out)  # ANLS mode: no judge, no section

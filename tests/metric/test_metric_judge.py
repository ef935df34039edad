"""Judge mode with scripted fake models: short-cuts, caching, retries, unscored, concurrency, bias correction."""

from __future__ import annotations

import doctest
import json
import threading
import time

import pytest

from madqa.metric import judge as judge_module
from madqa.metric.inputs import parse_references, parse_results_text
from madqa.metric.judge import Judge, JudgeRequest, build_prompt, cache_key, parse_verdict
from madqa.metric.report import ReportOptions, evaluate_predictions
from madqa.metric.schema import Calibration


class Scripted:
    """Answers with a verdict chosen by the predicted answer found in the prompt; counts calls."""

    def __init__(self, table: dict[str, str], delay: float = 0.0):
        self.table = table
        self.calls = 0
        self.delay = delay
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()
        self.__name__ = "scripted-judge"

    def __call__(self, prompt: str) -> str:
        with self.lock:
            self.calls += 1
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.delay:
                time.sleep(self.delay)
            predicted = prompt.split("Predicted answer (a list of strings): ")[1].splitlines()[0]
            verdict = self.table.get(json.loads(predicted)[0], "incorrect")
            return f'Some thinking first. {{"reasoning": "scripted", "verdict": "{verdict}"}}'
        finally:
            with self.lock:
                self.active -= 1


def gold(qid, question, variants, document, page):
    return {
        "id": qid,
        "question": question,
        "answer_variants": variants,
        "evidence": [{"document": document, "page": page}],
    }


GOLD = parse_references(
    [
        gold("q0", "Total revenue?", [["$1.2M"], ["1.2 million dollars"]], "a.pdf", 1),
        gold("q1", "Board members?", [["Ann", "Bob"]], "b.pdf", 2),
        gold("q2", "Fee?", [["$50 million"]], "c.pdf", 3),
        gold("q3", "City?", [["Paris"]], "d.pdf", 4),
        gold("q4", "Year?", [["2019"]], "e.pdf", 5),
        gold("q5", "Name?", [["Zed"]], "f.pdf", 6),
    ],
    "gold",
)

LINES = [
    {"id": "q0", "answer": ["$1.2m"], "steps": 1},  # ANLS* = 1 -> correct without a call
    {"id": "q1", "answer": ["Ann, Bob"], "steps": 2},  # judged partial
    {"id": "q2", "answer": ["50"], "steps": 3},  # judged incorrect (missing scale)
    {"id": "q3", "answer": [], "steps": 4},  # empty -> incorrect without a call
    {"id": "q4", "answer": ["x" * 2001], "steps": 5},  # too long -> incorrect without a call
    {"id": "q5", "answer": ["Zedd the name"], "steps": 6},  # judged correct
]
TABLE = {"Ann, Bob": "partial", "50": "incorrect", "Zedd the name": "correct"}
JUDGE_MODE = ReportOptions(mode="judge")


def predictions():
    return parse_results_text("\n".join(json.dumps(x) for x in LINES), "r.jsonl")


def test_judge_mode_scores_shortcuts_cache_and_correction(tmp_path):
    """The paper's judge (by its model id, whatever the route) gets the paper's correction."""
    fake = Scripted(TABLE)
    cache = tmp_path / "cache.jsonl"
    paper = "litellm:gemini/gemini-2.5-flash"
    report = evaluate_predictions(predictions(), GOLD, JUDGE_MODE, judge=Judge(fake, paper, cache))
    assert fake.calls == 3 and report["judge_calls"] == 3
    assert report["score_sources"] == {"empty": 1, "exact": 1, "judge": 3, "too_long": 1}
    assert report["accuracy_raw"] == pytest.approx((1 + 0.5 + 0 + 0 + 0 + 1) / 6)
    assert report["accuracy"] == pytest.approx(report["accuracy_raw"] / 0.98)  # Rogan–Gladen, q0 = 1, q1 = .98
    assert report["n_partial"] == 1 and report["unscored"] == 0
    assert report["calibration"]["q1"] == 0.98 and report["calibration"]["source"] == "paper"
    assert report["calibration"]["corrected"] and report["calibration"]["judge"] == paper
    # binary analyses: partial counts as correct (score >= 0.5)
    assert report["errors"]["n_incorrect"] == 3
    # second run: every verdict comes from the cache or a short-cut
    again_fake = Scripted(TABLE)
    again = evaluate_predictions(predictions(), GOLD, JUDGE_MODE, judge=Judge(again_fake, paper, cache))
    assert again_fake.calls == 0 and again["judge_calls"] == 0
    assert again["accuracy"] == report["accuracy"]
    # another judge model (or prompt version) is another cache key
    other = Scripted(TABLE)
    evaluate_predictions(predictions(), GOLD, JUDGE_MODE, judge=Judge(other, "other-model", cache))
    assert other.calls == 3


def test_another_judge_is_reported_raw_and_says_why():
    """The paper's q0/q1 are its judge's error rates: any other judge gets no correction unless given its own."""
    report = evaluate_predictions(predictions(), GOLD, JUDGE_MODE, judge=Judge(Scripted(TABLE), "openai:smollm2"))
    raw = (1 + 0.5 + 0 + 0 + 0 + 1) / 6
    assert report["accuracy_raw"] == pytest.approx(raw) and report["accuracy"] == pytest.approx(raw)
    assert report["accuracy_ci"][0] < raw < report["accuracy_ci"][1]  # anls mode's interval: no calibration error
    cal = report["calibration"]
    assert cal["corrected"] is False and cal["source"] is None and cal["q1"] is None
    assert cal["note"].startswith("raw: no calibration for judge openai:smollm2")
    # a look-alike of the paper's judge is another judge
    lite = evaluate_predictions(predictions(), GOLD, JUDGE_MODE, judge=Judge(Scripted(TABLE), "gemini-2.5-flash-lite"))
    assert lite["accuracy"] == pytest.approx(raw) and not lite["calibration"]["corrected"]
    # the judge's own calibration (madqa calibrate's file) is used whatever the judge
    own = Calibration(0.9, 0.9, 50, 50, source="smollm2_calibration.json")
    given = ReportOptions(mode="judge", calibration=own)
    corrected = evaluate_predictions(predictions(), GOLD, given, judge=Judge(Scripted(TABLE), "openai:smollm2"))
    assert corrected["accuracy"] == pytest.approx((raw + 0.9 - 1) / 0.8)
    assert corrected["calibration"]["source"] == "smollm2_calibration.json" and corrected["calibration"]["corrected"]


def test_prompt_version_is_part_of_the_key(tmp_path, monkeypatch):
    cache = tmp_path / "cache.jsonl"
    evaluate_predictions(predictions(), GOLD, JUDGE_MODE, judge=Judge(Scripted(TABLE), "m", cache))
    monkeypatch.setattr(judge_module, "PROMPT_VERSION", "madqa-judge-test")
    fake = Scripted(TABLE)
    evaluate_predictions(predictions(), GOLD, JUDGE_MODE, judge=Judge(fake, "m", cache))
    assert fake.calls == 3
    k1 = cache_key("q", ["a"], [["a"]], "m")
    assert k1 != cache_key("q", ["a"], [["b"]], "m") and k1 != cache_key("q", ["b"], [["a"]], "m")


def test_retries_with_backoff_then_success():
    attempts = []
    waits: list[float] = []

    def flaky(prompt: str) -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise TimeoutError("rate limited")
        return '{"verdict": "correct", "reasoning": "ok"}'

    j = Judge(flaky, "flaky", None, retries=3, backoff=0.5, sleep=waits.append)
    out = j([JudgeRequest("Q?", ("a b",), (("a c",),), 0.3)])
    assert out[0].verdict == "correct" and len(attempts) == 3
    assert waits == [0.5, 1.0]  # exponential backoff


def test_failures_become_unscored_never_zero(tmp_path):
    def broken(prompt: str) -> str:
        raise ConnectionError("down")

    waits: list[float] = []
    cache = tmp_path / "c.jsonl"
    broken_judge = Judge(broken, "b", cache, retries=2, backoff=1, sleep=waits.append)
    report = evaluate_predictions(predictions(), GOLD, JUDGE_MODE, judge=broken_judge)
    assert report["unscored"] == 3 and report["n_scored"] == 3
    assert report["score_sources"]["unscored"] == 3
    # accuracy over the scored items only: exact (1), empty (0), too long (0)
    assert report["accuracy_raw"] == pytest.approx(1 / 3)
    assert waits == [1, 2] * 3
    assert not cache.exists()  # failures are not cached: a re-run retries them
    assert report["errors"]["n_incorrect"] == 2  # unscored items have no error category


def test_a_failure_the_models_retry_policy_gave_up_on_is_not_retried_again():
    """madqa's API models retry transient failures themselves and mark what they gave up on (``retries_spent``):
    the judge's own loop must not multiply those attempts (3 model retries x 4 judge attempts = 16 calls)."""
    calls: list[int] = []
    waits: list[float] = []

    def rate_limited(prompt: str) -> str:
        calls.append(1)
        exc = ConnectionError("429 Too Many Requests")
        exc.retries_spent = 3  # type: ignore[attr-defined]
        raise exc

    out = Judge(rate_limited, "x", None, retries=3, sleep=waits.append)([JudgeRequest("Q", ("v",), (("w",),), 0.0)])
    assert out[0].verdict == "unscored" and "429" in (out[0].error or "")
    assert len(calls) == 1 and waits == []


def test_unparsable_replies_are_retried_then_unscored():
    replies = iter(["I think it is right", '{"verdict": "maybe"}', '{"verdict": "Incorrect"}'])
    j = Judge(lambda prompt: next(replies), "x", None, retries=2, sleep=lambda s: None)
    assert j([JudgeRequest("Q", ("v",), (("w",),), 0.0)])[0].verdict == "incorrect"
    j2 = Judge(lambda prompt: "no verdict here", "x", None, retries=1, sleep=lambda s: None)
    out = j2([JudgeRequest("Q", ("v",), (("w",),), 0.0)])[0]
    assert (out.verdict, out.error) == ("unscored", "reply without a valid verdict")


def test_bounded_concurrency():
    fake = Scripted({}, delay=0.02)
    requests = [JudgeRequest(f"Q{i}", (f"ans {i}",), (("gold",),), 0.0) for i in range(12)]
    out = Judge(fake, "c", None, workers=3)(requests)
    assert len(out) == 12 and all(o.verdict == "incorrect" for o in out)
    assert 1 < fake.max_active <= 3


def test_smolagents_like_model_object():
    class Message:
        def __init__(self, text):
            self.content = [{"type": "text", "text": text}]

    class FakeModel:
        model_id = "fake/model-1"

        def __init__(self):
            self.seen = []

        def generate(self, messages, response_format=None):
            self.seen.append((messages, response_format))
            return Message('{"reasoning": "r", "verdict": "partial"}')

    class NoSchemaModel(FakeModel):
        def generate(self, messages, response_format=None):
            if response_format is not None:
                raise ValueError("response_format not supported")
            return super().generate(messages)

    model = FakeModel()
    j = Judge(model)
    assert j.model_name == "fake/model-1"
    assert j([JudgeRequest("Q", ("v",), (("w",),), 0.0)])[0].verdict == "partial"
    messages, fmt = model.seen[0]
    assert messages[0]["role"] == "user" and fmt["json_schema"]["schema"]["required"] == ["reasoning", "verdict"]
    plain = NoSchemaModel()
    out = Judge(plain, workers=1)([JudgeRequest(f"Q{i}", ("v",), (("w",),), 0.0) for i in range(3)])
    assert [o.verdict for o in out] == ["partial"] * 3
    assert [fmt for _, fmt in plain.seen] == [None, None, None]  # fell back once, then stayed plain


def test_prompt_is_ours_and_covers_the_five_checks():
    prompt = build_prompt("How much?", ["50"], [["$50 million"], ["50M USD"]])
    assert '["50"]' in prompt and '[["$50 million"], ["50M USD"]]' in prompt
    for word in ("Refusal", "Content", "Critical errors", "Format", "Length", '"verdict"'):
        assert word in prompt


def test_parse_verdict_variants():
    assert parse_verdict('{"verdict": "correct"} then {"verdict": "incorrect"}') == "incorrect"
    assert parse_verdict('{"reasoning": "x"}') is None
    assert parse_verdict({"verdict": "PARTIAL"}) == "partial"
    assert parse_verdict(None) is None
    assert parse_verdict('{"reasoning": "a {nested} brace", "verdict": "partial"}') == "partial"
    assert parse_verdict('```json\n{"verdict": "incorrect", "reasoning": "x"}\n```') == "incorrect"


def test_judge_mode_requires_a_judge():
    with pytest.raises(ValueError, match="judge mode needs a judge"):
        evaluate_predictions(predictions(), GOLD, JUDGE_MODE)


def test_doctests():
    assert doctest.testmod(judge_module).failed == 0

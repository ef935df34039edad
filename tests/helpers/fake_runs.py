"""The scripted models that runs in tests answer with, by ``py:`` spec (also in subprocesses and Ray workers,
which find ``helpers`` on ``PYTHONPATH``): :data:`FAKE` for the search agent, :data:`FAKE_REPL` for the code agent."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from helpers.fakes import ScriptedModel, code, search_then_cite

FAKE = "py:helpers.fake_runs:fake_model"
FAKE_REPL = "py:helpers.fake_runs:fake_repl_model"
FAKE_SEEDED = "py:helpers.fake_runs:seeded_fake_model"


def fake_reply(text: str, tools: list[str]) -> Any:
    """One fixed search, then an answer citing the first page shown; ``MADQA_FAKE_DELAY`` (seconds) slows every
    call (a file named by ``MADQA_FAKE_DELAY_FILE``, once written, overrides it: a test slows the calls that start
    after it, so that waiting for them and not waiting differ by far more than a loaded machine's noise), and a
    question containing ``MADQA_FAKE_FAIL`` makes the call raise. With ``MADQA_FAKE_CALLS_FILE``, each call
    appends its delay to that file as it starts: a test waits for a slowed call to be in flight (not for a time)."""
    later = Path(os.environ.get("MADQA_FAKE_DELAY_FILE", "/nonexistent"))
    delay = later.read_text() if later.is_file() else os.environ.get("MADQA_FAKE_DELAY", "0")
    if calls := os.environ.get("MADQA_FAKE_CALLS_FILE"):
        with open(calls, "a", encoding="utf-8") as log:  # one short write per call: whole lines
            log.write(f"{float(delay)}\n")
    time.sleep(float(delay))
    question = re.search(r"Question: (.*)", text).group(1)
    fail = os.environ.get("MADQA_FAKE_FAIL")
    if fail and fail in question:
        raise RuntimeError("provider exploded")
    return search_then_cite("17.85", "riverton OR invoice OR menu")(text, tools)


def fake_model(**_: Any) -> ScriptedModel:
    """The stateless fake of ``madqa run`` tests (:data:`FAKE`)."""
    return ScriptedModel([fake_reply], text_only=True, usage=lambda text, n: (len(text) // 4, 12), model_id="fake")


def seeded_fake_model(seed: int = 0, **_: Any) -> ScriptedModel:
    """A fake whose correctness depends on its ``seed`` (:data:`FAKE_SEEDED`, for ``madqa run --repeats``): on the
    dev question of index ``i`` (split order) it answers the gold's first variant when ``seed > i``, else a wrong
    answer; one search first, as :data:`FAKE`. So repeats with seeds 0, 1, 2 over the first three questions get
    0, 1 and 2 of them right. ``MADQA_FAKE_CALLS_FILE`` logs each call's seed; ``MADQA_FAKE_DELAY`` (seconds)
    slows every call."""
    from madqa.loading_script.load import load_gold

    gold = {r["question"]: (i, r["answer_variants"][0][0]) for i, r in enumerate(load_gold("dev"))}

    def reply(text: str, tools: list[str]) -> Any:
        if calls := os.environ.get("MADQA_FAKE_CALLS_FILE"):
            with open(calls, "a", encoding="utf-8") as log:
                log.write(f"{seed}\n")
        time.sleep(float(os.environ.get("MADQA_FAKE_DELAY", "0")))
        question = re.search(r"Question: (.*)", text).group(1)
        index, right = next(v for q, v in gold.items() if q.startswith(question) or question.startswith(q))
        answer = right if seed > index else "no such answer"
        return search_then_cite(answer, "riverton OR invoice OR menu")(text, tools)

    return ScriptedModel([reply], text_only=True, usage=(100, 10), model_id="fake-seeded")


def fake_repl_model(**_: Any) -> ScriptedModel:
    """Root model of the code agent for runner tests: one sub-call on the first page, then a structured answer
    citing it (usage 100/10 per call)."""

    def reply(text: str, tools: list[str]) -> str:
        if "Observation:" not in text:
            return code("d = documents[0]\nprint(d, llm_query(pages[d][0][:200]))")
        return code("final_answer(answer=['17.85'], citations=[{'document': d, 'page': 1}])")

    return ScriptedModel([reply], text_only=True, usage=(100, 10))

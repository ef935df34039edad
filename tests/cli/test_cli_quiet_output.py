"""Quiet, honest output (issue 41, item 6): no library INFO lines on the console, a run bar that shows work from
the first second with the log lines above it, and the Kuiper row of `madqa evaluate` as it should read."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from helpers.agent_cli import madqa, madqa_env
from helpers.fake_runs import fake_reply
from helpers.fakes import ScriptedModel

HERE = Path(__file__).parent
CHATTY = "py:test_cli_quiet_output:chatty_model"
LIBRARY_LINE = "HTTP Request: POST http://127.0.0.1/v1/chat/completions"


def chatty_model(**_: Any) -> ScriptedModel:
    """The fake search model, logging on every call what httpx logs at INFO on every request to a model server."""

    def reply(text: str, tools: list[str]) -> Any:
        logging.getLogger("httpx").info("%s %s", LIBRARY_LINE, '"HTTP/1.1 200 OK"')
        return fake_reply(text, tools)

    return ScriptedModel([reply], text_only=True, usage=(10, 2), model_id="chatty")


def _segments(stderr: str) -> list[str]:
    """What the terminal showed, one bar redraw or log line per item (tqdm redraws with ``\\r``)."""
    return [part for line in stderr.split("\n") for part in line.split("\r") if part.strip()]


def test_library_info_lines_stay_off_the_console_unless_verbose(layout, tmp_path: Path) -> None:
    env = madqa_env(HERE)
    args = ["run", "--model", CHATTY, "--limit", "1", "--no-progress"]
    quiet = madqa([*args, "-o", str(tmp_path / "a.jsonl")], env)
    assert quiet.returncode == 0, quiet.stderr
    assert LIBRARY_LINE not in quiet.stderr and "score it with:" in quiet.stderr  # the project's own INFO stays
    verbose = madqa(["-v", *args, "-o", str(tmp_path / "b.jsonl")], env)
    assert verbose.returncode == 0 and f"INFO httpx: {LIBRARY_LINE}" in verbose.stderr  # the filter hid it


def test_the_run_bar_shows_work_from_the_first_second_and_logs_go_above_it(layout, tmp_path: Path) -> None:
    env = madqa_env(HERE, MADQA_FAKE_DELAY="1.5")  # a first question of several seconds, as a local model's
    done = madqa(["run", "--model", CHATTY, "--limit", "2", "-o", str(tmp_path / "r.jsonl")], env)
    assert done.returncode == 0, done.stderr
    shown = _segments(done.stderr)
    bars = [s for s in shown if s.startswith("madqa run:")]
    waiting = [s for s in bars if re.search(r" 0/2 \[00:0[1-9]", s)]  # no question done, the clock moving
    assert waiting and all("status=" in s for s in waiting), bars[:5]
    assert any("status=preparing the agent" in s or "status=answering" in s for s in bars if " 0/2 [00:00" in s)
    logs = [s for s in shown if re.search(r"(INFO|WARNING|ERROR) madqa", s)]
    assert logs and all(re.match(r"(INFO|WARNING|ERROR) ", s) for s in logs)  # never in the middle of a bar
    assert LIBRARY_LINE not in done.stderr


def test_the_kuiper_row_reads_undefined_without_effort_and_whole_with_it(layout, tmp_path: Path) -> None:
    from madqa.loading_script.load import load_gold

    gold = load_gold("dev")
    plain = tmp_path / "plain.jsonl"  # a hand-written submission: no steps, no search_history
    plain.write_text(
        "".join(
            json.dumps({"id": g["id"], "question": g["question"], "answer": ["x"], "citations": []}) + "\n"
            for g in gold[:3]
        )
    )
    done = madqa(["evaluate", str(plain)], madqa_env(HERE))
    assert done.returncode == 0, done.stderr
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("Kuiper")]
    assert row == (
        f"Kuiper              —  undefined: no item has an effort count (steps or search_history); "
        f"{len(gold)} items without effort"
    )
    with_effort = tmp_path / "steps.jsonl"
    with_effort.write_text(
        "".join(
            json.dumps({**json.loads(x), "steps": i + 1}) + "\n" for i, x in enumerate(plain.read_text().splitlines())
        )
    )
    done = madqa(["evaluate", str(with_effort)], madqa_env(HERE))
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("Kuiper")]
    assert re.fullmatch(
        rf"Kuiper +\d\.\d\d  95% CI \[\d\.\d\d, \d\.\d\d\]; K/N \d\.\d{{4}} \(block order, 3 items, "
        rf"{len(gold) - 3} without effort\)",
        row,
    ), row

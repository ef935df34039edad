"""`madqa run` says it is working from its first second (issue 44, item 23): a status line on stderr as the run
starts, before the gold, the corpus, the search index and the model are loaded, and one line per slow stage; stdout
stays clean (empty, or the one JSON document of ``--json``), with or without the progress bar."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.agent_cli import madqa, madqa_env
from helpers.fake_runs import FAKE

HERE = Path(__file__).parent
#: The stages a bm25 run goes through, in the order the user must see them.
STAGES = (
    "starting: the bm25 agent",
    "loading the dev split's questions",
    "preparing the bm25 agent",
    "loading the corpus",
)


def _lines(stderr: str) -> list[str]:
    """What the terminal showed, one log line or bar redraw per item (tqdm redraws with ``\\r``)."""
    return [part for line in stderr.split("\n") for part in line.split("\r") if part.strip()]


def _first_index(lines: list[str], text: str) -> int:
    found = [i for i, line in enumerate(lines) if text in line]
    assert found, (text, lines)
    return found[0]


def test_the_first_stderr_line_comes_before_anything_is_loaded_and_json_keeps_stdout_clean(
    layout, tmp_path: Path
) -> None:
    env = madqa_env(HERE)
    done = madqa(
        ["run", "--model", FAKE, "--limit", "2", "--no-progress", "--json", "-o", str(tmp_path / "r.jsonl")], env
    )
    assert done.returncode == 0, done.stderr
    lines = _lines(done.stderr)
    assert lines[0].startswith("INFO madqa.cli.run_cmd: starting: the bm25 agent with model"), lines
    assert "first 2 questions of the dev split" in lines[0] and str(tmp_path / "r.jsonl") in lines[0]
    order = [_first_index(lines, stage) for stage in STAGES]
    assert order == sorted(order), (order, lines)
    assert order[-1] < _first_index(lines, "answering 2 question(s)")  # the corpus came before the first answer
    assert json.loads(done.stdout)["written"] == 2 and len(done.stdout.splitlines()) == 1  # nothing else on stdout


def test_with_the_bar_the_status_line_comes_first_and_stdout_stays_empty(layout, tmp_path: Path) -> None:
    done = madqa(["run", "--model", FAKE, "--limit", "1", "-o", str(tmp_path / "r.jsonl")], madqa_env(HERE))
    assert done.returncode == 0, done.stderr
    lines = _lines(done.stderr)
    assert "starting: the bm25 agent" in lines[0], lines
    assert _first_index(lines, "loading the corpus") > _first_index(lines, "madqa run:")  # the bar shows by then
    assert done.stdout == ""

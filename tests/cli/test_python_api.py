"""docs/python-api.md runs: every ```python block of the page, in order, in one folder, on the built sample.

The page documents the plain-argument functions behind `madqa evaluate`, `madqa compare` and `madqa sweep`; this
test keeps its examples from going stale, and checks that they return what the commands print with --json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from madqa.cli import main

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_page_has_an_example_per_function() -> None:
    code = "\n".join(blocks())
    for name in ("evaluate(", "compare(", "sweep("):
        assert name in code, name


@pytest.mark.slow  # runs a two-question sweep with the bundled local model
def test_every_example_runs_and_matches_the_command(layout, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "python_api_doc"}
    for number, code in enumerate(blocks(), 1):
        try:
            exec(compile(code, f"{PAGE.name} block {number}", "exec"), namespace)
        except Exception as exc:  # name the block that broke
            pytest.fail(f"docs/python-api.md block {number}: {type(exc).__name__}: {exc}")
    capsys.readouterr()
    assert main(["evaluate", "perfect.jsonl", "--split", "dev", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(namespace["report"]))
    argv = ["compare", "perfect.jsonl", "half.jsonl", "--names", "perfect", "half", "--resamples", "200", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(namespace["result"]))
    (row,) = namespace["summary"]["configurations"]
    assert row["error"] is None and row["written"] == 2 and Path(row["output"]).is_file()

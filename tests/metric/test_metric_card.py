"""The metric card's code runs as written: every ```python block of ``metric/README.md``, offline, in a fresh
interpreter and an empty folder, after what the card says comes first (``madqa setup``: the metric installed into
``HF_HOME``). Each ``# prints: …`` comment of a block is the line the block must print there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from madqa.metric import install
from madqa.metric.install import install_offline_module

CARD = Path(install.__file__).resolve().parent / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)
PRINTS = re.compile(r"^# prints: (.*)$", re.M)


def card_blocks(text: str) -> list[str]:
    """The card's Python blocks, in order (other fenced blocks, such as shell commands, are not Python)."""
    return BLOCK.findall(text)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(card_blocks(CARD.read_text(encoding="utf-8")))))
def test_every_python_block_of_the_card_runs_as_written(index: int, tmp_path: Path) -> None:
    block = card_blocks(CARD.read_text(encoding="utf-8"))[index]
    hf_home = tmp_path / "hf"
    install_offline_module(hf_home)  # what `madqa setup` does, the card's stated precondition
    workdir = tmp_path / "empty"
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHONPATH"))}
    env.update(HF_HOME=str(hf_home), HF_EVALUATE_OFFLINE="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-c", block], cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, f"block {index} of {CARD} fails as written:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    expected = PRINTS.findall(block)
    if expected:  # what the card says the block prints is what it prints
        assert proc.stdout.splitlines() == expected, proc.stderr[-3000:]


def test_the_card_has_python_blocks() -> None:
    """The parametrised test above would pass with no block at all."""
    assert len(card_blocks(CARD.read_text(encoding="utf-8"))) >= 1

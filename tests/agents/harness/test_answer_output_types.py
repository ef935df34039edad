"""smolagents' output typing is replaced when an agent's final-answer tool is built, never at import (issue 47):
importing a module changes no library, and a built agent types its dict answer without importing torch."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import smolagents.agents, smolagents.tools
original = smolagents.agents.handle_agent_output_types
from madqa.agents.harness import answer
assert smolagents.agents.handle_agent_output_types is original, "importing answer patched smolagents"
assert smolagents.tools.handle_agent_output_types is original
tool = answer.FinalAnswerTool()
assert smolagents.agents.handle_agent_output_types is answer.plain_output_types
assert smolagents.tools.handle_agent_output_types is answer.plain_output_types
out = smolagents.agents.handle_agent_output_types({"answer": ["x"], "citations": []})
assert out == {"answer": ["x"], "citations": []}
assert smolagents.agents.handle_agent_output_types("text").to_string() == "text"  # strings keep smolagents' type
print("torch" in sys.modules)
"""


def test_the_final_answer_tool_installs_plain_typing_and_import_does_not() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False", "typing the dict answer imported torch"

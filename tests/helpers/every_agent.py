"""One scripted model that every model-driven agent can run with (:data:`FAKE_ANY`), and that can kill its own
``madqa run`` process (SIGKILL) at a chosen point, for the resume tests of every agent; and those tests' steps.

The agent is told apart by what a call offers: the search agent's ``search_documents`` tool, static RAG's lone
``final_answer``, the shell agent's ``bash``, MDocAgent's role prompts (no tools), and else the code agent (no tools,
code replies). With ``MADQA_FAKE_KILL_AFTER=PATH:N`` in the environment, the first call made once ``PATH`` holds
``N`` complete lines kills the process: a kill in the middle of question N+1, at a point chosen by the test rather
than by timing luck.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers.fakes import MDOC_ROLE, ScriptedModel, code, mdoc_reply, search_then_cite

FAKE_ANY = "py:helpers.every_agent:every_agent_model"
SHELL_HIT = re.compile(r"--- (\S+/page_\d+\.txt) \(")


def kill_if_due() -> None:
    """SIGKILL this process once the results file named by ``MADQA_FAKE_KILL_AFTER`` holds its ``N`` lines."""
    spec = os.environ.get("MADQA_FAKE_KILL_AFTER")
    if not spec:
        return
    path, _, count = spec.rpartition(":")
    results = Path(path)
    if results.is_file() and results.read_bytes().count(b"\n") >= int(count):
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


def every_agent_reply(text: str, tools: list[str]) -> Any:
    """One search (or retrieval) then an answer citing the first page shown, in the form the agent asks for."""
    kill_if_due()
    if "bash" in tools:  # the shell agent: one search, then cite the first page file it listed
        hits = SHELL_HIT.findall(text)
        if not hits:
            return "search", {"query": "invoice total"}
        return "final_answer", {"answer": ["17.85"], "citations": [{"document": hits[0], "page": 1}]}
    if tools:  # the search agent, or static RAG (final_answer only)
        return search_then_cite("17.85", "riverton OR invoice OR menu")(text, tools)
    role = MDOC_ROLE.search(text)
    if role:
        return mdoc_reply(role.group(1), text)
    if "llm_query" not in text:  # a sub-call of the code agent: plain text
        return "a page about invoices"
    if "Observation:" not in text:
        return code("d = documents[0]\nprint(d, llm_query(pages[d][0][:200]))")
    return code("final_answer(answer=['17.85'], citations=[{'document': d, 'page': 1}])")


def every_agent_model(**_: Any) -> ScriptedModel:
    """The model of :data:`FAKE_ANY` (text-only, stateless: one instance serves every question and slot)."""
    return ScriptedModel([every_agent_reply], text_only=True, usage=(50, 5), model_id="fake-any")


def madqa_until_exit(args: list[str], env: dict[str, str], log: Path) -> tuple[int, str]:
    """``madqa ARGS`` to its end; output to a file (a killed run's worker may keep a pipe open after it)."""
    with open(log, "w", encoding="utf-8") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "madqa.cli", *args], env=env, stdout=sink, stderr=sink)
        code = proc.wait(timeout=600)
    return code, log.read_text(encoding="utf-8")


def check_resumed(before: list[dict[str, Any]], after: list[dict[str, Any]], first_ids: list[str]) -> None:
    """The lines of the killed run kept as they were; every question of the limit exactly once, without error."""
    assert len(before) == 1, before
    assert after[0] == before[0]
    assert [r["id"] for r in after] == first_ids, [r["id"] for r in after]
    assert all(r["error"] is None for r in after), [r["error"] for r in after]
    assert all(r["config"] == after[0]["config"] for r in after)


def dev_ids(limit: int) -> list[str]:
    """The ids of the first ``limit`` dev questions, in split order (what a run with ``--limit`` answers)."""
    from madqa.loading_script.load import load_questions

    return [str(q["id"]) for q in load_questions("dev")[:limit]]

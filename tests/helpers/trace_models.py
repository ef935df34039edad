"""Scripted models that plant a secret and local paths in what a run records, for the trace export's redaction tests
(``madqa run --model`` :data:`PLANTED` for bm25, rag, mdoc and shell; :data:`PLANTED_REPL` for repl).

Each run writes :func:`plant` into a results line: in a search query (arguments, observation, search history), a
shell command, an mdoc agent's reply, the rag answer, the repl agent's printed output. The plant holds a key-shaped
string, the value of ``OPENAI_API_KEY`` (set to :data:`ENV_SECRET` by the test: only the environment rule can
recognise it) and paths under ``MADQA_HOME`` and ``/tmp``.
"""

from __future__ import annotations

import os
from typing import Any

from helpers.fakes import MDOC_ROLE, ScriptedModel, code, mdoc_reply, shown_pages

PLANTED = "py:helpers.trace_models:planted_model"
PLANTED_REPL = "py:helpers.trace_models:planted_repl_model"
#: Shaped like an OpenAI key: the key rule must catch it.
PLANTED_KEY = "sk-proj-" + "Q7xPLANTEDk3y" * 3
#: An ordinary-looking value: only the rule for the environment's ``*_API_KEY`` values catches it.
ENV_SECRET = "correct-horse-battery-staple-42"
#: A folder no test creates, under ``/tmp``.
TMP_PLANT = "/tmp/planted-folder-of-alice/notes.txt"


def plant() -> str:
    """The planted text (read when the model is called: ``MADQA_HOME`` is the run's)."""
    return f"{PLANTED_KEY} {ENV_SECRET} {os.environ['MADQA_HOME']}/planted/notes.txt {TMP_PLANT}"


def _cite_first(text: str) -> list[dict[str, Any]]:
    return [{"document": d, "page": p} for d, p in shown_pages(text)[:1]]


def planted_reply(text: str, tools: list[str]) -> Any:
    """One reply per call, told from the prompt and the tool calls so far (stateless)."""
    role = MDOC_ROLE.search(text)
    if role and not tools:
        return mdoc_reply(role.group(1), text, note=f"; planted: {plant()}")
    calls = text.count("Calling tools:")
    search = next((t for t in ("search_documents", "search") if t in tools), None)
    if search and calls == 0:
        return search, {"query": f"water {plant()}"}
    if "bash" in tools and calls == 1:
        return "bash", {"command": f"ls {TMP_PLANT}"}
    answer = ["17.85"] if search else [f"17.85 ({plant()})"]
    return "final_answer", {"answer": answer, "citations": _cite_first(text)}


def planted_model(**_: Any) -> ScriptedModel:
    """The model of :data:`PLANTED`."""
    return ScriptedModel([planted_reply], text_only=True, usage=(50, 5), model_id="planted")


def planted_repl_model(**_: Any) -> ScriptedModel:
    """The model of :data:`PLANTED_REPL`: prints the plant, then answers citing the first document's first page."""

    def reply(text: str, tools: list[str]) -> str:
        if "Observation:" not in text:
            return code(f"d = documents[0]\nprint({plant()!r})")
        return code("final_answer(answer=['17.85'], citations=[{'document': d, 'page': 1}])")

    return ScriptedModel([reply], text_only=True, usage=(100, 10))

"""MDocAgent: text and image retrieval, then the general, critical, text, image and summarising agents, one model
call each, recorded as five steps; its lines are scored by ``madqa evaluate``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_cli import evaluate_json, madqa_env, prepare_agent, run_agent, run_agent_lines
from helpers.fakes import ScriptedModel

#: This file's folder: subprocesses import its model factories (``py:test_…``) by name.
HERE = Path(__file__).resolve().parent

FAKE = "py:test_agent_mdoc:five_agents"
ROLE_RX = re.compile(r"You are the (general|critical|text|image|summarising) agent")


def _reply(text: str, tools: list[str]) -> str:
    """Each agent's reply, told apart by its prompt; the summary cites the first page it names."""
    assert tools == []  # a pipeline of plain model calls, no tools
    role = ROLE_RX.search(text).group(1)
    if role == "critical":
        return json.dumps({"text": "CUE-TEXT", "image": "CUE-IMAGE"})
    if role == "summarising":
        first = re.search(r"Pages the agents saw: file (\S+), page (\d+)", text)
        cite = {"document": first.group(1), "page": int(first.group(2))}
        return "Final:\n" + json.dumps({"answer": ["no idea"], "citations": [cite]})
    return f"{role} answer"


def five_agents(**_: Any) -> ScriptedModel:
    """A text-only model replying as each of the five agents."""
    return ScriptedModel([_reply], text_only=True, model_id="fake-mdoc")


def vision_agents(**_: Any) -> ScriptedModel:
    """The same replies from a vision model (page images reach it as image URLs)."""
    return ScriptedModel([_reply], text_only=False, model_id="fake-mdoc-vision")


def test_mdoc_calls_the_five_agents_in_order_with_what_each_needs(layout) -> None:
    from madqa.loading_script.load import load_gold

    row = load_gold("dev")[0]
    prepared = prepare_agent("mdoc", model=FAKE, top_k=2, image_retriever="dense:wordllama")
    try:
        assert prepared.settings["max_steps"] == 5 and prepared.settings["observe"] == "text"
        assert prepared.settings["image_retriever"] == "dense:wordllama:256"
        line = prepared.answer(row)
        model = prepared._slots.get()
        prepared._slots.put(model)
        roles = [ROLE_RX.search(c["text"]).group(1) for c in model.calls]
        assert roles == ["general", "critical", "text", "image", "summarising"]
        text_side, image_side = line["search_history"]
        assert text_side["retriever"] == "text" and image_side["retriever"] == "image"
        expected = prepared.text_retriever.search(row["question"], k=2)
        assert text_side["results"] == [{"document": h.document, "page": h.page} for h in expected]
        expected = prepared.image_retriever.search(row["question"], k=2)
        assert image_side["results"] == [{"document": h.document, "page": h.page} for h in expected]
        calls = {r: c["text"] for r, c in zip(roles, model.calls, strict=True)}
        assert "general answer" in calls["critical"]  # the critical agent reviews the general answer
        assert "CUE-TEXT" in calls["text"] and "CUE-IMAGE" not in calls["text"]
        assert "CUE-IMAGE" in calls["image"] and "CUE-TEXT" not in calls["image"]
        for role in ("general", "text", "image"):
            assert f"{role} answer" in calls["summarising"]
        for page in image_side["results"]:  # the image agent reads the image side's pages
            assert f"file {page['document']}, page {page['page']}" in calls["image"]
        assert [t["tool_calls"][0]["name"] for t in line["trajectory"]] == [
            "general_agent",
            "critical_agent",
            "text_agent",
            "image_agent",
            "summarize_agent",
        ]
        assert line["trajectory"][-1]["final"] and line["steps"] == 5 and line["error"] is None
        assert line["usage"]["input_tokens"] == sum(100 * n for n in range(1, 6))
        assert line["citations"] == [text_side["results"][0]]
        events = list(prepared.stream(row["question"], row))
        assert [type(e).__name__ for e in events] == ["SearchEvent", "SearchEvent", "AnswerEvent"]
    finally:
        prepared.close()


def test_a_vision_model_sees_the_image_sides_pages_as_images(layout) -> None:
    from madqa.loading_script.load import load_gold

    row = load_gold("dev")[1]
    prepared = prepare_agent("mdoc", model="py:test_agent_mdoc:vision_agents", top_k=3, retriever="bm25")
    try:
        assert prepared.settings["observe"] == "image" and prepared.settings["image_retriever"] is None
        line = prepared.answer(row)
        model = prepared._slots.get()
        prepared._slots.put(model)
        images = [
            sum(
                1
                for m in c["messages"]
                for part in (m["content"] if isinstance(m["content"], list) else [])
                if part.get("type") == "image_url"
            )
            for c in model.calls
        ]
        n = line["search_history"][1]["count"]
        assert n == 3 and images == [n, n, 0, n, 0]  # general, critical and image agents see the renders
        assert line["search_history"][0]["results"] == line["search_history"][1]["results"]  # renders of text hits
        assert [t["images"] for t in line["trajectory"]] == images
    finally:
        prepared.close()


def test_a_summary_that_is_not_json_is_a_line_without_answer(layout) -> None:
    from madqa.loading_script.load import load_gold

    row = load_gold("dev")[0]
    prepared = prepare_agent("mdoc", model="py:test_agent_mdoc:rambler")
    try:
        line = prepared.answer(row)
        assert line["answer"] == [] and line["final_state"] == "no_answer" and "not JSON" in line["error"]
        assert line["steps"] == 5 and len(line["trajectory"]) == 5
    finally:
        prepared.close()


def rambler(**_: Any) -> ScriptedModel:
    """Replies in prose to every agent, the summary included."""
    return ScriptedModel(["I think it is somewhere in the pages."], text_only=True)


@pytest.mark.slow
def test_mdoc_runs_from_the_command_line_and_is_scored(layout, tmp_path: Path) -> None:
    out = tmp_path / "mdoc.jsonl"
    lines = run_agent_lines("mdoc", out, ["--model", FAKE, "--split", "dev", "--limit", "2"], madqa_env(HERE))
    assert len(lines) == 2 and all(line["agent"] == "mdoc" and line["error"] is None for line in lines)
    config = lines[0]["config"]
    assert config["top_k"] == 4 and config["retriever"] == "bm25" and config["image_retriever"] is None
    assert all(len(line["search_history"]) == 2 and len(line["trajectory"]) == 5 for line in lines)
    report = evaluate_json(out, madqa_env(HERE))
    assert report["n_predicted"] == 2 and report["page_f1"] is not None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--oracle"], "--oracle is for --agent bm25"),
        (["--top-k", "0"], "top-k must be at least 1"),
        (["--image-retriever", "nosuch:x"], "unknown retriever"),
    ],
)
def test_mdoc_refuses_what_it_cannot_run(layout, tmp_path: Path, args: list[str], message: str) -> None:
    done = run_agent("mdoc", tmp_path / "x.jsonl", ["--model", FAKE, "--limit", "1", *args], madqa_env(HERE))
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr

"""The inspect_ai task ``madqa/bm25`` with inspect's own mock model, and ``madqa import-inspect``.

One eval of three dev questions of the sample (the task by its registered name ``madqa/bm25``; a second one by file
path, with page images) runs with ``mockllm/model`` scripted per question: a search then the
gold answer citing the gold page (correct), a search then a wrong answer citing the first page found, and a refused
search, a second search and a malformed last-step answer (salvaged: ``forced``). Logs go to ``tmp_path``
(``INSPECT_LOG_DIR``) and every non-loopback connection is refused and recorded (there must be none): each scripted
output carries its token usage, since the mock model otherwise counts tokens with tiktoken, whose first use
downloads its vocabulary.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import ROOT
from helpers.socket_guard import guarded_socket_calls

pytest.importorskip("inspect_ai")

LIMIT, MAX_STEPS = 3, 3
PAGE = re.compile(r"--- 1\. file (\S+), page (\d+) ---")
TASK_FILE = ROOT / "agents" / "integrations" / "inspect_task" / "task.py"


def _usage(step: int) -> Any:
    from inspect_ai.model import ModelUsage

    return ModelUsage(input_tokens=100 * step, output_tokens=step + 6, total_tokens=107 * step + 6)


def scripted(gold: dict[str, dict[str, Any]], seen: list[tuple[str, int, list[str], str]]) -> Any:
    """The mock model's reply to each call: a plan per question (its position in the split), by step."""
    from inspect_ai.model import ModelOutput

    order = list(gold)

    def reply(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        question = next(m.text for m in messages if m.role == "user").removeprefix("Question: ").strip()
        row, plan = gold[question], order.index(question)
        step = sum(1 for m in messages if m.role == "assistant") + 1
        seen.append((row["id"], step, [t.name for t in tools], str(getattr(tool_choice, "name", tool_choice))))
        words = " OR ".join(w for w in re.findall(r"\w+", question) if len(w) > 3)
        call = ("search_documents", {"query": words})
        if plan == 0 and step == 2:
            cites = [{"document": e["document"], "page": e["page"]} for e in row["evidence"]]
            call = ("final_answer", {"answer": list(row["answer_variants"][0]), "citations": cites})
        elif plan == 1 and step == 2:
            first = PAGE.search(messages[-1].text)
            call = (
                "final_answer",
                {
                    "answer": ["certainly not this"],
                    "citations": [{"document": first.group(1), "page": int(first.group(2))}],
                },
            )
        elif plan == 2 and step == 1:
            call = ("search_documents", {"query": "*"})  # refused by the search limits: an error observation
        elif plan == 2 and step == MAX_STEPS:
            call = ("final_answer", {"answer": ["x"], "citations": [{"document": "a.pdf", "page": 0}]})  # page 0
        output = ModelOutput.for_tool_call("mockllm/model", call[0], call[1], content=f"step {step}")
        output.usage = _usage(step)
        return output

    return reply


@pytest.fixture(scope="module")
def offline_guard() -> Iterator[list[str]]:
    """Refuse (and record) every connection to a host other than loopback."""
    attempts: list[str] = []
    getaddrinfo, connect = guarded_socket_calls(lambda host, address: attempts.append(host))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket, "getaddrinfo", getaddrinfo)
        mp.setattr(socket.socket, "connect", connect)
        yield attempts


@pytest.fixture(scope="module")
def run(layout, tmp_path_factory: pytest.TempPathFactory, offline_guard: list[str]) -> dict[str, Any]:
    """One eval of the task (mock model), its log, the imported results file and the gold of its questions."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from madqa.cli import main
    from madqa.loading_script.load import load_gold

    root = tmp_path_factory.mktemp("inspect")
    rows = load_gold("dev")[:LIMIT]
    gold = {r["question"]: r for r in rows}
    seen: list[tuple[str, int, list[str], str]] = []
    with pytest.MonkeyPatch.context() as mp:
        # `python -m pytest` (make test) puts the repo root on sys.path, where the editable install's
        # madqa.egg-info (no direct_url.json) hides the installed distribution's metadata: inspect then sees no
        # installed package and registers the task as "bm25", not "madqa/bm25". Installed users never have it.
        mp.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
        mp.setenv("INSPECT_LOG_DIR", str(root / "logs"))
        mp.setenv("XDG_DATA_HOME", str(root / "data"))  # inspect's traces and caches
        mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
        model = get_model("mockllm/model", custom_outputs=scripted(gold, seen))
        # by its registered name, as `inspect eval madqa/bm25` finds it (pyproject's inspect_ai entry point)
        (log,) = inspect_eval(
            "madqa/bm25",
            task_args={"split": "dev", "limit": LIMIT, "max_steps": MAX_STEPS},
            model=model,
            display="none",
            max_samples=1,
        )
    assert offline_guard == [], offline_guard
    assert log.status == "success", log.error
    location = Path(log.location)
    assert location.is_relative_to(root / "logs"), location
    out = root / "results.jsonl"
    assert main(["import-inspect", str(location), "-o", str(out)]) == 0
    (root / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {
        "log": log,
        "location": location,
        "out": out,
        "gold": root / "gold.jsonl",
        "rows": rows,
        "seen": seen,
        "root": root,
    }


def _metrics(log: Any) -> dict[str, float]:
    return {f"{s.name}/{k}": m.value for s in log.results.scores for k, m in s.metrics.items()}


def test_the_task_runs_the_search_agent_protocol_on_the_sample(run) -> None:
    log, seen = run["log"], run["seen"]
    assert log.eval.task == "madqa/bm25" and log.eval.config.message_limit == 2 + 3 * MAX_STEPS
    samples = {s.id: s for s in log.samples}
    assert list(samples) == [r["id"] for r in run["rows"]]
    first = samples[run["rows"][0]["id"]]
    assert first.target == [" | ".join(v) for v in run["rows"][0]["answer_variants"]]
    assert first.metadata["evidence"] == run["rows"][0]["evidence"]
    assert first.messages[0].role == "system" and "search_documents" in first.messages[0].text
    # every step before the last offers both tools; the last one only final_answer, forced
    third = run["rows"][2]["id"]
    steps = [(step, tools, choice) for qid, step, tools, choice in seen if qid == third]
    assert steps == [
        (1, ["search_documents", "final_answer"], "auto"),
        (2, ["search_documents", "final_answer"], "auto"),
        (3, ["final_answer"], "final_answer"),
    ]
    assert [s.store["madqa_final_state"] for s in samples.values()] == ["answered", "answered", "forced"]
    refused = samples[third].store["madqa_search_history"][0]
    assert refused["query"] == "*" and refused["count"] == 0 and "too broad" in refused["error"]


def test_scorer_values_equal_madqa_evaluate_on_the_imported_file(run, capsys) -> None:
    from madqa.cli import main

    capsys.readouterr()
    assert main(["evaluate", str(run["out"]), "--gold", str(run["gold"]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    metrics = _metrics(run["log"])
    assert report["n"] == report["n_predicted"] == LIMIT
    assert report["accuracy"] == pytest.approx(1 / 3, abs=1e-9)  # one correct, one wrong, one forced wrong
    pairs = {
        "accuracy": "accuracy/mean",
        "anls": "anls/mean",
        "page_f1": "page_f1/mean",
        "doc_f1": "doc_f1/mean",
        "kuiper": "accuracy/madqa/kuiper",
    }
    for key, name in pairs.items():
        assert metrics[name] == pytest.approx(report[key], abs=1e-9), (key, metrics[name], report[key])
    for hop, summary in report["by_hop"].items():
        if summary["accuracy"] is not None:
            assert metrics[f"accuracy/madqa/by_hop_{hop}"] == pytest.approx(summary["accuracy"], abs=1e-9)
    assert 0 < report["page_f1"] < 1 and report["doc_f1"] > 0
    # per sample too: the scorer's value is the metric's score of that line
    scores = {s.id: s.scores["madqa_scorer"].value for s in run["log"].samples}
    assert main(["evaluate", str(run["out"]), "--gold", str(run["gold"]), "--json", "--per-item"]) == 0
    for item in json.loads(capsys.readouterr().out)["items"]:
        value = scores[item["id"]]
        assert (value["accuracy"], value["anls"], value["page_f1"], value["doc_f1"]) == pytest.approx(
            (item["score"], item["anls"], item["page_f1"], item["doc_f1"]), abs=1e-9
        )
    # and against the whole split: the other questions count as missing
    assert main(["evaluate", str(run["out"]), "--split", "dev", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["n_predicted"] == LIMIT and whole["missing"] == whole["n"] - LIMIT


def test_the_import_round_trips_every_field_we_use(run) -> None:
    from madqa.agents.corpus.search import open_index
    from madqa.agents.harness.record import as_prediction
    from madqa.loading_script.load import load_pages
    from madqa.loading_script.release import dataset_provenance

    lines = [json.loads(x) for x in run["out"].read_text(encoding="utf-8").splitlines()]
    samples = {s.id: s for s in run["log"].samples}
    index = open_index(load_pages(), progress=False)
    assert [line["id"] for line in lines] == list(samples)
    for line in lines:
        sample = samples[line["id"]]
        store = sample.store
        assert line["question"] == sample.input
        assert (line["answer"], line["citations"]) == (
            store["madqa_answer"]["answer"],
            store["madqa_answer"]["citations"],
        )
        assert line["search_history"] == store["madqa_search_history"]
        assert line["steps"] == len(line["search_history"]) == as_prediction(line).steps
        for search in line["search_history"]:
            if search["error"] is None:
                hits = index.search(search["query"], k=5)
                assert search["results"] == [{"document": h.document, "page": h.page} for h in hits]
                assert search["count"] == len(hits) > 0
        calls = [step for qid, step, _, _ in run["seen"] if qid == line["id"]]
        assert line["usage"] == {
            "input_tokens": sum(100 * s for s in calls),
            "output_tokens": sum(s + 6 for s in calls),
        }
        assert [t["input_tokens"] for t in line["trajectory"]] == [100 * s for s in calls]
        assert [t["tool_calls"][0]["name"] for t in line["trajectory"]] == [
            m.tool_calls[0].function for m in sample.messages if m.role == "assistant"
        ]
        assert line["model"] == "mockllm/model" and line["agent"] == "bm25"
        assert line["dataset"] == dataset_provenance("sample")
        assert line["config"]["split"] == "dev" and line["config"]["max_steps"] == MAX_STEPS
        assert line["config"]["top_k"] == 5 and line["config"]["harness"] == "inspect_ai"
        assert line["elapsed_s"] == round(sample.total_time, 3)
    first, second, third = lines
    assert first["citations"] == run["rows"][0]["evidence"] and first["final_state"] == "answered"
    assert second["citations"] == second["search_history"][0]["results"][:1]
    assert third["final_state"] == "forced" and third["answer"] == ["x"] and third["citations"] == []
    assert [t["final"] for t in third["trajectory"]] == [False, False, False]
    assert third["trajectory"][-1]["error"] and "page" in third["trajectory"][-1]["error"]
    assert all(line["error"] is None and line["error_kind"] is None for line in lines)


def test_bad_logs_are_clear_errors(run, tmp_path: Path, caplog) -> None:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, get_model
    from inspect_ai.solver import generate

    from madqa.cli import main

    out = tmp_path / "r.jsonl"
    garbage = tmp_path / "garbage.eval"
    garbage.write_bytes(b"not a zip")
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        ([str(tmp_path / "missing.eval")], "no such file"),
        ([str(garbage)], "not an inspect log"),
        ([str(empty)], "no inspect logs"),
        ([str(run["location"]), "--split", "train"], "not 'train'"),
        ([str(run["location"]), str(run["location"])], "import each once"),
    ]
    reply = ModelOutput.from_content("mockllm/model", "hello")
    reply.usage = _usage(1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
        (other,) = inspect_eval(
            Task(dataset=[Sample(input="hi", target="x")], solver=generate()),
            model=get_model("mockllm/model", custom_outputs=[reply]),
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    cases.append(([str(other.location)], "not of the MADQA inspect task"))
    for argv, message in cases:
        caplog.clear()
        assert main(["import-inspect", *argv, "-o", str(out)]) == 2, argv
        assert message in caplog.text, (argv, caplog.text)
        assert not out.exists()
    out.write_text("")
    assert main(["import-inspect", str(run["location"]), "-o", str(out)]) == 2 and "--overwrite" in caplog.text
    assert main(["import-inspect", str(run["location"].parent), "-o", str(out), "--overwrite"]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == LIMIT


def test_page_images_for_vision_models_and_no_answer_by_the_last_step(layout, tmp_path: Path, offline_guard) -> None:
    """``observe=image``: the search result pages reach the model as images; a model that never answers ends with
    ``no_answer`` (a ``model`` error), and its searches are kept."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, get_model

    from madqa.agents.integrations.inspect_task.lines import log_lines

    shown: list[int] = []

    def reply(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        tool_results = [m for m in messages if m.role == "tool"]
        if not tool_results:
            output = ModelOutput.for_tool_call("mockllm/model", "search_documents", {"query": "water OR report"})
        else:
            after = messages[messages.index(tool_results[-1]) + 1 :]  # inspect moves tool images to a user message
            parts = [p for m in after if not isinstance(m.content, str) for p in m.content]
            shown.append(sum(1 for p in parts if p.type == "image"))
            output = ModelOutput.from_content("mockllm/model", "I would rather not say.")  # no tool call
        output.usage = _usage(1)
        return output

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
        # by file path, as `inspect eval agents/integrations/inspect_task/task.py@bm25` runs it
        args = {"split": "dev", "limit": 1, "max_steps": 2, "top_k": 2, "observe": "image"}
        (log,) = inspect_eval(
            f"{TASK_FILE}@bm25",
            task_args=args,
            log_dir=str(tmp_path / "logs"),
            model=get_model("mockllm/model", custom_outputs=reply),
            display="none",
        )
    assert offline_guard == []
    assert shown == [2]  # the two result pages, as images, after the text that lists them
    (line,) = log_lines(log, split="dev")
    assert line["final_state"] == "no_answer" and line["error_kind"] == "model" and line["answer"] == []
    assert line["error"].startswith("no final answer after 2 steps") and line["steps"] == 1
    assert line["search_history"][0]["count"] == 2 and line["trajectory"][0]["images"] == 2
    assert log.samples[0].scores["madqa_scorer"].value["accuracy"] == 0.0

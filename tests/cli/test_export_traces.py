"""``madqa export traces`` and ``madqa publish traces``: runs of every agent (and a person's run, a file-search run
against the provider stand-in, an imported inspect log) round-trip through the Hub's Session Trace Simple Format.

Every record validates against ``agents/export/sts_schema.json`` (written from huggingface/hub-docs'
``session-traces-format.md``), every tool result answers an earlier tool call, the session keeps the line's question,
tool calls, answer and score, and nothing planted by :mod:`helpers.trace_models` (a key, the value of
``OPENAI_API_KEY``, paths under ``MADQA_HOME`` and ``/tmp``) survives.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_cli import madqa_env, run_agent_lines
from helpers.hub import FakeHfApi
from helpers.paths import ROOT
from helpers.trace_models import ENV_SECRET, PLANTED, PLANTED_KEY, PLANTED_REPL, TMP_PLANT, plant

from madqa.agents.export.sts import search_text
from madqa.cli import main
from madqa.cli.errors import UserError

pytestmark = [pytest.mark.slow, pytest.mark.server]  # server: one test runs the file-search provider stand-in
HERE = Path(__file__).resolve().parent
SCHEMA = json.loads((ROOT / "agents" / "export" / "sts_schema.json").read_text(encoding="utf-8"))
#: agent → the model of its run.
AGENTS = {"bm25": PLANTED, "rag": PLANTED, "mdoc": PLANTED, "shell": PLANTED, "repl": PLANTED_REPL}


def _leftovers(text: str, home: Path) -> list[str]:
    """What of the plant (or of this machine's folders) is still in ``text``."""
    marks = [PLANTED_KEY, ENV_SECRET, str(home), TMP_PLANT, "/tmp/", str(Path.home())]
    return [m for m in marks if m in text]


def _sessions(folder: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        p.stem: [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines()] for p in sorted(folder.iterdir())
    }


def _check_session(records: list[dict[str, Any]]) -> None:
    """The spec's rules: a header, then messages; valid against the schema; results after their calls."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    for record in records:
        validator.validate(record)
    header, *messages = records
    assert header["type"] == "session" and header["harness"] == "madqa" and header["harnessVersion"]
    assert messages and all(r["type"] == "message" for r in messages)
    called: set[str] = set()
    stamps = [m["message"]["timestamp"] for m in messages if "timestamp" in m["message"]]
    assert stamps == sorted(stamps)
    for record in messages:
        message = record["message"]
        called.update(c["id"] for c in message.get("toolCalls", []))
        assert all(isinstance(json.loads(c["function"]["arguments"]), dict) for c in message.get("toolCalls", []))
        if message["role"] == "tool":
            assert message["toolCallId"] in called, message


def _tool_names(records: list[dict[str, Any]]) -> list[str]:
    return [
        c["function"]["name"]
        for r in records[1:]
        for c in r["message"].get("toolCalls", [])
        if c["function"]["name"] != "retrieve"
    ]


def _human_line(home: Path) -> dict[str, Any]:
    """A person's results line (the app's own builder), a planted query among their searches."""
    from madqa.loading_script.load import load_gold
    from madqa.space.human.session import QuestionSession, build_human_record

    row = load_gold("dev")[0]
    ticks = iter(datetime(2026, 12, 1, 8, 0, tzinfo=UTC) + timedelta(seconds=7 * n) for n in range(100))
    session = QuestionSession(row, clock=lambda: next(ticks))
    session.record_search(f"water {plant()}", [("riverton_water_annual_report_2019.pdf", 1)])
    session.record_search("*", [], "refused: too broad", refused=True)
    session.record_view("riverton_water_annual_report_2019.pdf", 1, "result")
    session.add_citation("riverton_water_annual_report_2019.pdf", 1)
    return build_human_record(
        session, ["17.85"], annotator="a1", batch="B1", split="dev", mode="search", dataset={"name": "sample"}
    )


@pytest.fixture(scope="module")
def runs(layout, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One question's results file per agent (planted), plus a person's."""
    root = tmp_path_factory.mktemp("trace_runs")
    env = madqa_env(HERE, OPENAI_API_KEY=ENV_SECRET)
    files = {}
    for agent, model in AGENTS.items():
        out = root / f"{agent}.jsonl"
        (line,) = run_agent_lines(agent, out, ["--model", model, "--split", "dev", "--limit", "1"], env)
        assert line["error"] is None and ENV_SECRET in json.dumps(line), (agent, line)  # the plant was recorded
        files[agent] = out
    files["human"] = root / "human.jsonl"
    files["human"].write_text(json.dumps(_human_line(layout.root)) + "\n", encoding="utf-8")
    return files


def _export(run: Path, out: Path, monkeypatch: pytest.MonkeyPatch, *flags: str) -> dict[str, list[dict[str, Any]]]:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_SECRET)
    assert main(["export", "traces", str(run), "--output-dir", str(out), *flags]) == 0
    return _sessions(out)


@pytest.mark.parametrize("agent", [*AGENTS, "human"])
def test_a_run_of_each_agent_round_trips_through_the_format(agent, runs, layout, tmp_path, monkeypatch) -> None:
    (line,) = [json.loads(x) for x in runs[agent].read_text(encoding="utf-8").splitlines()]
    flags = ["--no-score"] if agent == "human" else []
    sessions = _export(runs[agent], tmp_path / "traces", monkeypatch, *flags)
    assert list(sessions) == [line["id"]]
    records = sessions[line["id"]]
    _check_session(records)
    text = (tmp_path / "traces" / f"{line['id']}.jsonl").read_text(encoding="utf-8")
    assert _leftovers(text, layout.root) == []
    assert "[REDACTED:OPENAI_API_KEY]" in text and "[REDACTED:key]" in text and "$MADQA_HOME/planted" in text
    header, messages = records[0], [r["message"] for r in records[1:]]
    meta = header["madqa"]
    assert (meta["question_id"], meta["agent"], meta["citations"]) == (line["id"], line["agent"], line["citations"])
    assert messages[0]["role"] == "system" and messages[1]["role"] == "user"
    assert messages[1]["content"] == line["question"] == header["name"]
    assert messages[-1]["role"] == "assistant" and all(
        a.split(" (")[0] in messages[-1]["content"] for a in line["answer"]
    )
    if agent == "human":  # the person's actions at the times they were recorded
        assert _tool_names(records) == ["search", "search", "view_page"] and meta["timestamps"] == "recorded"
        assert messages[2]["timestamp"] == round(datetime(2026, 12, 1, 8, 0, 7, tzinfo=UTC).timestamp() * 1000)
        assert meta["score"] is None
    else:  # the model's tool calls in order; times derived from the file's time and the steps' durations
        assert _tool_names(records) == [c["name"] for s in line["trajectory"] for c in s["tool_calls"]]
        assert (
            meta["timestamps"] == "derived" and messages[-1]["timestamp"] <= os.stat(runs[agent]).st_mtime * 1000 + 1
        )
        assert {"model": line["model"]}.items() <= messages[-1].items()
        report = _evaluate_items(runs[agent])
        assert meta["score"]["correct"] == report[line["id"]]["correct"] and meta["score"]["mode"] == "anls"
    if agent in ("rag", "mdoc"):  # the harness's retrievals, before the model's first call
        retrieve = messages[2]["toolCalls"]
        assert [json.loads(c["function"]["arguments"])["query"] for c in retrieve] == [
            h["query"] for h in line["search_history"]
        ]


def _evaluate_items(run: Path) -> dict[str, dict[str, Any]]:
    from madqa.cli.evaluate_cmd import evaluate

    return {i["id"]: i for i in evaluate(run, per_item=True, resamples=1)["items"]}


def test_publish_refuses_a_session_with_a_secret_and_pushes_checked_ones(runs, tmp_path, monkeypatch, caplog) -> None:
    from madqa.cli import publish_traces

    folder = tmp_path / "traces"
    _export(runs["bm25"], folder, monkeypatch)
    api = FakeHfApi(tmp_path / "pushed")
    done = publish_traces.publish_traces(folder, "me/madqa-traces", private=True, api=api)
    # the dataset card follows the sessions (tests/agents/export/test_traces_card.py checks its content)
    assert api.methods == ["create_repo", "upload_folder", "upload_file"] and api.calls[0][1]["repo_type"] == "dataset"
    assert api.calls[2][1]["path_in_repo"] == "README.md" and done.card == "README.md"
    assert (
        api.calls[1][1]["allow_patterns"] == ["*.jsonl"]
        and done.url == "https://huggingface.co/datasets/me/madqa-traces"
    )
    assert sorted(p.name for p in (tmp_path / "pushed").iterdir()) == done.files == ["q0006.jsonl"]

    class BucketApi(FakeHfApi):
        def create_bucket(self, bucket_id: str, **kwargs: Any) -> Any:
            self.calls.append(("create_bucket", {"bucket_id": bucket_id, **kwargs}))
            return type("Url", (), {"url": f"https://huggingface.co/buckets/{bucket_id}"})()

        def sync_bucket(self, source: str, dest: str, **kwargs: Any) -> None:
            self.calls.append(("sync_bucket", {"source": source, "dest": dest, **kwargs}))

    bucket = BucketApi()
    publish_traces.publish_traces(folder, "me/traces", bucket=True, path_in_repo="bm25/", api=bucket)
    assert bucket.methods == ["create_bucket", "sync_bucket"]
    assert bucket.calls[1][1]["dest"] == "hf://buckets/me/traces/bm25" and bucket.calls[1][1]["source"] == str(folder)

    # a session edited by hand to hold a key: refused before anything is sent, by the CLI too (exit 2, one line)
    leaked = folder / "leaked.jsonl"
    rows = (folder / "q0006.jsonl").read_text(encoding="utf-8").splitlines()
    message = json.loads(rows[2])
    message["message"]["content"] += f" see {TMP_PLANT} with {PLANTED_KEY}"
    rows[2] = json.dumps(message)
    leaked.write_text("\n".join(rows) + "\n", encoding="utf-8")
    api = FakeHfApi()
    with pytest.raises(UserError, match=r"leaked.jsonl line 3: holds what looks like a secret or a local path"):
        publish_traces.publish_traces(folder, "me/madqa-traces", api=api)
    assert api.calls == []
    assert main(["publish", "traces", str(folder), "--repo", "me/madqa-traces"]) == 2
    assert "leaked.jsonl line 3" in caplog.text and TMP_PLANT not in caplog.text


def test_bad_input_is_one_line_and_exit_2(runs, tmp_path, monkeypatch, caplog) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "question": "?"}\n{"id": 2\n', encoding="utf-8")
    assert main(["export", "traces", str(bad), "--output-dir", str(tmp_path / "t"), "--no-score"]) == 2
    assert "bad.jsonl line 2: invalid JSON" in caplog.text
    bad.write_text('{"question": "?"}\n', encoding="utf-8")
    assert main(["export", "traces", str(bad), "--output-dir", str(tmp_path / "t"), "--no-score"]) == 2
    assert "bad.jsonl line 1: not a results line" in caplog.text
    _export(runs["bm25"], tmp_path / "t", monkeypatch)
    assert main(["export", "traces", str(runs["bm25"]), "--output-dir", str(tmp_path / "t")]) == 2
    assert "1 session file(s) exist (e.g. q0006.jsonl); pass --overwrite" in caplog.text
    broken = tmp_path / "t" / "q0006.jsonl"
    rows = broken.read_text(encoding="utf-8").splitlines()
    broken.write_text("\n".join(r for r in rows if '"role": "assistant"' not in r) + "\n", encoding="utf-8")
    assert main(["publish", "traces", str(tmp_path / "t"), "--repo", "me/x"]) == 2
    assert "which no earlier tool call made" in caplog.text


def test_a_file_search_run_round_trips_with_its_searches_results(layout, tmp_path, monkeypatch) -> None:
    from helpers.provider_standin import serve

    state, server = serve()
    env = madqa_env(HERE, OPENAI_API_KEY=ENV_SECRET)
    env.pop("OPENAI_BASE_URL", None)
    flags = ["--provider", "openai", "--split", "dev", "--limit", "1", "--api-base", server.base + "/v1"]
    try:
        (line,) = run_agent_lines(
            "file-search", tmp_path / "fs.jsonl", [*flags, "--model-option", "poll_interval=0.001"], env
        )
    finally:
        server.shutdown()
        server.server_close()
    records = _export(tmp_path / "fs.jsonl", tmp_path / "traces", monkeypatch)[line["id"]]
    _check_session(records)
    assert _tool_names(records) == [c["name"] for s in line["trajectory"] for c in s["tool_calls"]] != []
    results = [r["message"]["content"] for r in records[1:] if r["message"]["role"] == "tool"]
    assert results == [search_text(h) for h in line["search_history"]]  # the observations the line keeps apart


def test_an_imported_inspect_log_round_trips(layout, tmp_path, monkeypatch) -> None:
    pytest.importorskip("inspect_ai")
    import sys

    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def reply(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        if not any(m.role == "tool" for m in messages):
            output = ModelOutput.for_tool_call("mockllm/model", "search_documents", {"query": f"water {plant()}"})
        else:
            cite = [{"document": "riverton_water_annual_report_2019.pdf", "page": 1}]
            output = ModelOutput.for_tool_call(
                "mockllm/model", "final_answer", {"answer": ["17.85"], "citations": cite}
            )
        output.usage = ModelUsage(
            input_tokens=100, output_tokens=7, total_tokens=107
        )  # else inspect fetches a tokenizer
        return output

    # as tests/agents/integrations/test_inspect_task.py: the repo root on sys.path hides the installed task's name
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    for name, folder in (("INSPECT_LOG_DIR", "logs"), ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache")):
        monkeypatch.setenv(name, str(tmp_path / folder))
    (log,) = inspect_eval(
        "madqa/bm25",
        task_args={"split": "dev", "limit": 1, "max_steps": 3},
        model=get_model("mockllm/model", custom_outputs=reply),
        display="none",
    )
    assert log.status == "success", log.error
    assert main(["import-inspect", log.location, "-o", str(tmp_path / "inspect.jsonl")]) == 0
    (line,) = [json.loads(x) for x in (tmp_path / "inspect.jsonl").read_text(encoding="utf-8").splitlines()]
    records = _export(tmp_path / "inspect.jsonl", tmp_path / "traces", monkeypatch)[line["id"]]
    _check_session(records)
    assert _tool_names(records) == ["search_documents", "final_answer"]
    assert _leftovers((tmp_path / "traces" / f"{line['id']}.jsonl").read_text(encoding="utf-8"), layout.root) == []
    assert records[0]["madqa"]["config"]["harness"] == "inspect_ai" and records[0]["madqa"]["score"]["correct"] is True


def test_a_line_separator_inside_a_string_does_not_split_a_results_line(runs, tmp_path, monkeypatch) -> None:
    # U+2028 may stand raw inside a JSON string; str.splitlines would cut the line there (the metric's reader not)
    lines = [json.loads(raw) for raw in runs["bm25"].read_text(encoding="utf-8").splitlines() if raw.strip()]
    lines[0]["question"] += "\u2028(a second line)"
    raw_run = tmp_path / "u2028.jsonl"
    raw_run.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    assert "\u2028" in raw_run.read_text(encoding="utf-8")
    sessions = _export(raw_run, tmp_path / "t", monkeypatch, "--no-score")  # read back with str.splitlines
    assert len(sessions) == len(lines)
    first = sessions[str(lines[0]["id"])]
    assert any("\u2028(a second line)" in json.dumps(r, ensure_ascii=False) for r in first)

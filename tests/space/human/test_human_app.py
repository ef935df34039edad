"""`madqa human` served for real (gradio, sample dataset): two annotators at once, kill -9 of the server and a
restart, and oracle mode. The browser session and the label-canary check are in test_human_browser.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.clients import gradio_client
from helpers.human_app import serving_human
from helpers.ports import free_port

pytestmark = pytest.mark.server

pytest.importorskip("gradio")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def outputs(result: Any) -> list[Any]:
    return list(result) if isinstance(result, (list, tuple)) else [result]


def markdown_with(result: Any, text: str) -> str:
    found = [v for v in outputs(result) if isinstance(v, str) and text in v]
    assert found, f"no output contains {text!r}"
    return found[0]


@pytest.fixture(scope="module")
def dev_service(layout, tmp_path_factory):
    from madqa.space.human.corpus import HumanCorpus
    from madqa.space.human.service import HumanService, build_plan

    folder = tmp_path_factory.mktemp("human_runs")
    return HumanService(build_plan("dev", out_dir=folder), HumanCorpus.open(None))


def test_two_annotators_on_one_server_get_their_own_files(dev_service) -> None:

    errors: list[BaseException] = []

    def annotate(name: str) -> None:
        try:
            client = gradio_client(url)
            client.predict(name, "Andromeda", api_name="/start")
            for n in range(3):
                client.predict(f"water {name}", api_name="/search")
                client.predict(f"answer-{name}-{n}\nsecond", api_name="/submit")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    with serving_human(dev_service) as url:
        threads = [threading.Thread(target=annotate, args=(name,)) for name in ("ann1", "ann2")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    assert not errors, errors
    ids = None
    for name in ("ann1", "ann2"):
        path = dev_service.output_for(name, "Andromeda")
        lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
        assert [r["answer"] for r in lines] == [[f"answer-{name}-{n}", "second"] for n in range(3)]
        assert {r["annotator"] for r in lines} == {name} and {r["system_type"] for r in lines} == {"human"}
        assert all(r["search_history"][0]["query"] == f"water {name}" and r["steps"] == 1 for r in lines)
        ids = ids or [r["id"] for r in lines]
        assert [r["id"] for r in lines] == ids  # same batch, same order, each in its own file


def serve(home: Path, out: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "MADQA_HOME": str(home), "GRADIO_ANALYTICS_ENABLED": "False"}
    cmd = [
        sys.executable,
        "-m",
        "madqa.cli",
        "human",
        "--split",
        "dev",
        "--annotator",
        "kim",
        "-o",
        str(out),
        "--batch",
        "Aquarius",
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.3)
    proc.kill()
    raise AssertionError("server did not start")


@pytest.mark.slow
def test_kill_9_of_the_server_mid_batch_then_restart(layout, tmp_path: Path) -> None:

    out, port = tmp_path / "kim.jsonl", free_port()
    proc = serve(layout.root, out, port)
    try:
        client = gradio_client(f"http://127.0.0.1:{port}/")
        markdown_with(client.predict("kim", "Aquarius", api_name="/start"), "Question 1 of 13")
        for n in range(2):
            client.predict(f"answer {n}", api_name="/submit")
        client.predict("permit", api_name="/search")  # question 3 in progress
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert [json.loads(x)["answer"] for x in out.read_text().splitlines()] == [["answer 0"], ["answer 1"]]
    proc = serve(layout.root, out, port)
    try:
        client = gradio_client(f"http://127.0.0.1:{port}/")
        markdown_with(client.predict("kim", "Aquarius", api_name="/start"), "Question 3 of 13")
        for _ in range(11):
            client.predict(api_name="/give_up")
        markdown_with(client.predict("kim", "Aquarius", api_name="/start"), "is complete")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 13 and len({r["id"] for r in lines}) == 13  # nothing lost, nothing twice
    assert [r["final_state"] for r in lines].count("gave_up") == 11


def test_oracle_mode_shows_exactly_the_gold_pages_and_no_search_bar(layout, tmp_path: Path) -> None:
    import httpx

    from madqa.loading_script.load import load_gold
    from madqa.space.human import view
    from madqa.space.human.corpus import HumanCorpus
    from madqa.space.human.service import HumanService, build_plan

    gold = {r["id"]: r for r in load_gold("dev")}
    service = HumanService(build_plan("dev", mode="oracle", out_dir=tmp_path), HumanCorpus.open(None, oracle=True))
    assert service.corpus.index is None  # no index is even opened
    with serving_human(service) as url:
        config = httpx.get(f"{url}config", timeout=30).json()
        rows = [c for c in config["components"] if c.get("props", {}).get("elem_id") == "search-row"]
        assert rows and rows[0]["props"]["visible"] is False
        client = gradio_client(url)
        for _ in range(3):
            result = outputs(client.predict("ora", "Andromeda", api_name="/start"))
            run = service.start("ora", "Andromeda")
            qid = run.current_item()["id"]
            [gallery] = [
                v["value"] if isinstance(v, dict) else v
                for v in result
                if isinstance(v, list) or (isinstance(v, dict) and isinstance(v.get("value"), list))
            ]
            captions = [g["caption"] for g in gallery]
            pages = [(e["document"], e["page"]) for e in gold[qid]["evidence"]]
            assert captions == view.captions(pages, lambda d, p: service.corpus.snippet(d, p))
            client.predict("x", api_name="/search")  # ignored: there is no search in oracle mode
            client.predict("an answer", api_name="/submit")
        lines = [json.loads(x) for x in run.path.read_text().splitlines()]
        assert len(lines) == 3 and all(r["mode"] == "oracle" and r["search_history"] == [] for r in lines)


def test_cli_lists_batches_and_names_mistakes(
    layout, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    from madqa.cli import main

    assert main(["human", "--split", "dev", "--list-batches", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [b["name"] for b in listed["batches"]] == ["Andromeda", "Aquarius"]
    assert [b["questions"] for b in listed["batches"]] == [25, 13]
    assert main(["human", "--split", "dev", "-o", str(tmp_path / "x.jsonl")]) == 2  # a file needs its annotator
    assert main(["human", "--split", "dev", "--batch", "Nowhere"]) == 2
    assert main(["human", "--split", "test", "--oracle"]) == 2  # oracle on test needs the private labels
    assert main(["human", "--split", "dev", "--annotator", "../x"]) == 2
    errors = caplog.text
    assert "no batch named 'Nowhere'" in errors and "--labels" in errors and "not valid" in errors

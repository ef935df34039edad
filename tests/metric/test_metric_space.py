"""The metric Space: the staged file set, `publish_metric` against a fake HfApi, and the widget launched flat.

The widget test copies exactly what a metric Space holds (``publish_metric(dry_run_dir=...)``), runs
``python app.py`` there with the ``madqa`` package made unimportable (on the Hub there is none), scores a results
file through ``gradio_client`` and checks the report against ``evaluate.load(...).compute`` in-process.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from helpers.hub import FakeHfApi

from madqa.bench.measure import stop
from madqa.cli import UserError
from madqa.cli.publish_metric import card_header, publish_metric
from madqa.metric import install
from madqa.metric.install import relative_imports

pytestmark = pytest.mark.server

METRIC_DIR = Path(install.__file__).resolve().parent
SPACE_README = METRIC_DIR.parent / "space" / "README.md"
EXPECTED = {"madqa.py", "app.py", "README.md", "requirements.txt"} | {
    f"{name}.py" for script in ("madqa.py", "app.py") for name in relative_imports(METRIC_DIR / script)
}
# Run app.py with `import madqa` failing, as on a metric Space where only the folder's files exist.
FLAT_RUN = "import runpy, sys; sys.modules['madqa'] = None; runpy.run_path('app.py', run_name='__main__')"


def test_staged_space_holds_exactly_the_metric_and_widget_files(tmp_path):
    result = publish_metric("me/madqa", dry_run_dir=tmp_path / "space")
    assert set(result.files) == EXPECTED == {p.name for p in (tmp_path / "space").iterdir()}
    assert (result.url, result.commit) == (None, None)
    header = card_header(tmp_path / "space" / "README.md")
    assert (header["sdk"], header["app_file"], header["pinned"]) == ("gradio", "app.py", False)
    assert str(header["sdk_version"]) == str(card_header(SPACE_README)["sdk_version"])
    assert "evaluate" in header["tags"] and header["title"] and header["emoji"]
    reqs = (tmp_path / "space" / "requirements.txt").read_text(encoding="utf-8")
    assert all(name in reqs for name in ("evaluate", "gradio", "matplotlib", "pyarrow"))


def test_publish_metric_creates_a_gradio_space_and_uploads_the_staged_folder(tmp_path):
    api = FakeHfApi(tmp_path / "pushed")
    result = publish_metric("me/madqa-metric", private=True, api=api)
    assert api.methods == ["create_repo", "upload_folder"]
    assert {k: v for k, v in api.calls[0][1].items() if k != "repo_id"} == {
        "repo_type": "space",
        "space_sdk": "gradio",
        "exist_ok": True,
        "private": True,
    }
    assert api.calls[1][1]["repo_type"] == "space" and api.calls[1][1]["commit_message"]
    assert api.calls[1][1]["delete_patterns"] == ["*.py"]  # a module dropped from the metric leaves the Space
    # evaluate.load("me/madqa-metric") fetches madqa-metric.py: the script is staged under that name too
    assert {p.name for p in (tmp_path / "pushed").iterdir()} == EXPECTED | {"madqa-metric.py"} == set(result.files)
    assert (tmp_path / "pushed" / "madqa-metric.py").read_bytes() == (METRIC_DIR / "madqa.py").read_bytes()
    assert (result.url, result.commit) == ("https://huggingface.co/spaces/me/madqa-metric", "c0ffee")


def test_publish_metric_refuses_bad_input_before_sending(tmp_path):
    api = FakeHfApi(tmp_path / "pushed")
    with pytest.raises(UserError, match="expected ORG/NAME"):
        publish_metric("madqa-metric", api=api)
    with pytest.raises(UserError, match="NAME may hold only"):
        publish_metric("me/madqa.v2", api=api)
    with pytest.raises(UserError, match="would make evaluate load app.py as the metric"):
        publish_metric("me/app", api=api)
    folder = tmp_path / "metric"
    shutil.copytree(METRIC_DIR, folder, ignore=shutil.ignore_patterns("__pycache__"))
    card = (folder / "README.md").read_text(encoding="utf-8")
    (folder / "README.md").write_text(card.replace("app_file: app.py\n", ""), encoding="utf-8")
    with pytest.raises(UserError, match="lacks app_file"):
        publish_metric("me/m", api=api, metric_dir=folder)
    (folder / "README.md").write_text(card, encoding="utf-8")
    (folder / "app.py").unlink()
    with pytest.raises(UserError, match=r"app\.py: missing"):
        publish_metric("me/m", api=api, metric_dir=folder)
    assert api.calls == []
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.txt").write_text("x", encoding="utf-8")
    with pytest.raises(UserError, match="not empty"):
        publish_metric("me/m", dry_run_dir=tmp_path / "full")

    class FailingApi(FakeHfApi):
        def create_repo(self, repo_id: str, **kw):
            raise RuntimeError("401 Unauthorized\nlong details")

    with pytest.raises(UserError, match=r"cannot publish the metric Space me/m: RuntimeError: 401 Unauthorized$"):
        publish_metric("me/m", api=FailingApi(tmp_path / "x"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_up(proc: subprocess.Popen, url: str, log: Path, limit_s: float = 120.0) -> None:
    deadline = time.monotonic() + limit_s  # a safety net, not a performance assertion
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"app.py exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"app.py did not answer on {url}:\n{log.read_text(errors='replace')[-3000:]}")


def _results(gold: list[dict]) -> list[dict]:
    """First half right (first answer variant, gold evidence cited), second half wrong; varied effort."""
    rows = []
    for i, g in enumerate(gold):
        right = i < len(gold) // 2
        rows.append(
            {
                "id": g["id"],
                "answer": g["answer_variants"][0] if right else ["certainly not this"],
                "citations": g["evidence"] if right else [],
                "search_history": ["query"] * (1 + i % 3),
            }
        )
    return rows


def test_widget_scores_a_file_as_compute_does(built_home, layout, tmp_path):
    import evaluate
    from gradio_client import handle_file
    from helpers.clients import gradio_client

    from madqa.loading_script.load import load_gold

    space = tmp_path / "space"
    publish_metric("me/madqa-metric", dry_run_dir=space)
    gold = load_gold("dev", layout.dataset_dir)
    rows = _results(gold)
    good = tmp_path / "results.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + '\n{"id": "x", "answer": {"a": 1}}\nnot json\n', encoding="utf-8")
    # the copy evaluate.load("me/madqa-metric") would fetch, loaded as a local script
    expected = evaluate.load(str(space / "madqa-metric.py"), keep_in_memory=True).compute(
        predictions=rows + [None] * (len(gold) - len(rows)), references=gold
    )

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "GRADIO_", "PYTHONPATH", "MADQA_"))}
    env.update(
        MADQA_DATASET=str(layout.dataset_dir),
        HF_HOME=str(tmp_path / "hf"),
        HF_HUB_OFFLINE="1",
        HF_EVALUATE_OFFLINE="1",
        GRADIO_SERVER_PORT=str(port),
        GRADIO_ANALYTICS_ENABLED="False",
        GRADIO_TEMP_DIR=str(tmp_path / "gradio"),
        MPLBACKEND="Agg",
    )
    log = tmp_path / "app.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", FLAT_RUN], cwd=space, env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        _wait_until_up(proc, f"http://127.0.0.1:{port}/", log)
        client = gradio_client(f"http://127.0.0.1:{port}/")
        markdown, figure, report = client.predict(handle_file(str(good)), "dev", api_name="/score")
        for key in ("accuracy", "accuracy_ci", "anls", "page_f1", "doc_f1", "kuiper", "kuiper_ci", "n", "missing"):
            assert report[key] == expected[key], key
        assert 0 < report["accuracy"] < 1 and report["missing"] == 0
        assert f"{100 * expected['accuracy']:.1f}%" in markdown and "Page F1" in markdown and "Kuiper" in markdown
        assert f"{len(gold)} of {len(gold)} questions answered" in markdown
        assert figure is not None  # the curves panel

        markdown, figure, report = client.predict(handle_file(str(bad)), "dev", api_name="/score")
        assert markdown.startswith("**Not scored.**") and "Traceback" not in markdown
        assert "bad.jsonl line 2: field 'answer'" in markdown and "bad.jsonl line 3: invalid JSON" in markdown
        assert report["problem_count"] == 2 and figure is None
    finally:
        stop(proc)


def test_widget_refuses_the_test_split_and_ignores_unknown_lines(built_home, layout, tmp_path, monkeypatch):
    from madqa.loading_script.load import load_gold
    from madqa.metric import app

    monkeypatch.setenv("MADQA_DATASET", str(layout.dataset_dir))
    good = tmp_path / "r.jsonl"
    good.write_text('{"id": "q", "answer": "x"}\n', encoding="utf-8")
    markdown, figure, report = app.score(str(good), "test")
    assert "test split's labels are hidden" in markdown and figure is None and "error" in report
    assert app.PUBLIC_SPLITS == ("dev", "train") and "test" in app.INTRO
    markdown, _, _ = app.score(None, "dev")
    assert "upload a results file" in markdown
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"id": "not-a-question", "answer": "x", "steps": 1}\n', encoding="utf-8")
    markdown, _, report = app.score(str(unknown), "train")
    assert report["n_predicted"] == 0 and "1 line(s) match no question of this split (ignored)" in markdown
    # one file for dev and train scored on dev: more lines than dev questions; the train lines are ignored
    dev, train = load_gold("dev", layout.dataset_dir), load_gold("train", layout.dataset_dir)
    both = tmp_path / "both.jsonl"
    both.write_text("".join(json.dumps(r) + "\n" for r in _results(train) + _results(dev)), encoding="utf-8")
    markdown, _, report = app.score(str(both), "dev")
    only_dev = app.load_metric().compute(predictions=_results(dev), references=dev)
    assert (report["n_predicted"], report["accuracy"], report["page_f1"]) == (
        len(dev),
        only_dev["accuracy"],
        only_dev["page_f1"],
    )
    assert len(train) > len(dev) and f"{len(train)} line(s) match no question of this split" in markdown


def test_widget_shows_the_files_input_warnings_verbatim(built_home, layout, tmp_path, monkeypatch):
    """The metric's per-file warnings (issue 22) are shown with the result, naming the file's lines, in a code
    fence (a misspelt name is the uploader's text: never rendered as Markdown), and are the report's too."""
    import re

    from madqa.loading_script.load import load_gold
    from madqa.metric import app

    monkeypatch.setenv("MADQA_DATASET", str(layout.dataset_dir))
    dev = load_gold("dev", layout.dataset_dir)
    rows = _results(dev)
    cited = rows[0]["citations"][0]
    rows[0]["citatons"] = rows[0].pop("citations")  # misspelt: ignored, so no citation is scored
    del rows[1]["answer"]  # the public harness's failed line: scored as no answer
    rows[2] = {**rows[2], "citations": [{**cited, "page": 1506387294}]}  # a model's page: a wrong citation
    rows[3] = {**rows[3], "answer": [], "`answer`": ["x"]}  # a Markdown look-alike of 'answer'
    unknown = {"id": "not-a-dev-question", "answer": ["x"]}  # ignored: the warnings still name the file's lines
    path = tmp_path / "lenient.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [unknown, *rows]), encoding="utf-8")

    markdown, figure, report = app.score(str(path), "dev")
    assert figure is not None and report["n_predicted"] == len(dev)
    expected = [
        "lenient.jsonl line 2: unknown field 'citatons' (did you mean 'citations'?); it is ignored",
        "lenient.jsonl line 5: unknown field '`answer`' (did you mean 'answer'?); it is ignored",
        "lenient.jsonl: 1 line(s) have no 'answer' field; scored as no answer",
        "lenient.jsonl: 1 citation(s) to pages above 100,000 scored as wrong citations",
    ]
    assert report["warnings"] == expected  # the file's lines, not compute's predictions[i]
    assert report["input_notes"] == {
        "lines_without_answer": 1,
        "citations_above_max_page": 1,
        "unknown_fields": {"citatons": "citations", "`answer`": "answer"},
    }
    assert "**Warnings** (4; the file was scored anyway):" in markdown
    fence = re.search(r"\*\*Warnings\*\*[^\n]*\n(`{3,})text\n(.*?)\n\1(?:\n|$)", markdown, re.S)
    assert fence is not None and fence.group(2).split("\n") == expected  # verbatim, inside one code fence
    assert len(fence.group(1)) > max(map(len, re.findall("`+", fence.group(2))))  # no name can close the fence

    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(json.dumps(r) + "\n" for r in _results(dev)), encoding="utf-8")
    markdown, _, report = app.score(str(clean), "dev")
    assert report["warnings"] == [] and "Warnings" not in markdown

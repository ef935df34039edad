"""From a release-schema dataset to a scored run: `madqa setup --dataset FOLDER` against a local document host.

A ``ThreadingHTTPServer`` on 127.0.0.1 plays the documents' host (DocumentCloud for the real release): six PDFs,
one URL answering with an HTML error page, one that never answers in time, one 404. The set-up names each failure,
a rerun after the host is fixed fetches only those, a third run is a no-op; then a scripted model runs on the
prepared dataset with the host gone (offline) and `madqa evaluate` scores it. The published page corpus is in
test_release_pages.py. The Hub-id path runs on a faked snapshot.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import helpers.release_host as release_host
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers.release_host import BAD, FACTS, Host, pdf_bytes, setup_json, write_release

from madqa.cli import main

#: The shared fixtures ``home`` and ``host``, made visible to pytest in this module.
home_fixture, host_fixture = release_host.home_fixture, release_host.host_fixture


def _run_permit_reader(folder: Path, out: Path, *flags: str) -> int:
    """``madqa run`` of the release host's permit reader on the release in ``folder``; its exit status."""
    model = "py:helpers.release_host:permit_reader"
    return main(["run", "--dataset", str(folder), *flags, "--model", model, "-o", str(out), "--no-progress"])


def test_setup_run_evaluate_from_a_release_folder(home: Path, host: Host, tmp_path: Path, capsys, caplog) -> None:
    folder = write_release(tmp_path / "MADQA", host.url)

    rc, first = setup_json(folder, capsys)
    assert rc == 1, first
    reasons = {f["document"]: f for f in first["failures"]}
    assert set(reasons) == set(BAD)
    assert "HTML" in reasons["broken_html.pdf"]["reason"]
    assert "timed out" in reasons["slow.pdf"]["reason"] and "404" in reasons["gone.pdf"]["reason"]
    assert all(reasons[n]["url"] == f"{host.url}/{n}" for n in BAD)
    assert first["stats"]["documents"] == 6 and first["stats"]["pages"] == 12
    assert "not in the corpus: gone.pdf" in caplog.text
    assert main(["info", "--dataset", str(folder), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["prepared"]["documents_failed"] == 3 and info["prepared"]["complete"] is False
    assert info["questions"] == {"train": 2, "dev": 5, "test": 1}

    host.fix()
    host.requests.clear()
    rc, second = setup_json(folder, capsys)
    assert rc == 0 and second["failures"] == [] and second["fetched"] == 3 and second["already_present"] == 6
    assert sorted(set(host.requests)) == sorted(BAD)  # only the missing ones were asked for
    assert second["stats"]["documents"] == 9 and second["stats"]["text_sources"] == {"pdf": 18}

    host.requests.clear()
    rc, third = setup_json(folder, capsys)
    assert rc == 0 and third["steps_run"] == [] and host.requests == []  # a no-op, not one request
    host.stop()  # from here on, everything is offline

    out = tmp_path / "r.jsonl"
    assert _run_permit_reader(folder, out, "--split", "dev") == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 5 and all(r["error"] is None for r in rows)
    assert main(["evaluate", str(out), "--dataset", str(folder), "--split", "dev", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == report["n_predicted"] == 5
    assert report["accuracy"] == pytest.approx(1.0) and report["page_f1"] == pytest.approx(1.0)


def test_environment_variable_selects_the_prepared_dataset(
    home: Path, host: Host, tmp_path: Path, capsys, monkeypatch
) -> None:
    host.fix()
    folder = write_release(tmp_path / "MADQA", host.url)
    assert setup_json(folder, capsys)[0] == 0
    monkeypatch.setenv("MADQA_DATASET", str(folder))
    from madqa.loading_script.load import document_file, load_documents, load_pages, resolve_dataset

    prepared = resolve_dataset()
    assert prepared == home / "datasets" / prepared.name and prepared.name.startswith("local--MADQA--")
    assert len(load_pages()) == 18
    host.stop()
    pdf = document_file(load_documents()[0])  # a local file, no download
    assert pdf.is_file() and pdf.read_bytes().startswith(b"%PDF-")


def test_failed_document_is_never_fetched_behind_the_users_back(
    home: Path, host: Host, tmp_path: Path, capsys
) -> None:
    folder = write_release(tmp_path / "MADQA", host.url)
    assert setup_json(folder, capsys)[0] == 1
    from madqa.loading_script.load import DatasetUnavailableError, document_file, load_documents

    (gone,) = [d for d in load_documents(str(folder)) if d["document"] == "gone.pdf"]
    host.requests.clear()
    with pytest.raises(DatasetUnavailableError, match="was not fetched"):
        document_file(gone, str(folder))
    assert host.requests == []


def test_hub_id_is_prepared_from_a_snapshot_and_then_works_offline(
    home: Path, host: Host, tmp_path: Path, capsys, monkeypatch
) -> None:
    host.fix()
    snapshot = write_release(tmp_path / "hub" / "snapshots" / ("c0ffee" * 6 + "beef"), host.url)
    import huggingface_hub

    calls = Counter()

    def fake_download(repo_id: str, filename: str, **kwargs: Any) -> str:
        calls["hf_hub_download"] += 1
        assert repo_id == "OrgX/MADQA" and kwargs["repo_type"] == "dataset"
        return str(snapshot / filename)

    def fake_snapshot(repo_id: str, **kwargs: Any) -> str:
        calls["snapshot_download"] += 1
        assert "data/dev-*" in kwargs["allow_patterns"]
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    rc, out = setup_json(Path("OrgX/MADQA"), capsys, "--no-index")
    assert rc == 0 and out["source_revision"] == snapshot.name and calls["snapshot_download"] == 1
    monkeypatch.setattr(huggingface_hub, "snapshot_download", None)  # any Hub access now fails loudly
    from madqa.loading_script.load import load_questions, resolve_dataset

    assert resolve_dataset("OrgX/MADQA").name == "hub--OrgX--MADQA"
    assert [q["id"] for q in load_questions("dev", "OrgX/MADQA")] == ["r2", "r3", "r4", "r5", "r6"]

    # The prepared folder is a Hub benchmark, and a run on it is published under the Hub id and revision it records.
    from madqa.loading_script.load import load_gold
    from madqa.loading_script.release import dataset_provenance

    benchmark = yaml.safe_load((resolve_dataset("OrgX/MADQA") / "eval.yaml").read_text(encoding="utf-8"))
    assert benchmark["name"] == "MADQA fixture" and benchmark["evaluation_framework"] == "madqa"
    provenance, run = dataset_provenance("OrgX/MADQA"), tmp_path / "dev.jsonl"
    lines = [
        {"id": q["id"], "question": q["question"], "answer": q["answer_variants"][0], "citations": q["evidence"]}
        | {"config": {"agent": "bm25", "model": "m", "split": "dev"}, "dataset": provenance}
        for q in load_gold("dev", "OrgX/MADQA")
    ]
    run.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert main(["evaluate", str(run), "--eval-results", str(tmp_path / "model")]) == 0
    (entry,) = yaml.safe_load((tmp_path / "model" / ".eval_results" / "madqa.yaml").read_text(encoding="utf-8"))
    assert entry["dataset"] == {"id": "OrgX/MADQA", "task_id": "qa_dev_accuracy", "revision": snapshot.name}
    assert entry["value"] == 1.0


def test_bad_specs_are_clear_errors(home: Path, tmp_path: Path, caplog) -> None:
    assert main(["setup", "--dataset", str(tmp_path / "nowhere" / "x"), "--no-progress"]) == 2
    assert "neither 'sample', a dataset folder, nor a Hub repo id" in caplog.text
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("---\nconfigs: []\n---\n")
    assert main(["setup", "--dataset", str(empty), "--no-progress"]) == 2
    assert "declares no config 'default', 'documents'" in caplog.text
    assert main(["setup", "--pages-repo", "org/p"]) == 2
    assert main(["setup", "--dataset", "NoSuchOrg/NoSuchSet", "--no-progress"]) == 2  # offline in tests
    assert "Hub dataset 'NoSuchOrg/NoSuchSet' is not in the local cache and the Hub cannot be reached" in caplog.text


def test_an_unprepared_release_names_the_setup_command(home: Path, tmp_path: Path, caplog) -> None:
    folder = write_release(tmp_path / "MADQA", "http://127.0.0.1:9/docs")
    out = tmp_path / "r.jsonl"
    assert _run_permit_reader(folder, out) == 2
    assert f"run `madqa setup --dataset {folder}` first" in caplog.text and not out.exists()


def test_a_second_setup_of_the_same_dataset_waits_for_the_first(home: Path, host: Host, tmp_path: Path) -> None:
    import fcntl
    import logging

    from madqa.loading_script.paths import Layout
    from madqa.loading_script.release import prepare_dataset

    host.fix()
    folder = write_release(tmp_path / "MADQA", host.url)
    target = Layout.default().prepared_dir(str(folder))
    target.mkdir(parents=True)
    waiting = threading.Event()

    class Flag(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "waiting for another" in record.getMessage():
                waiting.set()

    flag = Flag()
    release_logger = logging.getLogger("madqa.loading_script.release")
    level = release_logger.level
    release_logger.setLevel(logging.INFO)
    release_logger.addHandler(flag)
    done: list[Any] = []
    try:
        with open(target / ".lock", "a+") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # another process's set-up of the same spec
            worker = threading.Thread(target=lambda: done.append(prepare_dataset(str(folder), progress=False)))
            worker.start()
            assert waiting.wait(timeout=60)
            assert not done and host.requests == []  # it waits before touching anything
            fcntl.flock(held, fcntl.LOCK_UN)
        worker.join(timeout=120)
    finally:
        release_logger.removeHandler(flag)
        release_logger.setLevel(level)
    assert done and done[0].complete and len(done[0].fetched) == 9


def test_a_host_that_is_down_gives_a_named_failure_per_document(home: Path, tmp_path: Path, capsys) -> None:
    folder = write_release(tmp_path / "MADQA", "http://127.0.0.1:9/docs")  # nothing listens on port 9
    rc, out = setup_json(folder, capsys, "--fetch-retries", "0")
    assert rc == 1 and len(out["failures"]) == len(FACTS) and out["stats"]["pages"] == 0 and out["index"] is None
    assert all("connection" in f["reason"] for f in out["failures"])
    from madqa.loading_script.load import load_questions

    assert len(load_questions("dev", str(folder))) == 5  # the questions are there, the corpus is empty


def test_a_hub_dataset_cannot_make_setup_copy_local_files(home: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    snapshot = write_release(tmp_path / "hub" / "snapshots" / ("ab" * 20), "http://127.0.0.1:9/docs")
    secret = tmp_path / "secret.pdf"  # a local file the dataset's author must not be able to pull in
    secret.write_bytes(pdf_bytes("SC-0001", "vault"))
    rows = [
        {"document": "a.pdf", "url": f"file://{secret}"},
        {"document": "b.pdf", "url": str(secret)},
        {"document": "c.pdf", "url": None, "path": "../../../secret.pdf"},
    ]
    schema = pa.schema([("document", pa.string()), ("url", pa.string()), ("path", pa.string())])
    pq.write_table(
        pa.Table.from_pylist([{"path": None, **r} for r in rows], schema=schema),
        snapshot / "data" / "documents" / "document_urls-00000-of-00001.parquet",
    )
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda repo, name, **kw: str(snapshot / name))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda repo, **kw: str(snapshot))
    rc, out = setup_json(Path("OrgX/Hostile"), capsys, "--no-index")
    reasons = {f["document"]: f["reason"] for f in out["failures"]}
    assert rc == 1 and set(reasons) == {"a.pdf", "b.pdf", "c.pdf"}
    assert "only http(s) URLs" in reasons["a.pdf"] and "only http(s) URLs" in reasons["b.pdf"]
    assert "neither a url nor a local path" in reasons["c.pdf"]
    assert not list((home / "datasets").rglob("*.pdf"))

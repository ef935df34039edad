"""From a release-schema dataset to a scored run: `madqa setup --dataset FOLDER` against a local document host.

A ``ThreadingHTTPServer`` on 127.0.0.1 plays the documents' host (DocumentCloud for the real release): six PDFs,
one URL answering with an HTML error page, one that never answers in time, one 404. The set-up names each failure,
a rerun after the host is fixed fetches only those, a third run is a no-op; then a scripted model runs on the
prepared dataset with the host gone (offline) and `madqa evaluate` scores it. The page corpus is published to a
fake ``HfApi`` and used by another set-up instead of extracting. The Hub-id path runs on a faked snapshot.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from smolagents import ChatMessage, MessageRole, Model
from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction

from madqa.cli import main

RELEASE_CARD = """---
license: cc-by-nc-4.0
pretty_name: MADQA fixture
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*
  - split: dev
    path: data/dev-*
  - split: test
    path: data/test-*
- config_name: documents
  data_files:
  - split: links
    path: data/documents/document_urls-*
---
# A dataset in the release's schema (test fixture)
"""

#: document → (permit code on its page 2, a distinctive word of its topic)
FACTS = {
    "harbour.pdf": ("HP-4471", "harbour"), "library.pdf": ("LB-2093", "library"),
    "orchard.pdf": ("OR-7310", "orchard"), "quarry.pdf": ("QY-5528", "quarry"),
    "tramway.pdf": ("TW-6642", "tramway"), "vineyard.pdf": ("VY-1187", "vineyard"),
    "broken_html.pdf": ("BH-3001", "lighthouse"), "slow.pdf": ("SL-4002", "glacier"),
    "gone.pdf": ("GN-5003", "meadow"),
}  # fmt: skip
BAD = {"broken_html.pdf": "html", "slow.pdf": "slow", "gone.pdf": "404"}

EVIDENCE = pa.list_(pa.struct([("document", pa.string()), ("page", pa.int64())]))
QA_SCHEMA = pa.schema([
    ("id", pa.string()), ("question", pa.string()), ("answer_variants", pa.list_(pa.list_(pa.string()))),
    ("evidence", EVIDENCE), ("document_category", pa.string()), ("domain", pa.string()),
])  # fmt: skip
DOC_SCHEMA = pa.schema([("document", pa.string()), ("url", pa.string())])


def _pdf(code: str, topic: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), f"Annual report of the municipal {topic} board, general overview.")
    doc.new_page().insert_text((72, 100), f"The {topic} operating permit number is {code} for this year.")
    return doc.tobytes()


class Host:
    """The documents' host: serves ``/docs/NAME``, misbehaving for the names in ``bad`` until ``fix()``."""

    def __init__(self) -> None:
        self.files = {name: _pdf(*fact) for name, fact in FACTS.items()}
        self.bad = dict(BAD)
        self.requests: list[str] = []
        host = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                name = self.path.rsplit("/", 1)[-1]
                host.requests.append(name)
                mode = host.bad.get(name)
                if mode == "slow":
                    time.sleep(1.5)
                if mode == "404" or name not in host.files:
                    self.send_error(404, "Not Found")
                    return
                body = b"<!DOCTYPE html><html><body>Rate limited, try later</body></html>" if mode == "html" \
                    else host.files[name]
                self.send_response(200)
                self.send_header("Content-Type", "text/html" if mode == "html" else "application/pdf")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:  # the client gave up (timeout)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/docs"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def fix(self) -> None:
        self.bad.clear()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _qa(i: int, doc: str, page: int = 2) -> dict[str, Any]:
    code, topic = FACTS[doc]
    return {"id": f"r{i}", "question": f"What is the operating permit number of the {topic} board?",
            "answer_variants": [[code]], "evidence": [{"document": doc, "page": page}],
            "document_category": "Permit", "domain": "Government"}  # fmt: skip


def write_release(root: Path, base_url: str) -> Path:
    """A folder in the release's schema whose documents config points at ``base_url``."""
    (root / "data" / "documents").mkdir(parents=True)
    (root / "README.md").write_text(RELEASE_CARD)
    names = sorted(FACTS)
    train = [_qa(0, "harbour.pdf"), _qa(1, "library.pdf")]
    dev = [_qa(2, "orchard.pdf"), _qa(3, "quarry.pdf"), _qa(4, "tramway.pdf"), _qa(5, "vineyard.pdf"),
           _qa(6, "slow.pdf")]  # fmt: skip
    test = [{**_qa(7, "harbour.pdf"), "answer_variants": [], "evidence": []}]
    for split, rows in (("train", train), ("dev", dev), ("test", test)):
        pq.write_table(pa.Table.from_pylist(rows, schema=QA_SCHEMA), root / "data" / f"{split}-00000-of-00001.parquet")
    docs = [{"document": n, "url": f"{base_url}/{n}"} for n in names]
    pq.write_table(pa.Table.from_pylist(docs, schema=DOC_SCHEMA),
                   root / "data" / "documents" / "document_urls-00000-of-00001.parquet")  # fmt: skip
    return root


class PermitReader(Model):
    """Scripted model: searches the question's topic word, then answers the permit code read from the shown text."""

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        prepared = self._prepare_completion_kwargs(messages, flatten_messages_as_text=True)
        text = "\n".join(str(m["content"]) for m in prepared["messages"])
        topic = re.search(r"Question: What is the operating permit number of the (\w+) board", text).group(1)
        found = re.search(
            r"file (\S+), page (\d+)[^\n]*\n(?:(?!file \S+, page).*\n)*?.*permit number is ([A-Z]{2}-\d{4})", text
        )
        if found is None:
            name, args = "search_documents", {"query": f"{topic} permit"}
        else:
            name, args = "final_answer", {"answer": [found.group(3)],
                                          "citations": [{"document": found.group(1), "page": int(found.group(2))}]}
        call = ChatMessageToolCall(id="c0", type="function", function=ChatMessageToolCallFunction(name=name,
                                                                                                  arguments=args))
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def permit_reader(**_: Any) -> PermitReader:
    return PermitReader(model_id="permit-reader", flatten_messages_as_text=True)


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("MADQA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("MADQA_DATASET", raising=False)
    monkeypatch.delenv("MADQA_PAGES_REPO", raising=False)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    return tmp_path / "home"


@pytest.fixture
def host() -> Iterator[Host]:
    h = Host()
    try:
        yield h
    finally:
        h.stop()


SETUP = ["setup", "--no-progress", "--fetch-timeout", "0.5", "--fetch-retries", "1", "--workers", "1", "--json"]


def _setup(folder: Path, capsys, *extra: str) -> tuple[int, dict[str, Any]]:
    rc = main([*SETUP, "--dataset", str(folder), *extra])
    return rc, json.loads(capsys.readouterr().out)


def test_setup_run_evaluate_from_a_release_folder(home: Path, host: Host, tmp_path: Path, capsys, caplog) -> None:
    folder = write_release(tmp_path / "MADQA", host.url)

    rc, first = _setup(folder, capsys)
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
    rc, second = _setup(folder, capsys)
    assert rc == 0 and second["failures"] == [] and second["fetched"] == 3 and second["already_present"] == 6
    assert sorted(set(host.requests)) == sorted(BAD)  # only the missing ones were asked for
    assert second["stats"]["documents"] == 9 and second["stats"]["text_sources"] == {"pdf": 18}

    host.requests.clear()
    rc, third = _setup(folder, capsys)
    assert rc == 0 and third["steps_run"] == [] and host.requests == []  # a no-op, not one request
    host.stop()  # from here on, everything is offline

    out = tmp_path / "r.jsonl"
    assert main(["run", "--dataset", str(folder), "--split", "dev", "--model", "py:test_release_setup:permit_reader",
                 "-o", str(out), "--no-progress"]) == 0  # fmt: skip
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 5 and all(r["error"] is None for r in rows)
    assert main(["evaluate", str(out), "--dataset", str(folder), "--split", "dev", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n"] == report["n_predicted"] == 5
    assert report["accuracy"] == pytest.approx(1.0) and report["page_f1"] == pytest.approx(1.0)


def test_environment_variable_selects_the_prepared_dataset(home: Path, host: Host, tmp_path: Path, capsys,
                                                           monkeypatch) -> None:
    host.fix()
    folder = write_release(tmp_path / "MADQA", host.url)
    assert _setup(folder, capsys)[0] == 0
    monkeypatch.setenv("MADQA_DATASET", str(folder))
    from madqa.loading_script.load import document_file, load_documents, load_pages, resolve_dataset

    prepared = resolve_dataset()
    assert prepared == home / "datasets" / prepared.name and prepared.name.startswith("local--MADQA--")
    assert len(load_pages()) == 18
    host.stop()
    pdf = document_file(load_documents()[0])  # a local file, no download
    assert pdf.is_file() and pdf.read_bytes().startswith(b"%PDF-")


def test_failed_document_is_never_fetched_behind_the_users_back(home: Path, host: Host, tmp_path: Path,
                                                               capsys) -> None:
    folder = write_release(tmp_path / "MADQA", host.url)
    assert _setup(folder, capsys)[0] == 1
    from madqa.loading_script.load import DatasetUnavailableError, document_file, load_documents

    (gone,) = [d for d in load_documents(str(folder)) if d["document"] == "gone.pdf"]
    host.requests.clear()
    with pytest.raises(DatasetUnavailableError, match="was not fetched"):
        document_file(gone, str(folder))
    assert host.requests == []


class FakeHfApi:
    """Records what would be pushed; ``upload_folder`` copies the staged folder to ``pushed``."""

    def __init__(self, pushed: Path) -> None:
        self.pushed, self.calls = pushed, []  # type: Path, list[tuple[str, dict[str, Any]]]

    def create_repo(self, repo_id: str, **kwargs: Any) -> str:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))
        return f"https://huggingface.co/datasets/{repo_id}"

    def upload_folder(self, *, folder_path: str, **kwargs: Any) -> str:
        self.calls.append(("upload_folder", kwargs))
        shutil.copytree(folder_path, self.pushed, dirs_exist_ok=True)
        return "commit"


def _front_matter(path: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text().split("---", 2)[1])


def test_published_page_corpus_replaces_extraction(home: Path, host: Host, tmp_path: Path, capsys,
                                                   monkeypatch) -> None:
    host.fix()
    folder = write_release(tmp_path / "MADQA", host.url)
    assert _setup(folder, capsys, "--no-index")[0] == 0
    from madqa.loading_script import extract, release
    from madqa.loading_script.pages_repo import publish_pages

    pushed = tmp_path / "pushed"
    api = FakeHfApi(pushed)
    done = publish_pages(str(folder), "org/madqa-pages", api=api)
    assert done.pages == 18 and done.documents == 9
    assert sorted(done.files) == ["README.md", "data/pages/pages-00000-of-00001.parquet"]
    assert api.calls[0] == ("create_repo", {"repo_id": "org/madqa-pages", "repo_type": "dataset", "private": False,
                                            "exist_ok": True})  # fmt: skip
    meta = _front_matter(pushed / "README.md")
    assert meta["license"] == "cc-by-nc-4.0" and meta["configs"][0]["config_name"] == "pages"
    assert meta["madqa"]["source_revision"] == release.read_prepared(str(folder))["source_revision"]
    assert meta["madqa"]["extraction"]["ocr_language"] == extract.OCR_LANGUAGE
    assert {f["name"] for f in meta["dataset_info"]["features"]} == {"document", "page", "text", "text_source"}

    def no_extraction(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("extraction must not run with a pages repo")

    monkeypatch.setattr(extract, "extract_corpus", no_extraction)
    other = write_release(tmp_path / "copy" / "MADQA", host.url)
    rc, out = _setup(other, capsys, "--pages-repo", str(pushed), "--no-index")
    assert rc == 0 and out["stats"]["pages"] == 18
    assert release.read_prepared(str(other))["pages"]["source"] == f"pages repo {pushed}"
    from madqa.loading_script.load import load_pages

    assert load_pages(str(other)) == load_pages(str(folder))

    extracted = tmp_path / "extracted.jsonl"  # what `madqa extract --out` writes is accepted too
    extracted.write_text("".join(json.dumps(r) + "\n" for r in load_pages(str(folder))))
    third = write_release(tmp_path / "third" / "MADQA", host.url)
    assert _setup(third, capsys, "--pages-repo", str(extracted), "--no-index")[0] == 0
    assert load_pages(str(third)) == load_pages(str(folder))

    monkeypatch.setattr("huggingface_hub.HfApi", lambda token=None: FakeHfApi(tmp_path / "cli-pushed"))
    assert main(["publish", "pages", "--dataset", str(folder), "--repo", "org/pages2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pages"] == 18
    assert main(["publish", "pages", "--dataset", str(folder), "--repo", "not-a-repo"]) == 2


def test_incomplete_corpus_is_not_published(home: Path, host: Host, tmp_path: Path, capsys, caplog) -> None:
    folder = write_release(tmp_path / "MADQA", host.url)
    assert _setup(folder, capsys, "--no-index")[0] == 1
    assert main(["publish", "pages", "--dataset", str(folder), "--repo", "org/p"]) == 2
    assert "incomplete" in caplog.text


def test_hub_id_is_prepared_from_a_snapshot_and_then_works_offline(home: Path, host: Host, tmp_path: Path, capsys,
                                                                  monkeypatch) -> None:
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
    rc, out = _setup(Path("OrgX/MADQA"), capsys, "--no-index")
    assert rc == 0 and out["source_revision"] == snapshot.name and calls["snapshot_download"] == 1
    monkeypatch.setattr(huggingface_hub, "snapshot_download", None)  # any Hub access now fails loudly
    from madqa.loading_script.load import load_questions, resolve_dataset

    assert resolve_dataset("OrgX/MADQA").name == "hub--OrgX--MADQA"
    assert [q["id"] for q in load_questions("dev", "OrgX/MADQA")] == ["r2", "r3", "r4", "r5", "r6"]


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
    assert main(["run", "--dataset", str(folder), "--model", "py:test_release_setup:permit_reader", "-o", str(out),
                 "--no-progress"]) == 2  # fmt: skip
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
    rc, out = _setup(folder, capsys, "--fetch-retries", "0")
    assert rc == 1 and len(out["failures"]) == len(FACTS) and out["stats"]["pages"] == 0 and out["index"] is None
    assert all("connection" in f["reason"] for f in out["failures"])
    from madqa.loading_script.load import load_questions

    assert len(load_questions("dev", str(folder))) == 5  # the questions are there, the corpus is empty


def test_a_hub_dataset_cannot_make_setup_copy_local_files(home: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    snapshot = write_release(tmp_path / "hub" / "snapshots" / ("ab" * 20), "http://127.0.0.1:9/docs")
    secret = tmp_path / "secret.pdf"  # a local file the dataset's author must not be able to pull in
    secret.write_bytes(_pdf("SC-0001", "vault"))
    rows = [{"document": "a.pdf", "url": f"file://{secret}"}, {"document": "b.pdf", "url": str(secret)},
            {"document": "c.pdf", "url": None, "path": "../../../secret.pdf"}]  # fmt: skip
    schema = pa.schema([("document", pa.string()), ("url", pa.string()), ("path", pa.string())])
    pq.write_table(pa.Table.from_pylist([{"path": None, **r} for r in rows], schema=schema),
                   snapshot / "data" / "documents" / "document_urls-00000-of-00001.parquet")  # fmt: skip
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda repo, name, **kw: str(snapshot / name))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda repo, **kw: str(snapshot))
    rc, out = _setup(Path("OrgX/Hostile"), capsys, "--no-index")
    reasons = {f["document"]: f["reason"] for f in out["failures"]}
    assert rc == 1 and set(reasons) == {"a.pdf", "b.pdf", "c.pdf"}
    assert "only http(s) URLs" in reasons["a.pdf"] and "only http(s) URLs" in reasons["b.pdf"]
    assert "neither a url nor a local path" in reasons["c.pdf"]
    assert not list((home / "datasets").rglob("*.pdf"))

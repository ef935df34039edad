"""Shared by the release tests: a local document host, a release-schema folder writer, a scripted model, fixtures.

A ``ThreadingHTTPServer`` on 127.0.0.1 plays the documents' host (DocumentCloud for the real release): six PDFs,
one URL answering with an HTML error page, one that never answers in time, one 404 (``Host.fix`` repairs them).
``py:helpers.release_host:permit_reader`` is the scripted model spec of `madqa run`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.fakes import ScriptedModel
from helpers.paths import TESTS
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
    "harbour.pdf": ("HP-4471", "harbour"),
    "library.pdf": ("LB-2093", "library"),
    "orchard.pdf": ("OR-7310", "orchard"),
    "quarry.pdf": ("QY-5528", "quarry"),
    "tramway.pdf": ("TW-6642", "tramway"),
    "vineyard.pdf": ("VY-1187", "vineyard"),
    "broken_html.pdf": ("BH-3001", "lighthouse"),
    "slow.pdf": ("SL-4002", "glacier"),
    "gone.pdf": ("GN-5003", "meadow"),
}
BAD = {"broken_html.pdf": "html", "slow.pdf": "slow", "gone.pdf": "404"}

EVIDENCE = pa.list_(pa.struct([("document", pa.string()), ("page", pa.int64())]))
QA_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("question", pa.string()),
        ("answer_variants", pa.list_(pa.list_(pa.string()))),
        ("evidence", EVIDENCE),
        ("document_category", pa.string()),
        ("domain", pa.string()),
    ]
)
DOC_SCHEMA = pa.schema([("document", pa.string()), ("url", pa.string())])


def pdf_bytes(code: str, topic: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), f"Annual report of the municipal {topic} board, general overview.")
    doc.new_page().insert_text((72, 100), f"The {topic} operating permit number is {code} for this year.")
    return doc.tobytes()


class Host:
    """The documents' host: serves ``/docs/NAME``, misbehaving for the names in ``bad`` until ``fix()``."""

    def __init__(self) -> None:
        self.files = {name: pdf_bytes(*fact) for name, fact in FACTS.items()}
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
                body = (
                    b"<!DOCTYPE html><html><body>Rate limited, try later</body></html>"
                    if mode == "html"
                    else host.files[name]
                )
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
    return {
        "id": f"r{i}",
        "question": f"What is the operating permit number of the {topic} board?",
        "answer_variants": [[code]],
        "evidence": [{"document": doc, "page": page}],
        "document_category": "Permit",
        "domain": "Government",
    }


def write_release(root: Path, base_url: str) -> Path:
    """A folder in the release's schema whose documents config points at ``base_url``."""
    (root / "data" / "documents").mkdir(parents=True)
    (root / "README.md").write_text(RELEASE_CARD)
    names = sorted(FACTS)
    train = [_qa(0, "harbour.pdf"), _qa(1, "library.pdf")]
    dev = [
        _qa(2, "orchard.pdf"),
        _qa(3, "quarry.pdf"),
        _qa(4, "tramway.pdf"),
        _qa(5, "vineyard.pdf"),
        _qa(6, "slow.pdf"),
    ]
    test = [{**_qa(7, "harbour.pdf"), "answer_variants": [], "evidence": []}]
    for split, rows in (("train", train), ("dev", dev), ("test", test)):
        pq.write_table(pa.Table.from_pylist(rows, schema=QA_SCHEMA), root / "data" / f"{split}-00000-of-00001.parquet")
    docs = [{"document": n, "url": f"{base_url}/{n}"} for n in names]
    pq.write_table(
        pa.Table.from_pylist(docs, schema=DOC_SCHEMA),
        root / "data" / "documents" / "document_urls-00000-of-00001.parquet",
    )
    return root


def read_permit(text: str, tools: list[str]) -> Any:
    """Search the question's topic word, then answer the permit code read from the shown text."""
    topic = re.search(r"Question: What is the operating permit number of the (\w+) board", text).group(1)
    found = re.search(
        r"file (\S+), page (\d+)[^\n]*\n(?:(?!file \S+, page).*\n)*?.*permit number is ([A-Z]{2}-\d{4})", text
    )
    if found is None:
        return "search_documents", {"query": f"{topic} permit"}
    return "final_answer", {
        "answer": [found.group(3)],
        "citations": [{"document": found.group(1), "page": int(found.group(2))}],
    }


def permit_reader(**_: Any) -> ScriptedModel:
    """The scripted model of ``py:helpers.release_host:permit_reader`` (:mod:`fakes`)."""
    return ScriptedModel([read_permit], text_only=True, usage=None, model_id="permit-reader")


@pytest.fixture(name="home")
def home_fixture(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("MADQA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("MADQA_DATASET", raising=False)
    monkeypatch.delenv("MADQA_PAGES_REPO", raising=False)
    monkeypatch.syspath_prepend(str(TESTS))
    return tmp_path / "home"


@pytest.fixture(name="host")
def host_fixture() -> Iterator[Host]:
    h = Host()
    try:
        yield h
    finally:
        h.stop()


SETUP = ["setup", "--no-progress", "--fetch-timeout", "0.5", "--fetch-retries", "1", "--workers", "1", "--json"]


def setup_json(folder: Path, capsys, *extra: str) -> tuple[int, dict[str, Any]]:
    rc = main([*SETUP, "--dataset", str(folder), *extra])
    return rc, json.loads(capsys.readouterr().out)

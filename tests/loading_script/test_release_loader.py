"""The loader reads a local folder in the public release's exact schema (OxRML/MADQA), offline."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.release_host import DOC_SCHEMA, QA_SCHEMA, RELEASE_CARD  # the release's schema and one fixture card in it

from madqa.loading_script import load


def _qa(i: int, evidence: list[dict], answers: list[list[str]]) -> dict:
    return {
        "id": f"q{i}",
        "question": f"Question {i}?",
        "answer_variants": answers,
        "evidence": evidence,
        "document_category": "Annual Report",
        "domain": "Financial",
    }


@pytest.fixture
def release_folder(tmp_path: Path) -> Path:
    root = tmp_path / "MADQA"
    (root / "data" / "documents").mkdir(parents=True)
    (root / "README.md").write_text(RELEASE_CARD)
    train = [
        _qa(0, [{"document": "a.pdf", "page": 3}], [["$1.2M"], ["1.2 million"]]),
        _qa(1, [{"document": "a.pdf", "page": 3}, {"document": "a.pdf", "page": 9}], [["yes"]]),
    ]
    dev = [_qa(2, [{"document": "a.pdf", "page": 1}, {"document": "b.pdf", "page": 2}], [["red", "blue"]])]
    test = [_qa(3, [], [])]
    for name, rows in (("train", train), ("dev", dev), ("test", test)):
        pq.write_table(pa.Table.from_pylist(rows, schema=QA_SCHEMA), root / "data" / f"{name}-00000-of-00001.parquet")
    pdf = tmp_path / "remote" / "b.pdf"
    pdf.parent.mkdir()
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "Annual budget summary for the county library system 2023", fontsize=12)
    doc.save(pdf)
    docs = [{"document": "a.pdf", "url": None}, {"document": "b.pdf", "url": str(pdf)}]
    pq.write_table(
        pa.Table.from_pylist(docs, schema=DOC_SCHEMA),
        root / "data" / "documents" / "document_urls-00000-of-00001.parquet",
    )
    return root


def test_questions_are_normalised_with_hop_type(release_folder: Path):
    train = load.load_questions("train", release_folder)
    assert [q["hop_type"] for q in train] == ["single", "cross_page"]
    assert train[0]["answer_variants"] == [["$1.2M"], ["1.2 million"]]
    assert load.load_questions("dev", release_folder)[0]["hop_type"] == "cross_doc"
    test = load.load_questions("test", release_folder)
    assert test[0]["hop_type"] is None and test[0]["evidence"] == []


def test_gold_for_labelled_and_hidden_splits(release_folder: Path):
    assert [q["id"] for q in load.load_gold("dev", release_folder)] == ["q2"]
    with pytest.raises(load.DatasetUnavailableError, match="hidden"):
        load.load_gold("test", release_folder)


def test_documents_fill_missing_columns_and_resolve_urls(release_folder: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "dl_cache"))
    docs = load.load_documents(release_folder)
    assert [d["document"] for d in docs] == ["a.pdf", "b.pdf"]
    assert docs[0]["num_pages"] is None and docs[0]["path"] is None
    path = load.document_file(docs[1], release_folder)
    assert path.read_bytes().startswith(b"%PDF")
    with pytest.raises(load.DatasetUnavailableError, match="neither a local file nor a url"):
        load.document_file(docs[0], release_folder)


def test_dataset_spec_errors_are_clear(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MADQA_HOME", str(tmp_path / "nothing"))
    with pytest.raises(load.DatasetUnavailableError, match="madqa setup"):
        load.resolve_dataset("sample")
    with pytest.raises(load.DatasetUnavailableError, match="not a dataset folder"):
        load.resolve_dataset(tmp_path)
    assert load.resolve_dataset("OxRML/MADQA") == "OxRML/MADQA"
    with pytest.raises(load.DatasetUnavailableError, match="unknown split"):
        load.load_questions("validation", tmp_path)


def test_extract_command_on_a_release_folder(release_folder: Path, tmp_path: Path, monkeypatch):
    import json

    from madqa.cli import main

    monkeypatch.setenv("MADQA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "dl_cache"))
    out = tmp_path / "pages.jsonl"
    assert main(["extract", "--dataset", str(release_folder), "--output", str(out), "--no-progress"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["document"], r["page"], r["text_source"]) for r in rows] == [("b.pdf", 1, "pdf")]
    assert "county library" in rows[0]["text"]
    assert main(["extract", "--pdfs", str(tmp_path / "nope"), "--output", str(out)]) == 2

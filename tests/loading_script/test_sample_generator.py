"""Tests of the embedded sample benchmark generator (``madqa.loading_script.sample``).

The sample is generated once per session (``sample_fixture.py``, a few seconds); the properties of the files are
checked here: schema, determinism, corpus shape, layouts, scans readable by OCR. The paper's question properties
(extractive, grounded/minimal, paraphrased, multi-hop shares) are in test_sample_questions.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import statistics
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import helpers.sample_fixture as sample_fixture
import pymupdf
import pytest
from helpers.sample_fixture import LAYOUTS, TICK_GLYPHS, Sample, normalise

from madqa.loading_script.features import RELEASE_QA_COLUMNS, validate_question
from madqa.loading_script.sample import SAMPLE_VERSION, generate_sample

#: The shared ``sample`` fixture, made visible to pytest in this module.
generated_sample = sample_fixture.generated_sample


def _file_digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --- files and schema -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_files_and_document_records(sample: Sample) -> None:
    assert isinstance(SAMPLE_VERSION, str) and SAMPLE_VERSION
    pdfs = sorted(p.name for p in (sample.out / "documents").glob("*.pdf"))
    assert pdfs == sorted(d["document"] for d in sample.documents)
    for record in sample.documents:
        assert set(record) == {"document", "num_pages", "document_category", "domain", "sha256"}
        assert record["document"].endswith(".pdf") and re.fullmatch(r"[a-z0-9_]+\.pdf", record["document"])
        data = (sample.out / "documents" / record["document"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == record["sha256"]
        with pymupdf.open(stream=data, filetype="pdf") as pdf:
            assert pdf.page_count == record["num_pages"]


def test_manifest(sample: Sample) -> None:
    manifest = sample.manifest
    assert manifest["version"] == SAMPLE_VERSION and manifest["seed"] == 0
    assert set(manifest["documents"]) == {d["document"] for d in sample.documents}
    for record in sample.documents:
        entry = manifest["documents"][record["document"]]
        assert set(entry) == {"scanned_pages", "layouts", "ocr_probes"}
        assert set(entry["layouts"]) == {str(p) for p in range(1, record["num_pages"] + 1)}
        for tags in entry["layouts"].values():
            assert tags and set(tags) <= LAYOUTS
        assert {int(p) for p in entry["ocr_probes"]} == set(entry["scanned_pages"])
        for page in entry["scanned_pages"]:
            assert "scanned" in entry["layouts"][str(page)] and entry["ocr_probes"][str(page)]


def test_question_records(sample: Sample) -> None:
    doc_info = {d["document"]: d for d in sample.documents}
    ids = [q["id"] for q in sample.questions]
    assert ids == [f"q{i:04d}" for i in range(1, len(ids) + 1)]
    assert len({normalise(q["question"]) for q in sample.questions}) == len(ids)
    for q in sample.questions:
        assert tuple(q) == RELEASE_QA_COLUMNS  # no split, no hop_type
        validate_question(q, q["id"])
        pages = [(e["document"], e["page"]) for e in q["evidence"]]
        assert len(set(pages)) == len(pages), q["id"]
        for doc, page in pages:
            assert 1 <= page <= doc_info[doc]["num_pages"], q["id"]
        first = doc_info[q["evidence"][0]["document"]]
        assert (q["document_category"], q["domain"]) == (first["document_category"], first["domain"])


@pytest.mark.slow
def test_deterministic_and_seeded(sample: Sample, tmp_path: Path) -> None:
    out = tmp_path / "again"
    generate_sample(out, seed=0)
    assert _file_digests(out) == _file_digests(sample.out)
    (out / "documents" / "stale_leftover.pdf").write_bytes(b"%PDF-1.7")
    result = generate_sample(out, seed=1)  # overwrites in place
    assert not (out / "documents" / "stale_leftover.pdf").exists()
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["seed"] == 1
    changed = [
        d["document"]
        for d in result.documents
        if (out / "documents" / d["document"]).read_bytes() != (sample.out / "documents" / d["document"]).read_bytes()
    ]
    assert len(changed) >= 30, "the seed should change filler text, table figures and scan noise"
    shutil.rmtree(out)


#: sha256 of seed 0's questions.jsonl (every question, answer variant and evidence page) per SAMPLE_VERSION. The
#: labels do not depend on how PyMuPDF writes the PDFs, so a refactoring of the generator must leave this digest as
#: it is; a deliberate change to the labels bumps SAMPLE_VERSION and adds its digest here.
_QUESTIONS_SHA256 = {"1.0.0": "d837d894e27991c511b2ab8616e60ce8ad0eab49e1517ab3e99b7add81ff89d6"}


def test_labels_pinned_to_the_version(sample: Sample) -> None:
    digest = hashlib.sha256((sample.out / "questions.jsonl").read_bytes()).hexdigest()
    assert digest == _QUESTIONS_SHA256[SAMPLE_VERSION], (
        "the labels changed: bump SAMPLE_VERSION and pin the new digest"
    )


# --- corpus shape and layouts -----------------------------------------------------------------------------


def test_corpus_shape(sample: Sample) -> None:
    pages = [d["num_pages"] for d in sample.documents]
    categories = Counter(d["document_category"] for d in sample.documents)
    assert len(sample.documents) >= 40
    assert len(categories) >= 8 and len({d["domain"] for d in sample.documents}) >= 5
    assert sum(count >= 3 for count in categories.values()) >= 8, "documents come in clusters"
    assert min(pages) == 1 and max(pages) >= 100
    assert 1 <= sum(p >= 100 for p in pages) <= 2
    assert 2 <= statistics.median(pages) <= 5


def test_layouts_present_in_several_documents(sample: Sample) -> None:
    per_layout = Counter(
        tag
        for entry in sample.manifest["documents"].values()
        for tag in {t for tags in entry["layouts"].values() for t in tags}
    )
    for layout in LAYOUTS:
        assert per_layout[layout] >= 3, (layout, per_layout)


def test_scanned_pages_are_image_only(sample: Sample) -> None:
    scanned = [(doc, p) for doc, entry in sample.manifest["documents"].items() for p in entry["scanned_pages"]]
    assert 6 <= len(scanned) <= 12
    for key in scanned:
        assert sample.texts[key].strip() == "", key
        assert sample.images[key] == 1, key
    for key, text in sample.texts.items():
        if key not in scanned:
            assert text.strip(), f"{key} has no text layer"


def test_checkbox_ticks_are_drawn_not_text(sample: Sample) -> None:
    ticked = 0
    for key, paths in sample.drawings.items():
        if sample.scanned(*key):
            continue
        text = sample.texts[key]
        assert not any(glyph in text for glyph in TICK_GLYPHS), key
        assert not re.search(r"\[\s*[xX]\s*\]|(?<![\w.])[xX](?![\w.])", text), key
        items = [item for path in paths for item in path["items"]]
        assert any(item[0] == "re" for item in items), key
        diagonal = [
            item
            for item in items
            if item[0] == "l" and abs(item[1].x - item[2].x) > 0.5 and abs(item[1].y - item[2].y) > 0.5
        ]  # tick strokes; table rules are axis-parallel
        ticked += bool(diagonal)
    assert ticked >= 15


# --- OCR ------------------------------------------------------------------------------------------------


def _ocr_page(job: tuple[str, int]) -> str:
    """OCR one page the way `madqa extract` does (MuPDF's Tesseract binding, same DPI and language)."""
    from madqa.loading_script.extract import OCR_DPI, OCR_LANGUAGE, tessdata_dir

    path, page_number = job
    with pymupdf.open(path) as pdf:
        page = pdf[page_number - 1]
        textpage = page.get_textpage_ocr(dpi=OCR_DPI, full=True, language=OCR_LANGUAGE, tessdata=tessdata_dir())
        return page.get_text(textpage=textpage)


@pytest.mark.slow
def test_scanned_pages_are_readable_by_ocr(sample: Sample) -> None:
    if shutil.which("tesseract") is None:
        pytest.skip("tesseract is not installed")
    jobs = [
        (str(sample.out / "documents" / doc), page)
        for doc, entry in sample.manifest["documents"].items()
        for page in entry["scanned_pages"]
    ]
    with ProcessPoolExecutor(max_workers=2) as pool:
        texts = list(pool.map(_ocr_page, jobs))
    missing = []
    for (path, page), text in zip(jobs, texts, strict=True):
        read = normalise(text)
        doc = Path(path).name
        missing += [(doc, page, probe) for probe in sample.probes(doc, page) if normalise(probe) not in read]
    assert not missing

"""Tests of the embedded sample benchmark generator (``madqa.loading_script.sample``).

The sample is generated once per module (a few seconds); every property the benchmark relies on is checked
against the written files: schema, determinism, corpus shape, layouts, scans readable by OCR, and the
paper's question properties (extractive, grounded/minimal, paraphrased, multi-hop shares).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import statistics
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from madqa.loading_script.features import RELEASE_QA_COLUMNS, hop_type, is_yes_no, validate_question
from madqa.loading_script.sample import SAMPLE_VERSION, generate_sample

LAYOUTS = {"running_text", "multi_column", "table", "form", "checkbox", "scanned"}
TICK_GLYPHS = "\u2713\u2714\u2611\u2612\u2717\u2718\u00d7"


def tokens(text: str) -> list[str]:
    """Lowercase alphanumeric tokens (the extractiveness tokenisation)."""
    return re.findall(r"[a-z0-9]+", text.lower())


def normalise(text: str) -> str:
    """Lowercase with whitespace runs collapsed to one space."""
    return " ".join(text.lower().split())


def contains_run(haystack: list[str], needle: list[str]) -> bool:
    """Whether ``needle`` occurs as a contiguous run in ``haystack``."""
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


@dataclass
class Sample:
    """The generated sample plus lookups used by the tests."""

    out: Path
    seconds: float
    documents: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    manifest: dict[str, Any]
    texts: dict[tuple[str, int], str]  # text layer of every page
    drawings: dict[tuple[str, int], list[dict[str, Any]]]  # vector paths of checkbox pages
    images: dict[tuple[str, int], int]  # images per page

    def scanned(self, doc: str, page: int) -> bool:
        return page in self.manifest["documents"][doc]["scanned_pages"]

    def probes(self, doc: str, page: int) -> list[str]:
        return self.manifest["documents"][doc]["ocr_probes"].get(str(page), [])

    def layouts(self, doc: str, page: int) -> list[str]:
        return self.manifest["documents"][doc]["layouts"][str(page)]

    def evidence_tokens(self, question: dict[str, Any]) -> set[str]:
        """Tokens readable on the evidence pages: the text layer, or the OCR probes of scanned pages."""
        found: set[str] = set()
        for ev in question["evidence"]:
            key = (ev["document"], ev["page"])
            if self.scanned(*key):
                found.update(t for probe in self.probes(*key) for t in tokens(probe))
            else:
                found.update(tokens(self.texts[key]))
        return found


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _file_digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    out = tmp_path_factory.mktemp("sample")
    started = time.perf_counter()
    result = generate_sample(out, seed=0)
    seconds = time.perf_counter() - started
    texts: dict[tuple[str, int], str] = {}
    drawings: dict[tuple[str, int], list[dict[str, Any]]] = {}
    images: dict[tuple[str, int], int] = {}
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for record in result.documents:
        name = record["document"]
        with pymupdf.open(out / "documents" / name) as pdf:
            for index, page in enumerate(pdf, start=1):
                texts[(name, index)] = page.get_text()
                images[(name, index)] = len(page.get_images())
                if "checkbox" in manifest["documents"][name]["layouts"][str(index)]:
                    drawings[(name, index)] = page.get_drawings()
    return Sample(out, seconds, _read_jsonl(out / "documents.jsonl"), _read_jsonl(out / "questions.jsonl"),
                  manifest, texts, drawings, images)


# --- files and schema -------------------------------------------------------------------------------------



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


def test_deterministic_and_seeded(sample: Sample, tmp_path: Path) -> None:
    out = tmp_path / "again"
    generate_sample(out, seed=0)
    assert _file_digests(out) == _file_digests(sample.out)
    (out / "documents" / "stale_leftover.pdf").write_bytes(b"%PDF-1.7")
    result = generate_sample(out, seed=1)  # overwrites in place
    assert not (out / "documents" / "stale_leftover.pdf").exists()
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["seed"] == 1
    changed = [d["document"] for d in result.documents
               if (out / "documents" / d["document"]).read_bytes()
               != (sample.out / "documents" / d["document"]).read_bytes()]
    assert len(changed) >= 30, "the seed should change filler text, table figures and scan noise"
    shutil.rmtree(out)


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
    per_layout = Counter(tag for entry in sample.manifest["documents"].values()
                         for tag in {t for tags in entry["layouts"].values() for t in tags})
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
        diagonal = [item for item in items if item[0] == "l" and abs(item[1].x - item[2].x) > 0.5
                    and abs(item[1].y - item[2].y) > 0.5]  # tick strokes; table rules are axis-parallel
        ticked += bool(diagonal)
    assert ticked >= 15


# --- question properties ----------------------------------------------------------------------------------


def test_hop_types_and_answer_kinds(sample: Sample) -> None:
    questions = sample.questions
    n = len(questions)
    hops = Counter(hop_type(q["evidence"]) for q in questions)
    assert n >= 150
    assert 0.05 <= hops["cross_page"] / n <= 0.12, hops
    assert 0.06 <= hops["cross_doc"] / n <= 0.13, hops
    yes_no = [q for q in questions if is_yes_no(q["answer_variants"])]
    assert 0.05 <= len(yes_no) / n <= 0.15
    assert {q["answer_variants"][0][0] for q in yes_no} == {"Yes", "No"}
    assert sum(len(q["answer_variants"][0]) > 1 for q in questions) >= 10
    unit = re.compile(r"^\$[\d,.]+$|\d\s*(%|minutes|hours|miles|million gallons|pts|days|F)\b")
    assert sum(bool(unit.search(q["answer_variants"][0][0])) for q in questions) >= 40
    assert sum(len(q["answer_variants"]) > 1 for q in questions) >= n // 2, "realistic alternative forms"


def test_visual_questions(sample: Sample) -> None:
    def on(layout: str) -> list[dict[str, Any]]:
        return [q for q in sample.questions
                if any(layout in sample.layouts(e["document"], e["page"]) for e in q["evidence"])]

    assert len(on("table")) >= 25
    assert len(on("form")) >= 25
    assert len(on("scanned")) >= 12
    checkbox_yes_no = [q for q in on("checkbox") if is_yes_no(q["answer_variants"])]
    assert len(checkbox_yes_no) >= 8


def test_answers_are_extractive(sample: Sample) -> None:
    failures = []
    for q in sample.questions:
        if is_yes_no(q["answer_variants"]):
            continue
        available = sample.evidence_tokens(q)
        if not any(set(tokens(" ".join(variant))) <= available for variant in q["answer_variants"]):
            failures.append((q["id"], q["answer_variants"][0]))
    assert not failures


def test_scanned_evidence_answers_are_ocr_probes(sample: Sample) -> None:
    """An answer found only on a scanned page must be one of that page's OCR probes."""
    for q in sample.questions:
        if is_yes_no(q["answer_variants"]):
            continue
        scanned = [(e["document"], e["page"]) for e in q["evidence"] if sample.scanned(e["document"], e["page"])]
        if not scanned:
            continue
        text_tokens = {t for e in q["evidence"] if not sample.scanned(e["document"], e["page"])
                       for t in tokens(sample.texts[(e["document"], e["page"])])}
        probe_tokens = {t for key in scanned for probe in sample.probes(*key) for t in tokens(probe)}
        assert any(set(tokens(" ".join(v))) <= text_tokens | probe_tokens for v in q["answer_variants"]), q["id"]


def test_answer_values_are_not_repeated_elsewhere_in_the_document(sample: Sample) -> None:
    """Grounded/minimal: a single-page answer value (with digits) appears only on its evidence page."""
    pages_of: dict[str, list[int]] = {}
    for doc, page in sample.texts:
        pages_of.setdefault(doc, []).append(page)
    failures = []
    for q in sample.questions:
        if hop_type(q["evidence"]) != "single" or is_yes_no(q["answer_variants"]):
            continue
        doc, page = q["evidence"][0]["document"], q["evidence"][0]["page"]
        for value in q["answer_variants"][0]:
            if not any(ch.isdigit() for ch in value):
                continue
            needle = tokens(value)
            # a value printed apart from its unit (a table cell under a "million gallons" caption) is matched
            # by its numeric core, from its first to its last token holding a digit
            numeric = [i for i, t in enumerate(needle) if any(ch.isdigit() for ch in t)]
            core = needle[numeric[0] : numeric[-1] + 1]
            if not sample.scanned(doc, page):
                evidence_words = tokens(sample.texts[(doc, page)])
                assert contains_run(evidence_words, core), (q["id"], value)
                if not contains_run(evidence_words, needle):
                    needle = core
            for other in pages_of[doc]:
                if other != page and contains_run(tokens(sample.texts[(doc, other)]), needle):
                    failures.append((q["id"], value, other))
    assert not failures


def test_multi_hop_evidence_pages_all_contribute(sample: Sample) -> None:
    """Every page of a multi-hop evidence set shares a content token with the question or the answer."""
    stop = {"the", "a", "an", "of", "and", "or", "in", "on", "at", "to", "for", "by", "what", "which", "who", "how",
            "did", "does", "is", "was", "were", "its", "their", "her", "his", "it", "that", "with", "from"}
    for q in sample.questions:
        if hop_type(q["evidence"]) == "single":
            continue
        wanted = {t for t in tokens(q["question"] + " " + " ".join(q["answer_variants"][0])) if t not in stop}
        for e in q["evidence"]:
            key = (e["document"], e["page"])
            page_tokens = ({t for p in sample.probes(*key) for t in tokens(p)} if sample.scanned(*key)
                           else set(tokens(sample.texts[key])))
            assert wanted & page_tokens, (q["id"], key)


def test_questions_do_not_leak_locations_or_copy_text(sample: Sample) -> None:
    for q in sample.questions:
        text = q["question"]
        assert ".pdf" not in text.lower(), q["id"]
        assert not re.search(r"\bpages?\s+\d+", text, re.IGNORECASE), q["id"]
        assert "_" not in text, q["id"]
        words = tokens(text)
        grams = {tuple(words[i : i + 6]) for i in range(len(words) - 5)}
        for e in q["evidence"]:
            key = (e["document"], e["page"])
            if sample.scanned(*key):
                continue
            page_words = tokens(sample.texts[key])
            page_grams = {tuple(page_words[i : i + 6]) for i in range(len(page_words) - 5)}
            assert not grams & page_grams, (q["id"], sorted(grams & page_grams))


# --- OCR ------------------------------------------------------------------------------------------------


def _ocr_page(job: tuple[str, int]) -> str:
    """OCR one page the way `madqa extract` does (MuPDF's Tesseract binding, same DPI and language)."""
    from madqa.loading_script.extract import OCR_DPI, OCR_LANGUAGE, tessdata_dir

    path, page_number = job
    with pymupdf.open(path) as pdf:
        page = pdf[page_number - 1]
        textpage = page.get_textpage_ocr(dpi=OCR_DPI, full=True, language=OCR_LANGUAGE, tessdata=tessdata_dir())
        return page.get_text(textpage=textpage)


def test_scanned_pages_are_readable_by_ocr(sample: Sample) -> None:
    if shutil.which("tesseract") is None:
        pytest.skip("tesseract is not installed")
    jobs = [(str(sample.out / "documents" / doc), page) for doc, entry in sample.manifest["documents"].items()
            for page in entry["scanned_pages"]]
    with ProcessPoolExecutor(max_workers=2) as pool:
        texts = list(pool.map(_ocr_page, jobs))
    missing = []
    for (path, page), text in zip(jobs, texts):
        read = normalise(text)
        doc = Path(path).name
        missing += [(doc, page, probe) for probe in sample.probes(doc, page) if normalise(probe) not in read]
    assert not missing

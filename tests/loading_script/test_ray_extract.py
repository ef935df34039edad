"""``madqa extract --ray``: the sample's pages extracted on a local 2-node Ray cluster are byte-identical to the local
run's, with the same skipped files and messages; a file that fails its retries on the cluster is reported by name."""

from __future__ import annotations

import shutil
from pathlib import Path

import helpers.ray_fixtures as ray_fixtures
import pytest
from helpers.pdfs import scanned_pdf
from helpers.ray_fixtures import needs_ray

cluster = ray_fixtures.cluster  # this module's cluster
pytestmark = [needs_ray, pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Debian tesseract-ocr")]


@pytest.fixture(scope="module")
def corpus(layout, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample's PDFs, a scanned page (OCR on the cluster) and a corrupt file (skipped with its reason)."""
    folder = tmp_path_factory.mktemp("ray_pdfs")
    for pdf in sorted((layout.sample_dir / "documents").glob("*.pdf"))[:12]:
        shutil.copy(pdf, folder / pdf.name)
    scanned_pdf(folder / "zz_scan.pdf", "Permit BP-4417 approved for Harbor Lane", dpi=150)
    (folder / "zz_corrupt.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    return folder


@pytest.mark.slow
def test_cli_extract_ray_output_is_byte_identical(cluster, corpus: Path, tmp_path: Path, monkeypatch, caplog) -> None:
    from madqa.cli import main

    outputs = {}
    for mode in ("local", "ray"):
        monkeypatch.setenv("MADQA_HOME", str(tmp_path / mode))  # a cache each: both really extract
        out = tmp_path / f"{mode}.jsonl"
        extra = ["--ray"] if mode == "ray" else ["--workers", "2"]
        caplog.clear()
        assert main(["extract", "--pdfs", str(corpus), "--output", str(out), "--no-progress", *extra]) == 0
        assert "skipping zz_corrupt.pdf" in caplog.text
        outputs[mode] = out.read_bytes()
    assert b"BP-4417" in outputs["ray"] and b'"text_source": "ocr"' in outputs["ray"]
    assert outputs["ray"] == outputs["local"]


@pytest.mark.slow
def test_report_and_cache_match_the_local_run(cluster, corpus: Path, tmp_path: Path) -> None:
    from madqa.loading_script.extract import extract_corpus
    from madqa.loading_script.extract_ray import ray_pool

    local = extract_corpus(corpus, cache_dir=tmp_path / "a", workers=2, progress=False)
    remote = extract_corpus(corpus, cache_dir=tmp_path / "b", progress=False, pool=ray_pool())
    assert remote.pages == local.pages and remote.skipped == local.skipped and remote.warnings == local.warnings
    assert remote.ocr_pages == local.ocr_pages >= 1 and remote.sha256 == local.sha256
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(p.name for p in (tmp_path / "b").iterdir())
    again = extract_corpus(corpus, cache_dir=tmp_path / "b", progress=False, pool=ray_pool())
    assert again.cached == len(local.sha256) and again.pages == local.pages  # the driver's cache served them


def crash_on_scan(path: Path, **kwargs):
    """A worker function that kills its process on the scanned file (a segfault in a PDF library, say)."""
    import os

    from madqa.loading_script.pdf_text import extract_pdf

    if path.name == "zz_scan.pdf":
        os._exit(139)
    return extract_pdf(path, **kwargs)


@pytest.mark.slow
def test_a_file_that_kills_its_worker_is_reported_by_name(cluster, corpus: Path, tmp_path: Path) -> None:
    from madqa.loading_script.extract import extract_corpus
    from madqa.loading_script.extract_ray import ray_pool

    report = extract_corpus(corpus, cache_dir=None, progress=False, pool=ray_pool(retries=1), worker=crash_on_scan)
    skipped = dict(report.skipped)
    assert "worker lost on the cluster after 2 tries" in skipped["zz_scan.pdf"]
    assert "zz_corrupt.pdf" in skipped and len(report.sha256) == 12  # the others went on

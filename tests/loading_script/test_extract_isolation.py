"""Corpus-level failure isolation of the page extraction (issue 11): a killed, crashing or hanging worker loses
only its file, which is named with the reason; results are cached per file as they finish; a rerun does only the
missing; files that are not PDFs, broken links and undecodable names each get one clear message."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pymupdf
import pytest
from helpers.paths import TESTS

from madqa.loading_script.extract import ExtractSettings, extract_corpus
from madqa.loading_script.pdf_text import PdfResult, extract_pdf

LOG_ENV = "MADQA_TEST_WORKER_LOG"
EXTRACT_LOGGER = "madqa.loading_script.extract"
KILLED = "worker killed by signal 9 (SIGKILL: out of memory?)"
NOT_PDF = "not a PDF (no %PDF- header in the first 1024 bytes): it looks like "


def _record(path: Path) -> None:
    log = os.environ.get(LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(path.name + "\n")


def recording_worker(path: Path, **kwargs: object) -> PdfResult:
    """Test worker (imported by name in the pool's processes): notes each file it is given, then extracts it."""
    _record(path)
    return extract_pdf(path, **kwargs)  # type: ignore[arg-type]


def hostile_worker(path: Path, **kwargs: object) -> PdfResult:
    """Test worker: extracts, then dies by SIGKILL on KILLME (as the OOM killer does), hangs on SLEEPY, raises on
    RAISE; the file name alone decides, so production code carries no test hook."""
    result = recording_worker(path, **kwargs)
    if "KILLME" in path.name:
        os.kill(os.getpid(), signal.SIGKILL)
    if "SLEEPY" in path.name:
        time.sleep(600)
    if "RAISE" in path.name:
        raise RuntimeError("boom on purpose")
    return result


def _text_pdf(path: Path, *lines: str) -> Path:
    doc = pymupdf.open()
    for line in lines:
        doc.new_page().insert_text((72, 100), line, fontsize=12)
    doc.save(path)
    return path


def _rows(report) -> list[tuple[str, int, str, str]]:
    return [(r["document"], r["page"], r["text"].strip(), r["text_source"]) for r in report.pages]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == EXTRACT_LOGGER and r.levelno == logging.WARNING]


ALPHA = ("Alpha minutes of the harbour board meeting", "Alpha second page lists every attendee")
GAMMA = "Gamma permit register for the ferry terminal"
DELTA = "Delta invoice for the dredging contract"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    _text_pdf(pdfs / "a_alpha.pdf", *ALPHA)
    _text_pdf(pdfs / "c_gamma.pdf", GAMMA)
    _text_pdf(pdfs / "d_delta.pdf", DELTA)
    return pdfs


@pytest.mark.slow
def test_killed_worker_loses_only_its_file_and_a_rerun_does_only_it(folder, tmp_path, monkeypatch, caplog):
    _text_pdf(folder / "b_KILLME.pdf", "Beta text that is lost when its worker is killed")
    _text_pdf(folder / "e_RAISE.pdf", "Epsilon text whose worker raises")
    cache = tmp_path / "cache"
    with caplog.at_level(logging.WARNING, logger=EXTRACT_LOGGER):
        report = extract_corpus(folder, cache_dir=cache, workers=2, progress=False, worker=hostile_worker)
    assert report.skipped == [("b_KILLME.pdf", KILLED), ("e_RAISE.pdf", "worker error: RuntimeError: boom on purpose")]
    assert _rows(report) == [
        ("a_alpha.pdf", 1, ALPHA[0], "pdf"),
        ("a_alpha.pdf", 2, ALPHA[1], "pdf"),
        ("c_gamma.pdf", 1, GAMMA, "pdf"),
        ("d_delta.pdf", 1, DELTA, "pdf"),
    ]
    assert sorted(_warnings(caplog)) == [
        f"skipping b_KILLME.pdf: {KILLED}",
        "skipping e_RAISE.pdf: worker error: RuntimeError: boom on purpose",
    ]
    assert len(list(cache.glob("*.json"))) == 3  # each finished file was cached on its own

    log = tmp_path / "calls.txt"
    monkeypatch.setenv(LOG_ENV, str(log))
    again = extract_corpus(folder, cache_dir=cache, workers=2, progress=False, worker=recording_worker)
    assert sorted(log.read_text().split()) == ["b_KILLME.pdf", "e_RAISE.pdf"]
    assert (again.cached, again.skipped) == (3, [])
    assert ("b_KILLME.pdf", 1, "Beta text that is lost when its worker is killed", "pdf") in _rows(again)
    assert len(again.pages) == 6


@pytest.mark.slow
def test_files_are_cached_as_they_finish_so_a_killed_run_resumes(folder, tmp_path, monkeypatch):
    _text_pdf(folder / "b_SLEEPY.pdf", "Beta text of the file in flight when the run is killed")
    cache = tmp_path / "cache"
    script = (
        "import sys; from pathlib import Path; from test_extract_isolation import hostile_worker; "
        "from madqa.loading_script.extract import extract_corpus; "
        "extract_corpus(Path(sys.argv[1]), cache_dir=Path(sys.argv[2]), workers=2, progress=False, "
        "worker=hostile_worker, file_timeout_s=None)"
    )
    # added in front of what is there: a checkout run with its own tree first on the path keeps it (else the child
    # would import the installed tree's extractor, another EXTRACTOR_VERSION, and its cache would not be found)
    given = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(TESTS), *given])}
    run = subprocess.Popen([sys.executable, "-c", script, str(folder), str(cache)], env=env, start_new_session=True)
    try:
        give_up = time.monotonic() + 120  # a safety net, not a measurement
        while len(list(cache.glob("*.json"))) < 3 and run.poll() is None and time.monotonic() < give_up:
            time.sleep(0.2)
    finally:
        os.killpg(run.pid, signal.SIGKILL)  # the run and its workers, in the middle of b_SLEEPY.pdf
        run.wait()
    assert len(list(cache.glob("*.json"))) == 3
    log = tmp_path / "calls.txt"
    monkeypatch.setenv(LOG_ENV, str(log))
    again = extract_corpus(folder, cache_dir=cache, workers=2, progress=False, worker=recording_worker)
    assert (log.read_text().split(), again.cached, again.skipped) == (["b_SLEEPY.pdf"], 3, [])
    assert [d for d, page, _, _ in _rows(again) if page == 1] == [
        "a_alpha.pdf",
        "b_SLEEPY.pdf",
        "c_gamma.pdf",
        "d_delta.pdf",
    ]


@pytest.mark.slow
def test_a_hanging_file_times_out_and_the_others_go_on(folder, caplog):
    _text_pdf(folder / "b_SLEEPY.pdf", "Beta text of a file whose worker hangs")
    _text_pdf(folder / "e_epsilon.pdf", "Epsilon text extracted after the hang")
    with caplog.at_level(logging.WARNING, logger=EXTRACT_LOGGER):
        report = extract_corpus(folder, workers=2, progress=False, worker=hostile_worker, file_timeout_s=3)
    assert report.skipped == [("b_SLEEPY.pdf", "timed out after 3 s")]
    assert [d for d, page, _, _ in _rows(report) if page == 1] == [
        "a_alpha.pdf",
        "c_gamma.pdf",
        "d_delta.pdf",
        "e_epsilon.pdf",
    ]
    assert _warnings(caplog) == ["skipping b_SLEEPY.pdf: timed out after 3 s"]


def _png_bytes() -> bytes:
    return pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 4, 4), False).tobytes("png")


@pytest.mark.slow
def test_listing_names_every_file_it_does_not_extract(tmp_path, caplog):
    pdfs = tmp_path / "messy"
    pdfs.mkdir()
    _text_pdf(pdfs / "good.pdf", "Good text layer of an ordinary report")
    _text_pdf(pdfs / "UPPER.PDF", "Upper case suffix is still a PDF file")
    _text_pdf(pdfs / ".hidden.pdf", "Hidden file text that is left out")
    latin1 = _text_pdf(pdfs / "latin1.pdf", "Latin-1 named file text about the cafe")
    os.rename(os.fsencode(latin1), os.fsencode(pdfs) + b"/caf\xe9.pdf")  # a name that is not valid UTF-8
    (pdfs / "error_page.pdf").write_text("<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head></html>")
    (pdfs / "picture.pdf").write_bytes(_png_bytes())
    (pdfs / "notes.txt").write_text("not listed: not named .pdf")
    os.symlink("loop.pdf", pdfs / "loop.pdf")
    os.symlink("missing.pdf", pdfs / "gone.pdf")
    os.symlink("good.pdf", pdfs / "link_to_good.pdf")
    (pdfs / "folder.pdf").mkdir()
    escaped = "caf\\xe9.pdf"
    cache = tmp_path / "cache"
    with caplog.at_level(logging.WARNING, logger=EXTRACT_LOGGER):
        report = extract_corpus(pdfs, cache_dir=cache, workers=2, progress=False)
    assert report.skipped == [
        ("error_page.pdf", NOT_PDF + "an HTML page"),
        ("folder.pdf", "a folder, not a file"),
        ("gone.pdf", "dangling symbolic link (its target 'missing.pdf' does not exist)"),
        ("loop.pdf", "symbolic link loop (points to 'loop.pdf')"),
        ("picture.pdf", NOT_PDF + "a PNG image"),
    ]
    utf8_note = "the file name is not valid UTF-8: extracted under this name (undecodable bytes written as \\xNN)"
    assert report.warnings == [
        (".hidden.pdf", "hidden file (the name starts with '.'): left out"),
        (escaped, utf8_note),
    ]
    assert _rows(report) == [
        ("UPPER.PDF", 1, "Upper case suffix is still a PDF file", "pdf"),
        (escaped, 1, "Latin-1 named file text about the cafe", "pdf"),
        ("good.pdf", 1, "Good text layer of an ordinary report", "pdf"),
        ("link_to_good.pdf", 1, "Good text layer of an ordinary report", "pdf"),
    ]
    expected_log = [f"skipping {name}: {reason}" for name, reason in report.skipped]
    expected_log += [f"{name}: {message}" for name, message in report.warnings]
    assert sorted(_warnings(caplog)) == sorted(expected_log)  # each once
    again = extract_corpus(pdfs, cache_dir=cache, workers=2, progress=False)
    assert (_rows(again), again.cached) == (_rows(report), 4)  # the escaped name is stable across runs


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_named(folder):
    os.chmod(folder / "c_gamma.pdf", 0)
    report = extract_corpus(folder, workers=1, progress=False)
    assert report.skipped == [("c_gamma.pdf", "cannot read file: Permission denied")]


def test_settings_are_part_of_the_cache_key_and_in_process_errors_are_isolated(folder, tmp_path):
    cache = tmp_path / "cache"
    assert extract_corpus(folder, cache_dir=cache, workers=1, progress=False).cached == 0
    assert extract_corpus(folder, cache_dir=cache, workers=1, progress=False).cached == 3
    other = ExtractSettings(ocr_lang="eng", dpi=200)
    assert extract_corpus(folder, cache_dir=cache, workers=1, progress=False, settings=other).cached == 0
    assert extract_corpus(folder, cache_dir=cache, workers=1, progress=False, settings=other).cached == 3
    _text_pdf(folder / "b_RAISE.pdf", "Beta text whose worker raises in this process")
    report = extract_corpus(folder, workers=1, progress=False, worker=hostile_worker)
    assert report.skipped == [("b_RAISE.pdf", "worker error: RuntimeError: boom on purpose")]
    assert len(report.pages) == 4


@pytest.mark.slow
def test_extract_exit_status_is_non_zero_for_skipped_files_only_with_strict(folder, tmp_path, monkeypatch, caplog):
    from madqa.cli import main
    from madqa.loading_script.io import read_jsonl

    monkeypatch.setenv("MADQA_HOME", str(tmp_path / "home"))
    (folder / "error_page.pdf").write_text("<html><body>Service unavailable</body></html>")
    out = tmp_path / "pages.jsonl"
    base = ["extract", "--pdfs", str(folder), "--output", str(out), "--workers", "2", "--no-progress"]
    with caplog.at_level(logging.WARNING):
        assert main(base) == 0
    assert [(r["document"], r["page"]) for r in read_jsonl(out)] == [
        ("a_alpha.pdf", 1),
        ("a_alpha.pdf", 2),
        ("c_gamma.pdf", 1),
        ("d_delta.pdf", 1),
    ]
    assert f"skipping error_page.pdf: {NOT_PDF}an HTML page" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main([*base, "--strict"]) == 1
    assert "--strict: 1 file(s) skipped" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        assert main([*base, "--ocr-lang", "eng rus"]) == 2
        assert main([*base, "--file-timeout", "-1"]) == 2
    assert (
        "--ocr-lang eng rus: 'eng rus' is not a Tesseract language list (codes joined by '+', e.g. eng+rus)"
        in caplog.text
    )
    assert "--file-timeout -1: use a number of seconds >= 0 (0: no limit)" in caplog.text


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Debian tesseract-ocr")
def test_ocr_lang_names_the_missing_debian_package(folder, tmp_path, monkeypatch, caplog):
    from madqa.cli import main

    monkeypatch.setenv("MADQA_HOME", str(tmp_path / "home"))
    argv = ["extract", "--pdfs", str(folder), "--output", str(tmp_path / "p.jsonl"), "--ocr-lang", "eng+chi_zzz"]
    with caplog.at_level(logging.ERROR):
        assert main(argv) == 2
    assert "--ocr-lang eng+chi_zzz: OCR language chi_zzz is not installed in " in caplog.text
    assert ": install the Debian package tesseract-ocr-chi-zzz (installed: " in caplog.text


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Debian tesseract-ocr")
def test_ocrd_files_are_redone_when_the_installed_tesseract_data_changes(folder, tmp_path, monkeypatch):
    from madqa.loading_script import extract

    src = pymupdf.open()
    src.new_page().insert_text((72, 120), "Scanned permit BP-4417", fontsize=24)
    scan = pymupdf.open()
    scan.new_page().insert_image(scan[0].rect, pixmap=src[0].get_pixmap(dpi=200))
    scan.save(folder / "b_scan.pdf")
    cache = tmp_path / "cache"
    first = extract_corpus(folder, cache_dir=cache, workers=1, progress=False)
    assert ("b_scan.pdf", 1, "ocr") in [(d, p, source) for d, p, _, source in _rows(first)]
    assert extract_corpus(folder, cache_dir=cache, workers=1, progress=False).cached == 4
    real = extract._installed_data
    monkeypatch.setattr(extract, "_installed_data", lambda tessdata: [*real(tessdata), "rus"])
    again = extract_corpus(folder, cache_dir=cache, workers=1, progress=False)
    assert (again.cached, _rows(again)) == (3, _rows(first))  # only the OCR'd file was redone


def test_worker_ends_are_named_in_words():
    from madqa.loading_script.pdf_pool import exit_reason

    assert exit_reason(-signal.SIGSEGV) == "worker killed by signal 11 (SIGSEGV: a crash in the PDF or OCR library)"
    assert exit_reason(-signal.SIGTERM) == "worker killed by signal 15 (SIGTERM)"
    assert exit_reason(1) == "worker exited with status 1 in the middle of the task"

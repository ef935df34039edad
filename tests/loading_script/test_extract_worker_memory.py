"""A memory limit on extraction workers that needs no cgroup (issue 45 item 5): each local worker caps its address
space (RLIMIT_AS); a file whose worker allocates past it is skipped with a "memory limit reached" reason and the
other files are extracted. The probe really allocates past the limit: no signal is faked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import TESTS
from helpers.pdfs import one_page_pdf

from madqa.loading_script.extract import extract_corpus
from madqa.loading_script.pdf_text import PdfResult, extract_pdf

HERE = Path(__file__).parent
LIMIT_MIB = 1024
#: What the probe allocates on a HUGE file: past the limit, yet little enough to be harmless if the limit is gone.
PROBE_BYTES = (LIMIT_MIB + 512) << 20


def allocating_worker(path: Path, **kwargs: object) -> PdfResult:
    """Test worker (imported by name in the pool's processes): on a HUGE file, allocates (and touches)
    :data:`PROBE_BYTES` before extracting, as a runaway decoder would."""
    if "HUGE" in path.name:
        held = bytearray(PROBE_BYTES)  # zero-filled: every page touched
        assert held[-1] == 0
    return extract_pdf(path, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    for name, line in [
        ("a_alpha.pdf", "Alpha minutes of the harbour board meeting"),
        ("b_HUGE.pdf", "Beta text of the file whose worker runs out of memory"),
        ("c_gamma.pdf", "Gamma permit register for the ferry terminal"),
    ]:
        (pdfs / name).write_bytes(one_page_pdf(line))
    return pdfs


def test_a_file_past_the_worker_memory_limit_is_skipped_by_name_and_the_others_are_extracted(folder):
    report = extract_corpus(
        folder,
        workers=1,
        isolate=True,
        ocr=False,
        progress=False,
        worker=allocating_worker,
        worker_memory_mib=LIMIT_MIB,
    )
    assert report.skipped == [
        (
            "b_HUGE.pdf",
            f"memory limit reached: the file needs more memory than an extraction worker may use ({LIMIT_MIB} MiB; "
            "madqa extract --worker-memory)",
        )
    ]
    assert sorted(report.num_pages) == ["a_alpha.pdf", "c_gamma.pdf"]
    assert "Gamma permit register" in report.pages[1]["text"]


@pytest.mark.slow
def test_the_cli_takes_the_limit_and_refuses_a_bad_one(folder, tmp_path):
    script = (
        "import sys; from test_extract_worker_memory import allocating_worker; "
        "from madqa.loading_script import extract; extract.extract_pdf = allocating_worker; "
        "from madqa.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    env["MADQA_HOME"] = str(tmp_path / "home")
    base = [sys.executable, "-c", script, "extract", "--pdfs", str(folder), "--no-progress", "--no-ocr", "--json"]
    out = tmp_path / "pages.jsonl"
    done = subprocess.run(
        [*base, "-o", str(out), "--workers", "1", "--worker-memory", str(LIMIT_MIB)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "skipping b_HUGE.pdf: memory limit reached" in done.stderr
    assert [json.loads(line)["document"] for line in out.read_text().splitlines()] == ["a_alpha.pdf", "c_gamma.pdf"]
    bad = subprocess.run([*base, "-o", str(out), "--worker-memory", "100"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2
    assert (
        bad.stderr.strip().splitlines()[-1].endswith("--worker-memory 100: use a number of MiB >= 512 (0: no limit)")
    )

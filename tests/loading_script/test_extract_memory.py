"""Memory of the extraction (issue 28 items 1 and 2): in a memory cgroup the OOM killer takes a worker, not the
parent (workers raise their oom_score_adj); a killed worker costs its file only and the output of the others is
written; a worker dies with its parent (no orphans); the parent holds no page text; one OCR worker stays under the
README's bound on an A0 page holding one progressive RGB JPEG."""

from __future__ import annotations

import json
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
from helpers.polling import wait_until

from madqa.loading_script.pdf_text import PdfResult, extract_pdf

HOLD_ENV = "MADQA_TEST_HOLD_PID"
HERE = Path(__file__).parent


def holding_worker(path: Path, **kwargs: object) -> PdfResult:
    """Test worker (imported by name in the pool's processes): on a HOLD file, writes its pid and waits forever."""
    if "HOLD" in path.name:
        Path(os.environ[HOLD_ENV]).write_text(str(os.getpid()))
        time.sleep(600)
    return extract_pdf(path, **kwargs)  # type: ignore[arg-type]


def _text_pdf(path: Path, line: str) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), line, fontsize=12)
    doc.save(path)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in {"Z", "X"}


def _oom_score_adj(pid: int) -> int:
    return int(Path(f"/proc/{pid}/oom_score_adj").read_text())


def _start_cli(folder: Path, out: Path, hold_file: Path, home: Path) -> subprocess.Popen[str]:
    """`madqa extract` in a child process, with :func:`holding_worker` in place of the real one."""
    script = (
        "import sys; from test_extract_memory import holding_worker; "
        "from madqa.loading_script import extract; extract.extract_pdf = holding_worker; "
        "from madqa.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS)]),
        HOLD_ENV: str(hold_file),
        "MADQA_HOME": str(home),
    }
    argv = [
        sys.executable,
        "-c",
        script,
        "extract",
        "--pdfs",
        str(folder),
        "--output",
        str(out),
        "--workers",
        "2",
        "--no-progress",
        "--no-ocr",
        "--file-timeout",
        "0",
    ]
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    _text_pdf(pdfs / "a_alpha.pdf", "Alpha minutes of the harbour board meeting")
    _text_pdf(pdfs / "b_HOLD.pdf", "Beta text of the file whose worker is killed")
    _text_pdf(pdfs / "c_gamma.pdf", "Gamma permit register for the ferry terminal")
    _text_pdf(pdfs / "d_delta.pdf", "Delta invoice for the dredging contract")
    return pdfs


def test_a_worker_killed_as_by_the_oom_killer_costs_its_file_only_and_the_rest_is_written(folder, tmp_path):
    hold, out = tmp_path / "hold.pid", tmp_path / "out" / "pages.jsonl"
    run = _start_cli(folder, out, hold, tmp_path / "home")
    try:
        wait_until(lambda: hold.is_file() and hold.read_text() != "", "the worker to pick up b_HOLD.pdf", limit_s=120)
        worker = int(hold.read_text())
        assert _oom_score_adj(worker) == 1000 > _oom_score_adj(run.pid)  # the OOM killer's first choice
        os.kill(worker, signal.SIGKILL)  # what the OOM killer does
        log, _ = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == 0, log
    assert "skipping b_HOLD.pdf: worker killed by signal 9 (SIGKILL: out of memory?)" in log
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["document"], r["page"]) for r in rows] == [("a_alpha.pdf", 1), ("c_gamma.pdf", 1), ("d_delta.pdf", 1)]
    assert "Gamma permit register" in rows[1]["text"]
    assert not _alive(worker)
    assert [p.name for p in out.parent.iterdir()] == ["pages.jsonl"]  # the spool is gone


def test_workers_die_with_their_parent(folder, tmp_path):
    hold = tmp_path / "hold.pid"
    run = _start_cli(folder, tmp_path / "pages.jsonl", hold, tmp_path / "home")
    try:
        wait_until(lambda: hold.is_file() and hold.read_text() != "", "the worker to pick up b_HOLD.pdf", limit_s=120)
        worker = int(hold.read_text())
        os.kill(run.pid, signal.SIGKILL)  # the parent only, as the OOM killer would; its worker is mid-file
        run.wait()
        wait_until(lambda: not _alive(worker), "the orphaned worker to end", limit_s=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        if hold.is_file() and _alive(int(hold.read_text())):
            os.kill(int(hold.read_text()), signal.SIGKILL)


def test_the_spool_keeps_no_rows_in_memory_and_gives_them_back_sorted(tmp_path):
    from madqa.loading_script.page_spool import PageSpool

    with PageSpool(tmp_path) as spool:
        spool.add([{"document": "b.pdf", "page": 2, "text": "zwei"}, {"document": "b.pdf", "page": 1, "text": "ß"}])
        spool.add([{"document": "a.pdf", "page": 1, "text": "eins"}])
        assert spool.count == 3
        rows = list(spool.rows())
        path = spool.path
    assert [(r["document"], r["page"], r["text"]) for r in rows] == [
        ("a.pdf", 1, "eins"),
        ("b.pdf", 1, "ß"),
        ("b.pdf", 2, "zwei"),
    ]
    assert not path.exists()


A0 = (2384, 3370)  # points
MAKE_A0_SCAN = """
import sys
from PIL import Image, ImageDraw, ImageFont
import pymupdf
dpi, out = int(sys.argv[1]), sys.argv[2]
size = (round(2384 / 72 * dpi), round(3370 / 72 * dpi))
image = Image.new("RGB", size, (250, 247, 238))
draw = ImageDraw.Draw(image)
font = ImageFont.load_default(size=dpi // 4)
for row in range(12):
    draw.text((300, 400 + row * dpi), f"Harbour board minutes, row {row}: dredging permit BP-{4400 + row}",
              font=font, fill=(25, 25, 35))
jpeg = __import__("io").BytesIO()
image.save(jpeg, "JPEG", quality=80, progressive=True)  # 4:2:0, as Pillow and most scanners write it
del image, draw
doc = pymupdf.open()
doc.new_page(width=2384, height=3370).insert_image(pymupdf.Rect(0, 0, 2384, 3370), stream=jpeg.getvalue())
doc.save(out)
"""
MEASURE = """
import json, sys
from pathlib import Path
from madqa.loading_script.pdf_text import extract_pdf, tessdata_dir
result = extract_pdf(Path(sys.argv[1]), tessdata=tessdata_dir())
import resource
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux: the decoder process, if any
print(json.dumps({"peak_kib": peak, "child_peak_kib": child, "pages": result.pages, "warnings": result.warnings,
                  "error": result.error}))
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Debian tesseract-ocr")
def test_an_ocr_worker_stays_under_the_bound_on_an_a0_page_with_a_progressive_rgb_jpeg(tmp_path):
    from madqa.loading_script.ocr_images import WORKER_BOUND_MIB

    pdf = tmp_path / "a0_progressive.pdf"
    subprocess.run([sys.executable, "-c", MAKE_A0_SCAN, "300", str(pdf)], check=True, timeout=300)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(pdf)], check=True, timeout=600, capture_output=True, text=True
    )
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["error"] is None and measured["warnings"] == []
    peak_mib = measured["peak_kib"] / 1024
    assert peak_mib < WORKER_BOUND_MIB, f"worker peak {peak_mib:.0f} MiB"  # before the fix: 684 MiB
    child_mib = measured["child_peak_kib"] / 1024  # the JPEG decoder runs in a child: it is under the bound too
    assert 0 < child_mib < WORKER_BOUND_MIB, f"decoder peak {child_mib:.0f} MiB"
    (page,) = measured["pages"]
    assert page["text_source"] == "ocr"
    assert "dredging permit BP-4411" in page["text"]  # the scaled stand-in still reads well at 127 dpi


def _jpeg(size: tuple[int, int], **save: object) -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(out, "JPEG", **save)
    return out.getvalue()


def test_jpeg_frames_tell_progressive_ones_and_their_decoding_cost():
    from madqa.loading_script.ocr_images import jpeg_frame

    baseline, progressive = jpeg_frame(_jpeg((800, 600))), jpeg_frame(_jpeg((800, 600), progressive=True))
    full_colour = jpeg_frame(_jpeg((800, 600), progressive=True, subsampling=0))
    assert (baseline.progressive, progressive.progressive) == (False, True)
    assert (progressive.width, progressive.height, progressive.sampling) == (800, 600, ((2, 2), (1, 1), (1, 1)))
    assert progressive.coefficient_bytes == (100 * 75 + 2 * 50 * 38) * 128  # 4:2:0: chroma blocks are halved
    assert full_colour.coefficient_bytes == 3 * 100 * 75 * 128
    assert progressive.decoded_pixels(390, 290) == 400 * 300  # libjpeg scales by 1/2, not below the size asked
    assert progressive.decoded_pixels(1600, 1200) == 800 * 600  # never up
    assert jpeg_frame(b"\x89PNG\r\n") is None and jpeg_frame(b"\xff\xd8\xff") is None


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="needs Debian tesseract-ocr")
def test_a_progressive_jpeg_over_the_budget_costs_its_page_with_a_message_not_the_worker(tmp_path, monkeypatch):
    from madqa.loading_script import ocr_images
    from madqa.loading_script.pdf_text import tessdata_dir

    doc = pymupdf.open()
    doc.new_page().insert_image(pymupdf.Rect(0, 0, 595, 842), stream=_jpeg((1240, 1754), progressive=True))
    doc.new_page().insert_text((72, 100), "Second page with an ordinary text layer of its own", fontsize=12)
    doc.save(tmp_path / "scan.pdf")
    monkeypatch.setattr(ocr_images, "SELF_DECODE_BYTES", 1)
    monkeypatch.setattr(ocr_images, "DECODE_BUDGET_BYTES", 2**20)  # as an A0 4:4:4 scan is for the real budget
    result = extract_pdf(tmp_path / "scan.pdf", tessdata=tessdata_dir())
    assert [(r["page"], r["text_source"]) for r in result.pages] == [(1, "none"), (2, "pdf")]
    assert result.warnings == [
        "page 1: OCR failed (OcrError: a progressive JPEG of 1240x1754 pixels needs 8 MiB to decode (libjpeg holds "
        "all its coefficients), more than an OCR worker's 600 MiB allow); no text"
    ]

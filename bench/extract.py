"""`madqa bench extract`: the extraction benchmark, measured side by side in one run.

* Text layer: our extractor vs raw ``page.get_text()`` on the same PDFs.
* OCR: the project's OCR (render at the capped pixel count, orientation/script detection, libtesseract) vs the
  raw ``tesseract`` command on the same page images at the same dpi and languages, with the same parallelism
  (``processes`` worker processes each, ``OMP_THREAD_LIMIT=1`` in both, as in the extraction pool), and the
  peak RSS of each OCR worker.
* Memory: one fresh process OCRs a 300 dpi grayscale A0 scan; its peak RSS (``VmHWM``) is the bound that
  :data:`madqa.loading_script.pdf_text.DEFAULT_MAX_PIXELS` is chosen for (target: under 600 MB).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import subprocess
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from madqa.loading_script.extract import extract_corpus
from madqa.loading_script.pdf_text import ExtractSettings, extract_pdf, has_usable_text, normalise_text, tessdata_dir

from .measure import Spread, alternate, best_of, child_peak_rss_mib, cpu_seconds, emit, peak_rss_mib

#: OCR runs per side at least (the pages that need OCR, repeated).
MIN_OCR_RUNS = 24
_A0_TEXT = (
    "The council met on Tuesday to review the harbour budget and approved the new ferry timetable. "
    "Members discussed the permit for the warehouse on Harbor Lane and the cost of repairs. "
)


def _raw_get_text(pdfs: Sequence[Path]) -> int:
    import pymupdf

    n = 0
    for path in pdfs:
        with pymupdf.open(path) as doc:
            for page in doc:
                page.get_text()
                n += 1
    return n


def _ours_text_layer(pdfs: Sequence[Path]) -> int:
    return sum(len(extract_pdf(path, tessdata=None, ocr=False).pages) for path in pdfs)


# --- OCR: worker-side tasks (top level, so spawned workers can import them) ------------------------------------


def _init_worker() -> None:
    os.environ["OMP_THREAD_LIMIT"] = "1"  # as the extraction pool does: one core per worker process


def _ready(_: int) -> int:
    """Start a worker: import what both sides import (not Tesseract's models: loading them is part of the cost)."""
    import numpy  # noqa: F401
    import pymupdf  # noqa: F401

    from madqa.loading_script import ocr  # noqa: F401

    time.sleep(0.2)  # long enough that every worker of the pool gets one
    return os.getpid()


def _ours_page(path: str, index: int, tessdata: str, settings: ExtractSettings) -> tuple[str, float, float]:
    """OCR one page the project's way, from the PDF: the languages used, this worker's peak RSS, CPU seconds."""
    import pymupdf

    from madqa.loading_script.ocr import ocr_page

    cpu = cpu_seconds()
    with pymupdf.open(path) as doc:
        done = ocr_page(
            doc[index],
            tessdata=tessdata,
            dpi=settings.dpi,
            max_pixels=settings.max_pixels,
            ocr_lang=settings.ocr_lang,
            osd=settings.osd,
        )
    return done.languages, peak_rss_mib(), cpu_seconds() - cpu


def _cli_page(image: str, dpi: float, langs: str, tessdata: str) -> tuple[float, float]:
    """OCR one page image with the ``tesseract`` command: its peak RSS (``VmHWM`` sampled every 10 ms; it only
    grows) and CPU seconds."""
    command = ["tesseract", image, "stdout", "--tessdata-dir", tessdata, "--dpi", str(round(dpi)), "-l", langs]
    cpu = cpu_seconds(resource.RUSAGE_CHILDREN)
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        peak = child_peak_rss_mib(proc)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with status {proc.returncode}")
    return peak, cpu_seconds(resource.RUSAGE_CHILDREN) - cpu


# --- OCR: the comparison ---------------------------------------------------------------------------------------


def _ocr_pages(pdfs: Sequence[Path]) -> list[tuple[Path, int]]:
    import pymupdf

    found = []
    for path in pdfs:
        with pymupdf.open(path) as doc:
            found += [(path, page.number) for page in doc if not has_usable_text(normalise_text(page.get_text()))]
    return found


def _render_images(
    pages: Sequence[tuple[Path, int]], folder: Path, settings: ExtractSettings
) -> list[tuple[str, float]]:
    """The page images the project's OCR sees (grayscale, capped), as PNG files for the raw command."""
    import pymupdf

    from madqa.loading_script.ocr import render_gray

    images = []
    for n, (path, index) in enumerate(pages):
        with pymupdf.open(path) as doc:
            pix, dpi = render_gray(doc[index], settings.dpi, settings.max_pixels)
        target = folder / f"page{n:04d}.png"
        pix.save(str(target))
        images.append((str(target), dpi))
    return images


def _pool(processes: int) -> ProcessPoolExecutor:
    pool = ProcessPoolExecutor(
        max_workers=processes, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker
    )
    list(pool.map(_ready, range(processes * 2)))  # start the workers before the clock does
    return pool


def bench_ocr(
    pdfs: Sequence[Path], *, processes: int = 2, repeats: int = 2, settings: ExtractSettings | None = None
) -> dict[str, Any] | None:
    """OCR throughput and per-worker peak RSS: the project's OCR vs the raw ``tesseract`` command, one run.

    Returns:
        The figures, or ``None`` without Tesseract or without pages that need OCR. ``*_cpu_busy`` is the CPU time
        of the OCR work over the wall time of all ``processes``: near 1.0 means every core busy, above 1.0 more
        threads than cores (oversubscription).
    """
    tessdata = tessdata_dir()
    pages = _ocr_pages(pdfs)
    if tessdata is None or not pages:
        return None
    settings = settings or ExtractSettings()
    distinct = len(pages)
    pages = pages * -(-MIN_OCR_RUNS // distinct)  # few pages: each several times, for a steadier rate
    with tempfile.TemporaryDirectory(prefix="madqa-bench-") as tmp:
        images = _render_images(pages[:distinct], Path(tmp), settings) * (len(pages) // distinct)
        ours_s = cli_s = float("inf")
        ours_rss = cli_rss = ours_busy = cli_busy = 0.0
        langs: list[str] = []
        for _ in range(repeats):  # alternate, best of each: the machine's other load hits both alike
            with _pool(processes) as pool:
                start = time.perf_counter()
                done = list(
                    pool.map(
                        _ours_page,
                        [str(p) for p, _ in pages],
                        [i for _, i in pages],
                        [tessdata] * len(pages),
                        [settings] * len(pages),
                    )
                )
                elapsed = time.perf_counter() - start
            if elapsed < ours_s:
                ours_s, ours_busy = elapsed, sum(cpu for *_, cpu in done) / (elapsed * processes)
            langs = [lang for lang, *_ in done]
            ours_rss = max([ours_rss, *(rss for _, rss, _ in done)])
            with _pool(processes) as pool:
                start = time.perf_counter()
                runs = list(
                    pool.map(
                        _cli_page, [i for i, _ in images], [d for _, d in images], langs, [tessdata] * len(images)
                    )
                )
                elapsed = time.perf_counter() - start
            if elapsed < cli_s:
                cli_s, cli_busy = elapsed, sum(cpu for _, cpu in runs) / (elapsed * processes)
            cli_rss = max([cli_rss, *(rss for rss, _ in runs)])
    return {
        "ocr_pages": distinct,
        "ocr_runs": len(pages),
        "ocr_processes": processes,
        "ocr_dpi": settings.dpi,
        "ocr_languages": sorted(set(langs)),
        "ocr_pages_per_s": len(pages) / ours_s,
        "tesseract_cli_pages_per_s": len(pages) / cli_s,
        "ocr_vs_cli_ratio": cli_s / ours_s,
        "ocr_cpu_busy": ours_busy,
        "tesseract_cli_cpu_busy": cli_busy,
        "ocr_worker_peak_rss_mib": ours_rss,
        "tesseract_cli_peak_rss_mib": cli_rss,
    }


def _a0_scan(path: Path, dpi: int = 300) -> Path:
    """A grayscale A0 scan at ``dpi``: three columns of text, photographed, as an image-only page."""
    import pymupdf

    width, height = pymupdf.paper_size("a0")
    src = pymupdf.open()
    sheet = src.new_page(width=width, height=height)
    column = (width - 120) / 3
    for n in range(3):
        box = pymupdf.Rect(60 + n * column, 60, 60 + (n + 1) * column - 20, height / 2)
        sheet.insert_textbox(box, _A0_TEXT * 30, fontsize=14)
    pix = sheet.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
    doc = pymupdf.open()
    doc.new_page(width=width, height=height).insert_image(pymupdf.Rect(0, 0, width, height), pixmap=pix)
    doc.save(path, deflate=True)
    return path


def _a0_worker(path: str, tessdata: str, settings: ExtractSettings) -> tuple[float, float, int]:
    start = time.perf_counter()
    result = extract_pdf(Path(path), tessdata=tessdata, settings=settings)
    chars = sum(len(row["text"]) for row in result.pages)
    return peak_rss_mib(), time.perf_counter() - start, chars


def bench_a0(settings: ExtractSettings | None = None) -> dict[str, Any] | None:
    """Peak RSS of one fresh OCR worker process on a 300 dpi grayscale A0 scan (``None`` without Tesseract)."""
    tessdata = tessdata_dir()
    if tessdata is None:
        return None
    settings = settings or ExtractSettings()
    with tempfile.TemporaryDirectory(prefix="madqa-bench-a0-") as tmp:
        path = _a0_scan(Path(tmp) / "a0_scan.pdf")
        with ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker
        ) as pool:
            rss, seconds, chars = pool.submit(_a0_worker, str(path), tessdata, settings).result()
    return {"a0_peak_rss_mib": rss, "a0_seconds": seconds, "a0_chars": chars, "a0_max_pixels": settings.max_pixels}


def bench_extract(
    pdfs: Sequence[Path],
    *,
    repeats: int = 3,
    workers: int | None = None,
    ocr_processes: int = 2,
    ocr_repeats: int = 2,
    a0: bool = True,
) -> dict[str, Any]:
    """Measure text-layer and OCR throughput and peak RSS.

    Returns:
        A dict of figures: pages/s for raw PyMuPDF, our extractor (1 process) and the pool, the ratio of our
        time to raw time; the OCR comparison of :func:`bench_ocr` and the A0 figures of :func:`bench_a0`
        (their keys are absent without Tesseract); peak RSS of this process.
    """
    counted: list[int] = []
    timed = alternate(
        {"raw": lambda _: counted.append(_raw_get_text(pdfs)), "ours": lambda _: _ours_text_layer(pdfs)},
        repeats=repeats,
    )
    (raw_s,), (ours_s,), n_pages = timed.best_per_item("raw"), timed.best_per_item("ours"), counted[-1]
    pool_s, _ = best_of(
        1, lambda: len(extract_corpus(list(pdfs), cache_dir=None, workers=workers, ocr=False, progress=False).pages)
    )
    figures: dict[str, Any] = {
        "pdfs": len(pdfs),
        "pages": n_pages,
        "raw_get_text_pages_per_s": n_pages / raw_s,
        "text_layer_pages_per_s": n_pages / ours_s,
        "text_layer_vs_raw_time_ratio": ours_s / raw_s,
        "text_layer_vs_raw_time_ratio_per_repeat": vars(timed.ratio("ours", "raw")),
        "load": timed.load_text(),
        "text_layer_pool_pages_per_s": n_pages / pool_s,
    }
    figures.update(bench_ocr(pdfs, processes=ocr_processes, repeats=ocr_repeats) or {})
    if a0:
        figures.update(bench_a0() or {})
    figures["peak_rss_mib"] = peak_rss_mib()  # this process (children: per worker, above)
    return figures


#: Command lines that ``madqa bench extract --help`` shows (each parses: tests/cli/test_cli_conventions.py).
EXAMPLES = ("madqa bench extract --no-a0 --json",)


def configure(parser: argparse.ArgumentParser) -> None:
    """Options of `madqa bench extract`."""
    parser.add_argument("--pdfs", default=None, help="folder of PDFs (default: the sample's, after `madqa setup`)")
    parser.add_argument("--repeats", type=int, default=3, help="best-of repeats for the text-layer timings")
    parser.add_argument("--workers", type=int, default=None, help="processes for the text-layer pool figure")
    parser.add_argument(
        "--ocr-processes",
        type=int,
        default=2,
        help="processes for both OCR figures, ours and the raw tesseract command",
    )
    parser.add_argument("--ocr-repeats", type=int, default=2, help="best-of repeats for the OCR timings")
    parser.add_argument("--no-a0", action="store_true", help="skip the A0-scan memory figure (about a minute)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")


def run(args: argparse.Namespace) -> int:
    """Run the extraction benchmark and print its figures."""
    from pathlib import Path

    from madqa.bench import BenchError
    from madqa.loading_script.extract import list_pdfs
    from madqa.loading_script.paths import Layout

    folder = Path(args.pdfs) if args.pdfs else Layout.default().sample_dir / "documents"
    if not folder.is_dir():
        raise BenchError(f"no PDF folder at {folder}: run `madqa setup` or pass --pdfs FOLDER")
    for option in ("repeats", "ocr_processes", "ocr_repeats"):
        if getattr(args, option) < 1:
            raise BenchError(f"--{option.replace('_', '-')} {getattr(args, option)}: use 1 or more")
    pdfs = list_pdfs(folder)
    if not pdfs:
        raise BenchError(f"no *.pdf files in {folder}")
    r = bench_extract(
        pdfs,
        repeats=args.repeats,
        workers=args.workers,
        ocr_processes=args.ocr_processes,
        ocr_repeats=args.ocr_repeats,
        a0=not args.no_a0,
    )
    lines = [
        f"madqa bench extract: {r['pdfs']} PDFs, {r['pages']} pages ({folder})",
        f"  raw page.get_text()          {r['raw_get_text_pages_per_s']:10.1f} pages/s  (reference)",
        f"  text layer, 1 process        {r['text_layer_pages_per_s']:10.1f} pages/s  "
        f"time ratio vs raw {r['text_layer_vs_raw_time_ratio']:.2f}x (target <= 1.5x; best of each; per repeat "
        f"{Spread(**r['text_layer_vs_raw_time_ratio_per_repeat']).text('x')}; {r['load']})",
        f"  text layer, process pool     {r['text_layer_pool_pages_per_s']:10.1f} pages/s",
    ]
    if "ocr_pages" in r:
        lines += [
            f"  OCR: {r['ocr_pages']} pages ({r['ocr_runs']} runs) at {r['ocr_dpi']} dpi, {r['ocr_processes']} "
            f"processes each, languages {', '.join(r['ocr_languages'])}",
            f"    project's OCR (render, OCR, OSD) {r['ocr_pages_per_s']:6.2f} pages/s  cores busy "
            f"{r['ocr_cpu_busy']:.2f}  peak RSS per worker {r['ocr_worker_peak_rss_mib']:.0f} MiB",
            f"    raw tesseract CLI, same images   {r['tesseract_cli_pages_per_s']:6.2f} pages/s  cores busy "
            f"{r['tesseract_cli_cpu_busy']:.2f}  peak RSS per tesseract {r['tesseract_cli_peak_rss_mib']:.0f} MiB",
            f"    ratio project / raw CLI          {r['ocr_vs_cli_ratio']:6.2f}x (target >= 0.9x)",
        ]
    else:
        lines.append("  OCR                          n/a (no Tesseract, or no page without a text layer)")
    if "a0_peak_rss_mib" in r:
        lines.append(
            f"  A0 scan (300 dpi gray), 1 OCR worker: peak RSS {r['a0_peak_rss_mib']:.0f} MiB (target < 600),"
            f" {r['a0_seconds']:.0f} s, {r['a0_chars']} characters, cap {r['a0_max_pixels']:,} pixels"
        )
    lines.append(f"  peak RSS of this process     {r['peak_rss_mib']:.0f} MiB")
    return emit(r, lines, args.json)

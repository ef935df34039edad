"""`madqa extract`: build the page-text corpus (PDF text layer + OCR) for a folder of PDFs or a dataset's PDFs.

Exit status: 0 done (each skipped file is named in the log with its reason); 1 with ``--strict`` when a file was
skipped; 2 a user error; 3 pages needed OCR but Tesseract is missing (text-layer pages were extracted).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from madqa.cli import conventions

HELP = "extract the page-text corpus of a folder of PDFs, or of a dataset's documents (downloaded by URL)"
EXAMPLES = (
    "madqa extract --pdfs scans/ -o pages.parquet",
    "madqa extract --dataset OxRML/MADQA -o pages.jsonl --no-ocr --json",
)
logger = logging.getLogger("madqa.extract")


def add_extraction_options(parser: argparse.ArgumentParser) -> None:
    """``--ocr-lang`` and ``--strict``, shared with `madqa setup`."""
    parser.add_argument(
        "--ocr-lang",
        metavar="LANGS",
        default=None,
        help="Tesseract languages for OCR, joined by '+' (e.g. eng+rus); default: chosen from "
        "the installed Tesseract data",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit with status 1 when any file was skipped (without it: 0, each skipped file named)",
    )


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `madqa extract`."""
    from madqa.loading_script.extract import DEFAULT_FILE_TIMEOUT_S, DEFAULT_WORKER_MEMORY_MIB

    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--pdfs", type=Path, help="a folder of PDF files")
    conventions.add_dataset_argument(src, default_text=None)
    conventions.add_output_file(
        parser, "output file: .parquet (pages schema) or .jsonl", required=True, metavar="PAGES", old=("--out",)
    )
    parser.add_argument("--workers", type=int, default=None, help="processes (default: all CPUs)")
    parser.add_argument("--no-ocr", action="store_true", help="text layer only (pages without one get empty text)")
    add_extraction_options(parser)
    parser.add_argument(
        "--file-timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"stop and skip a file still running after S seconds (unset: {DEFAULT_FILE_TIMEOUT_S:g}; 0: no limit)",
    )
    parser.add_argument(
        "--worker-memory",
        type=int,
        default=None,
        metavar="MIB",
        help="address-space limit of each worker process (RLIMIT_AS): a file that needs more is skipped with "
        f"'memory limit reached' (unset: {DEFAULT_WORKER_MEMORY_MIB}; 0: no limit; not with --ray)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="debugging: run files in this process, without crash or time-limit isolation",
    )
    conventions.add_no_progress_flag(parser)
    conventions.add_json_flag(parser, "the extraction report (pages, files, skipped files)")
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="extract on a Ray cluster (pip install 'madqa[ray]'): alone, RAY_ADDRESS or a new local "
        "Ray; or HOST:PORT / ray://HOST:10001 (--workers: files in flight)",
    )


def extract_settings_from(args: argparse.Namespace) -> Any:
    """The :class:`ExtractSettings` the options ask for (``None``: defaults); a bad ``--ocr-lang`` is a user error."""
    from madqa.cli.errors import UserError
    from madqa.loading_script.extract import ExtractSettings, check_ocr_languages, tessdata_dir

    if not args.ocr_lang:
        return None
    problem = check_ocr_languages(args.ocr_lang, None if args.no_ocr else tessdata_dir())
    if problem:
        raise UserError(f"--ocr-lang {args.ocr_lang}: {problem}")
    return ExtractSettings(ocr_lang=args.ocr_lang)


def run(args: argparse.Namespace) -> int:
    """Extract, write the pages, report skipped files; exit 3 when OCR was needed but Tesseract is missing."""
    from madqa.cli.errors import UserError
    from madqa.loading_script.extract import (
        DEFAULT_FILE_TIMEOUT_S,
        DEFAULT_WORKER_MEMORY_MIB,
        MIN_WORKER_MEMORY_MIB,
        extract_corpus,
        scan_pdfs,
    )
    from madqa.loading_script.page_spool import PageSpool
    from madqa.loading_script.paths import Layout

    if args.output.suffix not in {".parquet", ".jsonl"}:
        raise UserError(f"-o {args.output}: use a .parquet or .jsonl file name")
    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers {args.workers}: use 1 or more")
    if args.file_timeout is not None and args.file_timeout < 0:
        raise UserError(f"--file-timeout {args.file_timeout:g}: use a number of seconds >= 0 (0: no limit)")
    timeout = DEFAULT_FILE_TIMEOUT_S if args.file_timeout is None else (args.file_timeout or None)
    if args.worker_memory is not None and (args.worker_memory < 0 or 0 < args.worker_memory < MIN_WORKER_MEMORY_MIB):
        raise UserError(
            f"--worker-memory {args.worker_memory}: use a number of MiB >= {MIN_WORKER_MEMORY_MIB} (0: no limit)"
        )
    memory = DEFAULT_WORKER_MEMORY_MIB if args.worker_memory is None else (args.worker_memory or None)
    settings = extract_settings_from(args)
    pool = None
    if args.ray is not None:
        if args.in_process:
            raise UserError("--ray and --in-process exclude each other")
        from madqa.loading_script.extract_ray import ray_pool
        from madqa.loading_script.ray_cluster import RayUnavailableError, require_ray

        try:
            require_ray()
        except RayUnavailableError as exc:
            raise UserError(str(exc)) from None
        pool = ray_pool(None if args.ray == "local" else args.ray, in_flight=args.workers)
    layout = Layout.default()
    pdfs: Any
    if args.pdfs is not None:
        if not args.pdfs.is_dir():
            raise UserError(f"--pdfs {args.pdfs}: not a folder")
        try:
            pdfs = scan_pdfs(args.pdfs)
        except OSError as exc:
            raise UserError(f"--pdfs {args.pdfs}: cannot list the folder ({exc.strerror or exc})") from None
        if not pdfs.files and not pdfs.refused:
            raise UserError(f"--pdfs {args.pdfs}: no *.pdf files in the folder")
    else:
        from madqa.loading_script.load import DatasetUnavailableError, materialize_documents

        slug = args.dataset.replace("/", "__").replace(".", "_")
        try:
            pdfs = materialize_documents(args.dataset, layout.root / "pdfs" / slug)
        except DatasetUnavailableError as exc:
            raise UserError(str(exc)) from None
        if not pdfs:
            raise UserError("no PDF files to extract")
    # Page rows wait on disk, not in this process: in a memory cgroup the parent stays smaller than a worker.
    with PageSpool(args.output.parent) as spool:
        report = extract_corpus(
            pdfs,
            cache_dir=layout.page_cache_dir,
            workers=args.workers,
            ocr=not args.no_ocr,
            progress=not args.no_progress,
            settings=settings,
            file_timeout_s=timeout,
            isolate=not args.in_process,
            pool=pool,
            spool=spool,
            worker_memory_mib=memory,
        )
        _write_pages(args.output, spool)
    logger.info(
        "%d pages from %d PDFs (%d by OCR, %d skipped files, %d warnings) -> %s",
        report.page_count,
        len(report.num_pages),
        report.ocr_pages,
        len(report.skipped),
        len(report.warnings),
        args.output,
    )
    if args.json:
        summary = {
            "output": str(args.output),
            "pages": report.page_count,
            "files": len(report.num_pages),
            "ocr_pages": report.ocr_pages,
            "skipped": [{"file": str(name), "reason": reason} for name, reason in report.skipped],
            "warnings": len(report.warnings),
            "ocr_missing": bool(report.ocr_missing),
        }
        sys.stdout.write(json.dumps(summary, ensure_ascii=False) + "\n")
    if any(reason.startswith("timed out") for _, reason in report.skipped):
        logger.info(
            "a file that timed out may just be long: run again with a larger --file-timeout (the others are cached)"
        )
    if report.ocr_missing:
        return 3
    if args.strict and report.skipped:
        logger.error("--strict: %d file(s) skipped (named above)", len(report.skipped))
        return 1
    return 0


def _write_pages(out: Path, spool: Any) -> None:
    """Write the spooled rows, sorted, as JSONL or Parquet (pages schema), streaming: never all rows in memory."""
    from madqa.loading_script.io import write_jsonl

    if out.suffix == ".jsonl":
        write_jsonl(out, spool.rows())  # type: ignore[arg-type]
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    from madqa.loading_script.features import PAGE_FEATURES  # imports datasets: only now, with the workers gone

    schema = PAGE_FEATURES.arrow_schema
    tmp = out.with_name(f".{out.name}.tmp")
    with pq.ParquetWriter(str(tmp), schema) as writer:
        batch: list[dict[str, Any]] = []
        for row in spool.rows():
            batch.append(row)
            if len(batch) == 2000:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch.clear()
        writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    tmp.replace(out)

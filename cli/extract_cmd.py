"""`madqa extract`: build the page-text corpus (PDF text layer + OCR) for a folder of PDFs or a dataset's PDFs."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

HELP = "extract the page-text corpus of a folder of PDFs, or of a dataset's documents (downloaded by URL)"
logger = logging.getLogger("madqa.extract")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `madqa extract`."""
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--pdfs", type=Path, help="a folder of PDF files")
    src.add_argument("--dataset", help="a dataset spec whose documents config lists the PDFs (e.g. OxRML/MADQA)")
    parser.add_argument("--out", type=Path, required=True, help="output file: .parquet (pages schema) or .jsonl")
    parser.add_argument("--workers", type=int, default=None, help="processes (default: all CPUs)")
    parser.add_argument("--no-ocr", action="store_true", help="text layer only (pages without one get empty text)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def run(args: argparse.Namespace) -> int:
    """Extract, write the pages, report skipped files; exit 3 when OCR was needed but Tesseract is missing."""
    from madqa.cli import UserError
    from madqa.loading_script.build import write_jsonl
    from madqa.loading_script.extract import extract_corpus, list_pdfs
    from madqa.loading_script.features import PAGE_FEATURES
    from madqa.loading_script.load import DatasetUnavailableError, materialize_documents
    from madqa.loading_script.paths import Layout

    if args.out.suffix not in {".parquet", ".jsonl"}:
        raise UserError(f"--out {args.out}: use a .parquet or .jsonl file name")
    layout = Layout.default()
    if args.pdfs is not None:
        if not args.pdfs.is_dir():
            raise UserError(f"--pdfs {args.pdfs}: not a folder")
        pdfs = list_pdfs(args.pdfs)
    else:
        slug = args.dataset.replace("/", "__").replace(".", "_")
        try:
            pdfs = materialize_documents(args.dataset, layout.root / "pdfs" / slug)
        except DatasetUnavailableError as exc:
            raise UserError(str(exc)) from None
    if not pdfs:
        raise UserError("no PDF files to extract")
    report = extract_corpus(pdfs, cache_dir=layout.page_cache_dir, workers=args.workers, ocr=not args.no_ocr,
                            progress=not args.no_progress)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.suffix == ".jsonl":
        write_jsonl(args.out, report.pages)
    else:
        import datasets

        datasets.Dataset.from_list(report.pages, features=PAGE_FEATURES).to_parquet(str(args.out))
    logger.info("%d pages from %d PDFs (%d by OCR, %d skipped files) -> %s", len(report.pages),
                len(report.num_pages), report.ocr_pages, len(report.skipped), args.out)
    return 3 if report.ocr_missing else 0

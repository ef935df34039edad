"""`madqa setup`: build the embedded sample benchmark and register the offline names (idempotent)."""

from __future__ import annotations

import argparse
import json
import logging
import sys

HELP = "generate the sample benchmark, extract its pages (OCR), write the Hub-format dataset, register offline names"
logger = logging.getLogger("madqa.setup")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `madqa setup`."""
    parser.add_argument("--seed", type=int, default=0, help="generator and split seed (default 0)")
    parser.add_argument("--workers", type=int, default=None, help="extraction processes (default: all CPUs)")
    parser.add_argument("--force", action="store_true", help="redo every step even if up to date")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def run(args: argparse.Namespace) -> int:
    """Run the set-up pipeline and print where things are."""
    from madqa.loading_script.extract import OcrUnavailableError
    from madqa.loading_script.pipeline import run_setup

    try:
        result = run_setup(seed=args.seed, workers=args.workers, force=args.force, progress=not args.no_progress)
    except OcrUnavailableError as exc:
        logger.error("%s", exc)
        return 3
    layout = result.layout
    summary = {
        "madqa_home": str(layout.root),
        "dataset": str(layout.dataset_dir),
        "steps_run": result.steps_run,
        "skipped_pdfs": [{"document": n, "reason": r} for n, r in result.skipped_pdfs],
        "stats": result.stats,
    }
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        done = ", ".join(result.steps_run) or "nothing (everything up to date)"
        logger.info("set-up done in %s: ran %s", layout.root, done)
        logger.info("dataset folder: %s", layout.dataset_dir)
    return 0

"""`madqa setup`: build the embedded sample, or prepare a dataset in the release's schema (idempotent).

Without ``--dataset`` (or with ``sample``) it builds the sample benchmark and registers the offline names. With
``--dataset OxRML/MADQA`` (or a folder in the release's schema) it fetches the PDFs, extracts (or downloads,
``--pages-repo``) the page corpus, builds the search index and registers the spec, so that
``madqa run/evaluate/info --dataset SPEC`` and ``MADQA_DATASET=SPEC`` work offline afterwards.

Exit status: 0 done; 1 done but some documents could not be fetched or read (each is named, with its URL and
reason; a rerun retries only those; for the sample, only with ``--strict``); 2 a user error; 3 Tesseract is
missing for pages that need OCR.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

HELP = "build the sample benchmark, or prepare a dataset such as OxRML/MADQA (fetch PDFs, pages, index) offline"
EXAMPLES = ("madqa setup", "madqa setup --dataset OxRML/MADQA --pages-repo ORG/pages --json", "madqa setup --redo")
logger = logging.getLogger("madqa.setup")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `madqa setup`."""
    from madqa.cli import conventions
    from madqa.cli.extract_cmd import add_extraction_options

    conventions.add_dataset_argument(parser, default_text=conventions.DATASET_DEFAULT_EXCEPTIONS["setup"])
    parser.add_argument(
        "--pages-repo",
        metavar="REPO",
        help="page corpus used instead of extracting: a Hub dataset published with "
        "`madqa publish pages`, its folder, or a `madqa extract -o` file "
        "(default: $MADQA_PAGES_REPO)",
    )
    parser.add_argument("--seed", type=int, default=0, help="sample generator and split seed")
    parser.add_argument("--workers", type=int, default=None, help="extraction processes (default: all CPUs)")
    parser.add_argument("--fetch-workers", type=int, default=8, help="parallel PDF downloads")
    parser.add_argument(
        "--fetch-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds without data before a download attempt fails",
    )
    parser.add_argument(
        "--fetch-retries",
        type=int,
        default=4,
        metavar="N",
        help="retries of a download after a timeout, connection error, 429 or 5xx",
    )
    parser.add_argument("--no-ocr", action="store_true", help="text layer only (pages without one stay empty)")
    add_extraction_options(parser)
    parser.add_argument("--no-index", action="store_true", help="do not build the search index now")
    redo = parser.add_argument("--redo", action="store_true", help="redo every step even if up to date")
    conventions.deprecated_alias(parser, redo, "--force")  # --force now means --overwrite; see conventions
    conventions.add_no_progress_flag(parser)
    conventions.add_json_flag(parser, "the result")


def _emit(summary: dict, as_json: bool) -> None:
    if as_json:
        json.dump(summary, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")


def run(args: argparse.Namespace) -> int:
    """Run the set-up and print where things are."""
    from madqa.loading_script.load import SAMPLE

    if args.dataset in (None, SAMPLE):
        if args.pages_repo:
            from madqa.cli.errors import UserError

            raise UserError("--pages-repo applies to --dataset SPEC, not to the sample (which is generated here)")
        return _run_sample(args)
    return _run_dataset(args)


def _run_sample(args: argparse.Namespace) -> int:
    from madqa.cli.extract_cmd import extract_settings_from
    from madqa.loading_script.extract import OcrUnavailableError
    from madqa.loading_script.pipeline import run_setup

    settings = extract_settings_from(args)
    try:
        result = run_setup(
            seed=args.seed,
            workers=args.workers,
            force=args.redo,
            progress=not args.no_progress,
            extract_settings=settings,
        )
    except OcrUnavailableError as exc:
        logger.error("%s", exc)
        return 3
    install_metric()
    layout = result.layout
    summary = {
        "madqa_home": str(layout.root),
        "dataset": str(layout.dataset_dir),
        "steps_run": result.steps_run,
        "skipped_pdfs": [{"document": n, "reason": r} for n, r in result.skipped_pdfs],
        "stats": result.stats,
    }
    _emit(summary, args.json)
    if not args.json:
        done = ", ".join(result.steps_run) or "nothing (everything up to date)"
        logger.info("set-up done in %s: ran %s", layout.root, done)
        logger.info("dataset folder: %s", layout.dataset_dir)
        if result.datasets_cache is not None:
            logger.info("load it by name: %s", load_by_name_command(result.datasets_cache))
    if args.strict and result.skipped_pdfs:
        logger.error("--strict: %d PDF(s) skipped (named above)", len(result.skipped_pdfs))
        return 1
    return 0


def _run_dataset(args: argparse.Namespace) -> int:
    from madqa.cli.errors import UserError
    from madqa.cli.extract_cmd import extract_settings_from
    from madqa.loading_script.extract import OcrUnavailableError
    from madqa.loading_script.fetch import FetchSettings
    from madqa.loading_script.load import DatasetUnavailableError, load_pages
    from madqa.loading_script.release import prepare_dataset, remove_prepared

    spec = args.dataset
    if args.fetch_workers < 1 or args.fetch_retries < 0 or args.fetch_timeout <= 0:
        raise UserError("--fetch-workers must be >= 1, --fetch-retries >= 0 and --fetch-timeout > 0")
    settings = FetchSettings(workers=args.fetch_workers, timeout_s=args.fetch_timeout, retries=args.fetch_retries)
    if args.redo:
        remove_prepared(spec)
    try:
        result = prepare_dataset(
            spec,
            pages_repo=args.pages_repo,
            workers=args.workers,
            fetch_settings=settings,
            ocr=not args.no_ocr,
            force=args.redo,
            progress=not args.no_progress,
            extract_settings=extract_settings_from(args),
        )
    except DatasetUnavailableError as exc:
        raise UserError(str(exc)) from None
    except OcrUnavailableError as exc:
        logger.error("%s", exc)
        return 3
    index = None
    pages = [] if args.no_index or not result.stats.get("pages") else load_pages(spec)
    if pages:  # an empty corpus (every fetch failed) has nothing to index
        from madqa.agents.corpus.search import open_index

        opened = open_index(pages, progress=not args.no_progress)  # built once; `madqa run` reuses it
        getattr(opened, "close", lambda: None)()
        index = "whoosh"
    install_metric()
    summary = {
        "dataset": spec,
        "folder": str(result.folder),
        "source_revision": result.source_revision,
        "steps_run": result.steps_run,
        "fetched": len(result.fetched),
        "already_present": len(result.present),
        "failures": result.failures,
        "stats": result.stats,
        "index": index,
    }
    _emit(summary, args.json)
    if not args.json:
        done = ", ".join(result.steps_run) or "nothing (everything up to date)"
        logger.info("prepared %s in %s: ran %s", spec, result.folder, done)
        stats = result.stats
        logger.info(
            "%s of %s documents in the corpus, %s pages (%s); questions: %s",
            stats.get("documents"),
            stats.get("documents_listed"),
            stats.get("pages"),
            ", ".join(f"{k} {v}" for k, v in sorted(stats.get("text_sources", {}).items())),
            ", ".join(f"{k} {v}" for k, v in stats.get("questions", {}).items()),
        )
    for failure in result.failures:
        logger.error(
            "not in the corpus: %s (%s): %s", failure["document"], failure["url"] or "no url", failure["reason"]
        )
    if result.failures:
        logger.error(
            "%d document(s) missing: run `madqa setup --dataset %s` again to retry them; until then "
            "questions about them cannot be answered",
            len(result.failures),
            spec,
        )
        return 1
    return 0


def load_by_name_command(cache: Path) -> str:
    """The shell command that loads this home's data by name: ``HF_HUB_OFFLINE=1`` (without it every call first
    retries the Hub, about 25 s, for a name that is local), and ``HF_DATASETS_CACHE`` where the home registered
    outside the environment's cache (:func:`madqa.loading_script.register.registration_cache`)."""
    import shlex

    from madqa.loading_script.register import hf_datasets_cache

    env = ["HF_HUB_OFFLINE=1"] + (
        [] if cache == hf_datasets_cache() else [f"HF_DATASETS_CACHE={shlex.quote(str(cache))}"]
    )
    code = 'import datasets; print(datasets.load_dataset("madqa"))'
    return " ".join([*env, "python", "-c", shlex.quote(code)])


def install_metric() -> Path:
    """Make ``evaluate.load("madqa")`` work offline: the setup command's job, not the data pipeline's.

    Returns:
        The version directory in evaluate's module cache (see :func:`madqa.metric.install.install_offline_module`).
    """
    from madqa.metric.install import install_offline_module

    target = install_offline_module()
    logger.debug("metric installed for offline evaluate.load in %s", target)
    return target

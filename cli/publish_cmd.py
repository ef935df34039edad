"""`madqa publish`: the maintainers' pushes to the Hub — the page corpus of a prepared dataset, the metric Space.

``madqa publish pages --dataset OxRML/MADQA --repo ORG/NAME`` pushes the extracted page corpus (with its
extraction settings and source revision in the card) as a Hub dataset, so users skip OCR with
``madqa setup --dataset OxRML/MADQA --pages-repo ORG/NAME``. ``madqa publish metric --repo ORG/NAME`` pushes the
``metric/`` folder as an `evaluate` metric Space (``app.py`` widget); ``madqa publish labels --file F --repo
ORG/NAME`` checks the hidden test labels against the public test split and pushes them to a private dataset for
the leaderboard Space (``MADQA_SPACE_LABELS_REPO``); ``madqa publish benchmark --dataset SPEC --repo ORG/NAME
[--create-pr]`` pushes the prepared dataset's ``eval.yaml`` (checked again first); ``madqa publish traces DIR --repo
ORG/NAME`` uploads the session files of ``madqa export traces`` to a dataset (with its card; ``--bucket``: a storage
bucket) for the Hub's trace viewer. All need a token with write access (``hf auth login`` or ``HF_TOKEN``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

EXAMPLES = (
    "madqa publish pages --dataset OxRML/MADQA --repo ORG/pages --json",
    "madqa publish labels --file test_labels.jsonl --dataset OxRML/MADQA --repo ORG/labels",
    "madqa publish metric --repo ORG/madqa-metric --private",
    "madqa publish benchmark --dataset OxRML/MADQA --repo OxRML/MADQA --create-pr",
    "madqa publish traces traces/ --repo ORG/madqa-traces",
    "madqa publish traces traces/ --repo ORG/traces --bucket --path-in-repo bm25-gpt",
)
HELP = (
    "maintainers: push to the Hugging Face Hub the page corpus of a prepared dataset (pages), the hidden "
    "test labels (labels, private), the metric Space (metric), the benchmark's eval.yaml (benchmark) or agent "
    "traces (traces)"
)
logger = logging.getLogger("madqa.publish")


def _add_target(parser: argparse.ArgumentParser, repo_help: str, private_help: str | None = None) -> None:
    """``--repo`` (required) and, where the target can be created private, ``--private``."""
    parser.add_argument("--repo", required=True, metavar="ORG/NAME", help=repo_help)
    if private_help:
        parser.add_argument("--private", action="store_true", help=private_help)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add `publish pages`, `publish labels` and `publish metric`."""
    from madqa.cli import conventions

    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    pages = sub.add_parser("pages", help="push the page corpus of a prepared dataset as a Hub dataset")
    conventions.add_dataset_argument(pages)
    _add_target(pages, "target Hub dataset repo", "create the repo private")
    incomplete = "publish even though some documents could not be fetched or read"
    pages.add_argument("--allow-incomplete", action="store_true", help=incomplete)
    labels = sub.add_parser("labels", help="check the hidden test labels and push them to a PRIVATE Hub dataset")
    labels.add_argument("--file", required=True, type=Path, help="the labels JSONL (question schema, labelled)")
    conventions.add_dataset_argument(labels)  # whose public test split they label
    _add_target(labels, "target private Hub dataset repo")
    share = "share of the questions in the private part, for rows without a 'part'"
    labels.add_argument("--private-share", type=float, default=0.5, metavar="F", help=share)
    metric = sub.add_parser("metric", help="push metric/ as an evaluate metric Space (app.py widget)")
    _add_target(metric, "target Hub Space repo", "create the Space private")
    benchmark = sub.add_parser("benchmark", help="push a prepared dataset's eval.yaml (its Hub benchmark tasks)")
    conventions.add_dataset_argument(benchmark)
    _add_target(benchmark, "the benchmark's Hub dataset repo")
    benchmark.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing")
    traces = sub.add_parser("traces", help="push `madqa export traces` sessions to a Hub dataset or storage bucket")
    traces.add_argument("folder", type=Path, metavar="DIR", help="the folder `madqa export traces` wrote")
    _add_target(traces, "target Hub dataset (or bucket) id")
    traces.add_argument("--bucket", action="store_true", help="push to a storage bucket instead of a dataset")
    traces.add_argument("--path-in-repo", metavar="PATH", help="folder inside the repo (default: its root)")
    traces.add_argument("--private", action="store_true", help="create the dataset or bucket private")
    card = "do not write the dataset's README.md card (written by default at a dataset's root)"
    traces.add_argument("--no-card", action="store_true", help=card)
    for name, nested in (
        ("pages", pages),
        ("labels", labels),
        ("metric", metric),
        ("benchmark", benchmark),
        ("traces", traces),
    ):
        conventions.add_json_flag(nested, "the result")
        conventions.add_examples(nested, conventions.examples_for(f"madqa publish {name}", EXAMPLES))


def _check_repo(repo: str) -> None:
    from madqa.cli.errors import UserError

    if repo.count("/") != 1 or not all(repo.split("/")):
        raise UserError(f"--repo {repo!r}: expected ORG/NAME")


def run(args: argparse.Namespace) -> int:
    """Publish and report the repo and files."""
    from madqa.cli.errors import UserError

    _check_repo(args.repo)
    try:
        if args.what == "pages":
            from madqa.loading_script.load import DatasetUnavailableError
            from madqa.loading_script.pages_repo import publish_pages

            try:
                done = publish_pages(
                    args.dataset, args.repo, private=args.private, allow_incomplete=args.allow_incomplete
                )
            except DatasetUnavailableError as exc:
                raise UserError(str(exc)) from None
            summary = {
                "repo": done.repo_id,
                "url": done.url,
                "files": done.files,
                "pages": done.pages,
                "documents": done.documents,
            }
        elif args.what == "labels":
            from madqa.loading_script.labels_repo import LabelsError, publish_labels
            from madqa.loading_script.load import DatasetUnavailableError

            try:
                if not 0.0 <= args.private_share <= 0.9:
                    raise UserError(f"--private-share must be between 0 and 0.9, got {args.private_share}")
                pushed = publish_labels(args.file, args.dataset, args.repo, private_share=args.private_share)
            except (LabelsError, DatasetUnavailableError) as exc:
                raise UserError(str(exc)) from None
            summary = {
                "repo": pushed.repo_id,
                "url": "",
                "files": ["test_labels.jsonl"],
                "questions": pushed.questions,
                "private": pushed.private,
            }
        elif args.what == "benchmark":
            from madqa.loading_script.benchmark_eval import publish_eval_yaml
            from madqa.loading_script.features import SchemaError
            from madqa.loading_script.load import DatasetUnavailableError

            try:
                commit = publish_eval_yaml(args.dataset, args.repo, create_pr=args.create_pr)
            except (DatasetUnavailableError, SchemaError) as exc:
                raise UserError(str(exc)) from None
            summary = {
                "repo": args.repo,
                "url": str(getattr(commit, "pr_url", None) or getattr(commit, "commit_url", "")),
                "files": ["eval.yaml"],
            }
        elif args.what == "traces":
            from madqa.cli.publish_traces import publish_traces

            done_traces = publish_traces(
                args.folder,
                args.repo,
                bucket=args.bucket,
                private=args.private,
                path_in_repo=args.path_in_repo or "",
                card=not args.no_card,
            )
            summary = {
                "repo": done_traces.repo_id,
                "url": done_traces.url,
                "files": done_traces.files,
                "card": done_traces.card,
            }
        else:
            from madqa.cli.publish_metric import publish_metric

            result = publish_metric(args.repo, private=args.private)
            summary = {
                "repo": args.repo,
                "url": str(getattr(result, "url", "")),
                "files": list(getattr(result, "files", [])),
            }
    except ImportError as exc:
        raise UserError(f"publishing needs huggingface_hub: {exc}") from None
    except OSError as exc:  # network and HTTP errors of huggingface_hub derive from OSError
        raise UserError(f"could not publish to {args.repo}: {exc}") from None
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        logger.info("published %d file(s) to %s", len(summary["files"]), summary["url"] or args.repo)
    return 0

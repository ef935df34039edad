"""`madqa info`: a short summary of the built sample benchmark (or another dataset folder)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

HELP = "print a short summary of the sample benchmark (after `madqa setup`)"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `madqa info`."""
    parser.add_argument("--dataset", default=None, help="'sample' (default), a dataset folder, or a Hub repo id")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")


def summarize(dataset: str | None) -> dict:
    """Counts by split, hop type, domain and text source, read through the project's loader."""
    from madqa.loading_script.features import QA_SPLITS
    from madqa.loading_script.load import load_documents, load_pages, load_questions

    splits = {s: load_questions(s, dataset) for s in QA_SPLITS}
    documents = load_documents(dataset)
    pages = load_pages(dataset)
    labelled = [q for s in ("train", "dev") for q in splits[s]]
    return {
        "questions": {s: len(rows) for s, rows in splits.items()},
        "hop_types_train_dev": dict(Counter(q["hop_type"] for q in labelled)),
        "documents": len(documents),
        "domains": dict(sorted(Counter(d["domain"] for d in documents).items())),
        "categories": len({d["document_category"] for d in documents}),
        "pages": len(pages),
        "text_sources": dict(Counter(p["text_source"] for p in pages)),
    }


def run(args: argparse.Namespace) -> int:
    """Print the summary (a table on stdout, or JSON with --json)."""
    from madqa.cli import UserError
    from madqa.loading_script.load import DatasetUnavailableError

    try:
        info = summarize(args.dataset)
    except DatasetUnavailableError as exc:
        raise UserError(str(exc)) from None
    if args.json:
        json.dump(info, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    q = info["questions"]
    lines = [
        "MADQA sample benchmark",
        f"  questions : {sum(q.values())} (train {q['train']}, dev {q['dev']}, test {q['test']}; test labels hidden)",
        "  hop types : " + ", ".join(f"{k} {v}" for k, v in sorted(info["hop_types_train_dev"].items()))
        + " (train+dev)",
        f"  documents : {info['documents']} in {info['categories']} categories, {len(info['domains'])} domains",
        f"  pages     : {info['pages']} (" + ", ".join(f"{k} {v}" for k, v in info["text_sources"].items()) + ")",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0

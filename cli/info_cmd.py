"""`madqa info`: a short summary of the built sample benchmark (or another dataset folder)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

HELP = "print a short summary of the sample benchmark, or of a dataset prepared by `madqa setup --dataset SPEC`"
EXAMPLES = ("madqa info", "madqa info --dataset OxRML/MADQA --json")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the options of `madqa info`."""
    from madqa.cli import conventions

    conventions.add_dataset_argument(parser)
    conventions.add_json_flag(parser, "the summary")


def summarize(dataset: str | None) -> dict:
    """Counts by split, hop type, domain and text source, read through the project's loader."""
    from madqa.loading_script.features import QA_SPLITS
    from madqa.loading_script.load import (
        SAMPLE,
        DatasetNotPreparedError,
        DatasetUnavailableError,
        dataset_spec,
        load_documents,
        load_pages,
        load_questions,
    )
    from madqa.loading_script.prepared import read_prepared
    from madqa.loading_script.release import summarize_prepared

    spec = dataset_spec(dataset)
    splits = {}
    for s in QA_SPLITS:
        try:
            splits[s] = load_questions(s, dataset)
        except DatasetNotPreparedError:
            raise  # nothing can be read: stop at the first try, with the line that names the fix
        except DatasetUnavailableError:
            if s == "test" or spec == SAMPLE:  # a release may lack a split; the sample never does
                raise
            splits[s] = []
    documents = load_documents(dataset)
    pages = load_pages(dataset)
    labelled = [q for s in ("train", "dev") for q in splits[s]]
    record = read_prepared(spec) if spec != SAMPLE else None
    return {
        "dataset": spec,
        "questions": {s: len(rows) for s, rows in splits.items()},
        "hop_types_train_dev": dict(Counter(str(q["hop_type"]) for q in labelled)),
        "documents": len(documents),
        "domains": dict(sorted(Counter(str(d["domain"]) for d in documents).items())),
        "categories": len({d["document_category"] for d in documents}),
        "pages": len(pages),
        "text_sources": dict(Counter(p["text_source"] for p in pages)),
        "prepared": summarize_prepared(record) if record is not None else None,
    }


def run(args: argparse.Namespace) -> int:
    """Print the summary (a table on stdout, or JSON with --json)."""
    from madqa.cli.errors import UserError
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
        "MADQA sample benchmark" if info["dataset"] == "sample" else f"MADQA dataset {info['dataset']}",
        f"  questions : {sum(q.values())} (train {q['train']}, dev {q['dev']}, test {q['test']}; test labels hidden)",
        "  hop types : "
        + ", ".join(f"{k} {v}" for k, v in sorted(info["hop_types_train_dev"].items()))
        + " (train+dev)",
        f"  documents : {info['documents']} in {info['categories']} categories, {len(info['domains'])} domains",
        f"  pages     : {info['pages']} (" + ", ".join(f"{k} {v}" for k, v in info["text_sources"].items()) + ")",
    ]
    prepared = info["prepared"]
    if prepared is not None:
        state = "complete" if prepared["complete"] else "INCOMPLETE"
        lines += [
            f"  prepared  : {prepared['prepared_at']} from revision {prepared['source_revision']} ({state}); "
            f"pages from {prepared['pages_source']}",
            f"  fetched   : {prepared['documents_in_corpus']} of {prepared['documents_listed']} documents in the "
            f"corpus, {prepared['documents_failed']} failed",
        ]
        lines += [f"    - {f['document']} ({f['url'] or 'no url'}): {f['reason']}" for f in prepared["failures"][:20]]
        if prepared["documents_failed"] > 20:
            lines.append(f"    … and {prepared['documents_failed'] - 20} more (see --json)")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0

"""``madqa retrieval``: how well retrievers find the gold evidence pages, side by side, before any model runs.

``madqa retrieval --retriever bm25,dense:wordllama,rrf:bm25+dense:wordllama --split dev [--dataset SPEC] [--limit N]
[--depth 1000] [--missed-at 10] [--output-dir DIR] [--json]`` ranks the split's pages for every question's text with
each retriever (:mod:`madqa.agents.corpus.retrieval`) and prints Recall@1/5/10, nDCG@5/10 and MRR@10 at page level
(top 10 pages) and document level (documents of the top ``--depth`` pages) with 95 % Wilson intervals, per hop type
with ``--by-hop``, and the share of questions whose evidence no retriever puts in its top ``--missed-at`` pages (a
miss rate; not the paper's Oracle Gap, see :mod:`madqa.agents.corpus.retrieval.evaluation`). ``--output-dir`` writes
each ranking as TREC runs and the gold as qrels, from which ``trec_eval`` reproduces the printed table.
``--eval-results DIR`` writes one retriever's retrieval-track Hub Eval Results entries (page-level nDCG@10;
:mod:`madqa.cli.eval_results_out`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from madqa.cli import conventions
from madqa.cli.errors import UserError

HELP = "retrieval quality of page retrievers against the gold evidence (Recall@k, nDCG, MRR; TREC runs)"
EXAMPLES = (
    "madqa retrieval --retriever bm25,dense:wordllama,rrf:bm25+dense:wordllama --split dev",
    "madqa retrieval --retriever bm25 --split dev --output-dir runs --missed-at 5 --json --no-progress",
)

logger = logging.getLogger(__name__)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``retrieval`` arguments."""
    from madqa.agents.corpus.retrieval.evaluation import CUTOFF, DEFAULT_DEPTH
    from madqa.agents.corpus.retrieval.spec import add_retriever_argument

    add_retriever_argument(parser, "retrievers: bm25, dense:EMBEDDER (dense:wordllama), rrf:A+B, hybrid:A>B")

    parser.add_argument("--split", default="dev", help="labelled split (test labels are hidden)")
    conventions.add_dataset_argument(parser)
    parser.add_argument("--limit", type=int, help="first N questions only")
    parser.add_argument(
        "--depth",
        type=int,
        default=None,
        metavar="N",
        help=f"pages ranked per question for the document level (unset: {DEFAULT_DEPTH}; at least {CUTOFF}, the "
        f"measures' deepest cut-off, and at least --missed-at); the page level reads the top {CUTOFF}",
    )
    missed = parser.add_argument(
        "--missed-at",
        type=int,
        default=10,
        metavar="K",
        help="cut-off of the 'missed by every retriever' share: no gold page in any retriever's top K",
    )
    conventions.deprecated_alias(parser, missed, "--k")  # not a search's top-k: renamed so that --k means one thing
    parser.add_argument("--by-hop", action="store_true", help="also print the table per hop type")
    conventions.add_output_dir(
        parser, "write TREC runs and qrels of both levels here (runs.json says which is which)", old=("--runs-dir",)
    )
    conventions.add_json_flag(parser, "the results")
    from madqa.cli.eval_results_out import add_eval_results_arguments

    add_eval_results_arguments(parser)
    conventions.add_no_progress_flag(parser)


def _specs(raw: str) -> list[str]:
    specs = [s.strip() for s in raw.split(",") if s.strip()]
    if not specs:
        raise UserError("--retriever names no retriever")
    if len(set(specs)) != len(specs):
        raise UserError("--retriever names the same retriever twice")
    return specs


def _table(results: dict[str, Any], level: str, group: str | None = None) -> list[str]:
    from madqa.agents.corpus.retrieval.evaluation import MEASURES

    width = max(len(name) for name in results)  # cells: mean [95 % Wilson interval]
    lines = [f"{'retriever'.ljust(width)}  " + "  ".join(label.rjust(17) for label, _ in MEASURES)]
    for name, summary in results.items():
        block = summary[level]["all"] if group is None else summary[level]["by_hop"].get(group)
        if block is None:
            continue
        cells = []
        for label, _ in MEASURES:
            m = block[label]
            lo, hi = m["ci"]
            cells.append(f"{m['mean']:.3f}" + (f" [{lo:.2f},{hi:.2f}]" if lo is not None else " " * 12))
        lines.append(f"{name.ljust(width)}  " + "  ".join(c.rjust(17) for c in cells))
    return lines


def run(args: argparse.Namespace) -> int:
    """Rank, score and print."""
    from madqa.agents.corpus.retrieval.base import RetrievalError
    from madqa.agents.corpus.retrieval.evaluation import (
        CUTOFF,
        DEFAULT_DEPTH,
        TREC_EVAL_COMMAND,
        missed_by_all,
        questions_from_gold,
        rank_all,
        summarise,
        write_runs,
    )
    from madqa.agents.corpus.retrieval.spec import make_retrievers, require_dependencies
    from madqa.agents.harness.deps import require_extra
    from madqa.cli.eval_results_out import request_of, write_retrieval_results
    from madqa.loading_script.load import DatasetUnavailableError, load_gold, load_pages

    specs = _specs(args.retriever)
    eval_results = request_of(args)  # its flags are checked before any ranking
    require_extra("retrieval", "madqa retrieval")  # scores with ir_measures: checked before any ranking is computed
    try:
        require_dependencies(specs)  # before the gold and the pages are loaded
    except RetrievalError as exc:
        raise UserError(str(exc)) from None
    k = args.missed_at
    if k < 1 or (args.limit is not None and args.limit < 1):
        raise UserError("--missed-at and --limit must be positive")
    depth = DEFAULT_DEPTH if args.depth is None else args.depth
    if depth < max(CUTOFF, k):
        default = f" (the default {DEFAULT_DEPTH} is below --missed-at {k})" if args.depth is None else ""
        raise UserError(
            f"--depth must be at least {CUTOFF} (the measures' deepest cut-off) and at least --missed-at; "
            f"got --depth {depth} and --missed-at {k}{default}"
        )
    try:
        rows = load_gold(args.split, args.dataset)
        pages = load_pages(args.dataset)
    except DatasetUnavailableError as exc:
        raise UserError(str(exc)) from None
    questions = questions_from_gold(rows)[: args.limit]
    if not questions:
        raise UserError(f"the {args.split} split has no labelled questions to rank pages for")
    try:
        retrievers = make_retrievers(specs, pages, progress=not (args.json or args.no_progress))
    except RetrievalError as exc:
        raise UserError(str(exc)) from None
    page_depth = max(CUTOFF, k)
    results, rankings = {}, []
    for retriever in retrievers:
        ranked = rank_all(retriever, questions, page_depth)
        deep = ranked if depth == page_depth else rank_all(retriever, questions, depth)
        rankings.append((retriever.name, ranked, deep))
        results[retriever.name] = summarise(ranked, questions, deep, depth)
    if args.output_dir:
        write_runs(args.output_dir, rankings, questions, depth)
    if eval_results is not None:
        limited = args.limit is not None and args.limit < len(rows)
        write_retrieval_results(
            eval_results, results, split=args.split, dataset=args.dataset, limited=limited, depth=depth
        )
    missed = missed_by_all([r for _, r, _ in rankings], questions, k)
    out = {
        "split": args.split,
        "questions": len(questions),
        "depth": depth,
        "interval": "wilson-95",
        "retrievers": results,
        "missed_by_all": missed,
    }
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    lines = [
        f"{len(questions)} {args.split} questions, {len(pages)} pages; page level: each retriever's top "
        f"{page_depth} pages; document level: the documents of its top {depth} pages (--depth)"
    ]
    for level in ("page", "document"):
        lines += ["", f"{level} level (mean [95% Wilson interval]):", *_table(results, level)]
        if level == "document":  # how deep the document level really was (ten pages are often fewer documents)
            sizes = "; ".join(
                f"{name} {r['median']:g} / {r['min']} / {r['short']} / {r['cut']}"
                for name, r in ((n, s["document"]["ranked"]) for n, s in results.items())
            )
            lines.append(
                f"  documents in the top {depth} pages, median / fewest / questions with fewer than "
                f"{CUTOFF} / of those, cut short by --depth: {sizes}"
            )
            if any(s["document"]["ranked"]["cut"] for s in results.values()):
                lines.append(
                    f"  (some top-{depth} rankings held fewer than {CUTOFF} documents: a larger --depth "
                    "ranks more of them)"
                )
        if args.by_hop:
            hops = sorted({h for s in results.values() for h in s[level]["by_hop"]})
            for hop in hops:
                lines += [f"  hop type {hop}:", *("  " + line for line in _table(results, level, hop))]
    k, lo, hi = missed["k"], *missed["none_ci"]
    lines += [
        "",
        f"missed by every retriever @{k}: {100 * missed['none_in_top_k']:.1f}% [{100 * lo:.1f}, "
        f"{100 * hi:.1f}] of questions have no gold page in any retriever's top {k}; "
        f"{100 * missed['not_all_in_top_k']:.1f}% miss at least one (a retrieval miss rate, not the paper's "
        "Oracle Gap)",
    ]
    if args.output_dir:
        lines.append(f"TREC runs in {args.output_dir} (runs.json); the table again: {TREC_EVAL_COMMAND}")
    print("\n".join(lines))  # the command's result
    return 0

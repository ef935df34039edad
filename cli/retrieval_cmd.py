"""``madqa retrieval``: how well retrievers find the gold evidence pages, side by side, before any model runs.

``madqa retrieval --retriever bm25,dense:wordllama,rrf:bm25+dense:wordllama --split dev [--dataset SPEC]
[--limit N] [--k 10] [--runs-dir DIR] [--json]`` ranks the split's pages for every question's text with each
retriever (:mod:`madqa.agents.retrieval`) and prints Recall@1/5/10, nDCG@5/10 and MRR@10 at page and document
level with 95 % CIs, per hop type with ``--by-hop``, and the oracle gap (questions whose evidence no retriever puts
in its top ``k``). ``--runs-dir`` writes each ranking as a TREC run file and the gold as qrels.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from madqa.cli.errors import UserError

HELP = "retrieval quality of page retrievers against the gold evidence (Recall@k, nDCG, MRR; oracle gap)"

logger = logging.getLogger(__name__)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``retrieval`` arguments."""
    parser.add_argument("--retriever", required=True, metavar="SPEC[,SPEC…]",
                        help="retrievers: bm25, dense:EMBEDDER (dense:wordllama), rrf:A+B, hybrid:A>B")
    parser.add_argument("--split", default="dev", help="labelled split (default: dev; test labels are hidden)")
    parser.add_argument("--dataset", metavar="SPEC", help="dataset folder, sample (default) or a prepared Hub id")
    parser.add_argument("--limit", type=int, help="first N questions only")
    parser.add_argument("--k", type=int, default=10, help="depth of the oracle gap (default: 10)")
    parser.add_argument("--by-hop", action="store_true", help="also print the table per hop type")
    parser.add_argument("--runs-dir", type=Path, metavar="DIR", help="write TREC run files and qrels here")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")


def _specs(raw: str) -> list[str]:
    specs = [s.strip() for s in raw.split(",") if s.strip()]
    if not specs:
        raise UserError("--retriever names no retriever")
    if len(set(specs)) != len(specs):
        raise UserError("--retriever names the same retriever twice")
    return specs


def _table(results: dict[str, Any], level: str, group: str | None = None) -> list[str]:
    from madqa.agents.retrieval.evaluation import MEASURES

    width = max(len(name) for name in results)
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
    from madqa.agents.retrieval.base import RetrievalError
    from madqa.agents.retrieval.evaluation import (
        Question,
        oracle_gap,
        rank_all,
        summarise,
        write_trec_qrels,
        write_trec_run,
    )
    from madqa.agents.retrieval.spec import make_retrievers
    from madqa.loading_script.load import DatasetUnavailableError, load_gold, load_pages

    specs = _specs(args.retriever)
    if args.k < 1 or (args.limit is not None and args.limit < 1):
        raise UserError("--k and --limit must be positive")
    try:
        rows = load_gold(args.split, args.dataset)
        pages = load_pages(args.dataset)
    except DatasetUnavailableError as exc:
        raise UserError(str(exc)) from None
    questions = [Question(str(r["id"]), str(r["question"]), tuple((e["document"], int(e["page"]))
                                                                 for e in r["evidence"]), str(r.get("hop_type") or ""))
                 for r in rows][: args.limit]  # fmt: skip
    try:
        retrievers = make_retrievers(specs, pages, progress=not args.json)
    except RetrievalError as exc:
        raise UserError(str(exc)) from None
    depth = max(10, args.k)
    results, rankings = {}, []
    for retriever in retrievers:
        ranked = rank_all(retriever, questions, depth)
        rankings.append(ranked)
        results[retriever.name] = summarise(ranked, questions)
        if args.runs_dir:
            write_trec_run(args.runs_dir / f"{len(rankings):02d}.trec", retriever.name, ranked)
    if args.runs_dir:
        write_trec_qrels(args.runs_dir / "qrels.txt", questions)
    gap = oracle_gap(rankings, questions, args.k)
    out = {"split": args.split, "questions": len(questions), "retrievers": results, "oracle_gap": gap}
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    lines = [f"{len(questions)} {args.split} questions, {len(pages)} pages"]
    for level in ("page", "document"):
        lines += ["", f"{level} level (mean [95% CI]):", *_table(results, level)]
        if args.by_hop:
            hops = sorted({h for s in results.values() for h in s[level]["by_hop"]})
            for hop in hops:
                lines += [f"  hop type {hop}:", *("  " + line for line in _table(results, level, hop))]
    lines += ["", f"oracle gap @{gap['k']}: {100 * gap['none_in_top_k']:.1f}% of questions have no gold page in any "
              f"retriever's top {gap['k']}; {100 * gap['not_all_in_top_k']:.1f}% miss at least one"]
    print("\n".join(lines))  # the command's result
    return 0

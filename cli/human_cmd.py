"""``madqa human``: serve the human-baseline app (paper Appendix C.2) and log answers in the results format.

``madqa human --split dev --annotator me -o me.jsonl`` serves http://127.0.0.1:7862/ for one annotator; without
``--annotator`` each visitor types an id and picks a batch, and gets their own file
``<output-dir>/human-<split>-<batch>-<annotator>.jsonl``. The split is cut into seeded batches of 25 with
constellation code names (``--list-batches`` prints them). On dev/train (practice) the gold answer, evidence and
score appear after each answer; on test nothing of the hidden labels reaches the browser. ``--oracle`` shows only
the gold evidence pages (on test it needs ``--labels`` with the private labels file).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from madqa.cli import conventions
from madqa.cli.errors import UserError
from madqa.cli.serve import add_serve_arguments, check_free, resolve_port, serve

DEFAULT_PORT = 7862

HELP = "serve the human-baseline study app (same search engine as the agents); answers go to a results JSONL"
EXAMPLES = (
    "madqa human --split dev --annotator me -o me.jsonl",
    "madqa human --split dev --output-dir human_runs --top-k 5 --search-backend whoosh",
    "madqa human --split dev --list-batches --json",
)

logger = logging.getLogger(__name__)


def configure(parser: argparse.ArgumentParser) -> None:
    """Options of ``madqa human``."""
    parser.add_argument("--split", default="dev", help="split to answer; test gives no feedback")
    conventions.add_dataset_argument(parser)
    parser.add_argument("--batch", metavar="NAME", help="only this batch (code name, e.g. Andromeda)")
    parser.add_argument("--annotator", metavar="ID", help="fixed annotator id (default: each visitor types one)")
    conventions.add_output_file(parser, "results file (needs --annotator)")
    conventions.add_output_dir(
        parser, "folder of the per-annotator, per-batch files", default=Path("human_runs"), old=("--out-dir",)
    )
    parser.add_argument("--oracle", action="store_true", help="show only the gold evidence pages, no search bar")
    parser.add_argument("--labels", type=Path, metavar="FILE", help="private test labels (only for --oracle on test)")
    from madqa.space.human.batches import DEFAULT_SEED
    from madqa.space.human.corpus import DEFAULT_K

    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="batch shuffle seed")
    conventions.add_top_k(parser, "results per search (as the agent's)", default=DEFAULT_K, old=("--k",))
    conventions.add_search_backend(parser, "search engine (unset: whoosh, the agent's)", old=("--backend",))
    add_serve_arguments(parser, DEFAULT_PORT)
    parser.add_argument("--list-batches", action="store_true", help="print the batches and exit")
    conventions.add_json_flag(parser, "the batches (with --list-batches)")


def build_service(args: argparse.Namespace):  # noqa: ANN201 - lazy import of the service type
    """The :class:`~madqa.space.human.service.HumanService` for the arguments (user mistakes → UserError)."""
    from madqa.loading_script.load import DatasetUnavailableError
    from madqa.space.human.batches import DEFAULT_SEED, BatchError
    from madqa.space.human.corpus import DEFAULT_K, HumanCorpus
    from madqa.space.human.service import HumanService, build_plan
    from madqa.space.human.study import StudyError

    if args.output is not None and not args.annotator:
        raise UserError("-o FILE is one annotator's file: also pass --annotator ID")
    if args.labels is not None and not args.oracle:
        raise UserError("--labels is only used with --oracle (test labels are never shown otherwise)")
    try:
        plan = build_plan(
            args.split,
            dataset=args.dataset,
            mode="oracle" if args.oracle else "search",
            seed=DEFAULT_SEED if args.seed is None else args.seed,
            labels_path=args.labels,
            out_dir=args.output_dir,
            output=args.output,
            annotator=args.annotator,
            batch=args.batch,
            config={"backend": args.search_backend or "whoosh"},
        )
        corpus = HumanCorpus.open(
            args.dataset,
            oracle=args.oracle,
            backend=args.search_backend,
            k=DEFAULT_K if args.top_k is None else args.top_k,
        )
    except (StudyError, BatchError, DatasetUnavailableError, ValueError) as exc:
        raise UserError(str(exc)) from None
    return HumanService(plan, corpus)


def run(args: argparse.Namespace) -> int:
    """List the batches, or serve the app until interrupted."""
    from madqa.agents.harness.deps import require_extra

    if not args.list_batches:
        require_extra("space", "madqa human")  # before the search index is opened
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    port = None if args.list_batches else resolve_port(args.port, DEFAULT_PORT)
    if port is not None:
        check_free(args.host, port)  # before the search index is opened
    service = build_service(args)
    plan = service.plan
    if args.list_batches:
        batches = [{"name": b.name, "questions": len(b.ids), "ids": list(b.ids)} for b in plan.batches]
        if args.json:
            sys.stdout.write(json.dumps({"split": plan.split, "batches": batches}) + "\n")
        else:
            sys.stdout.write("".join(f"{b['name']}\t{b['questions']}\n" for b in batches))
        return 0
    from madqa.space.human.app import launch_human

    where = plan.output or plan.out_dir
    logger.info(
        "human study on split %s (%s mode, %d batch(es)); answers go to %s",
        plan.split,
        plan.mode,
        len(plan.batches),
        where,
    )
    logger.info("answers are saved as they are submitted")
    assert port is not None
    try:
        return serve(
            lambda: launch_human(service, host=args.host, port=port, quiet=True, prevent_thread_lock=True),
            host=args.host,
            port=port,
            what="the human study",
        )
    finally:
        service.close()

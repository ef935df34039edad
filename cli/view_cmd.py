"""``madqa view``: explore results files in the browser (trajectories, errors, runs side by side) or export a report.

``madqa view r.jsonl [more.jsonl …] --split dev`` scores each file against the split's gold (as ``madqa evaluate``
does, same numbers; without ``--dataset``/``--split`` the gold the files' lines record, and the same refusals:
:mod:`madqa.cli.recorded_gold`) and serves a local Gradio app on ``--host``/``--port`` (default 127.0.0.1:7861);
``-o report.html`` writes one self-contained HTML file instead. ``--split test`` works only where the test
labels are held locally (the sample's ``$MADQA_HOME/private``); otherwise the loader's error says they are hidden.
Bad lines are reported as ``FILE line N: field …`` (the metric's parser).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from madqa.cli import conventions
from madqa.cli.errors import UserError
from madqa.cli.recorded_gold import GoldChoice, choose_gold
from madqa.cli.serve import add_serve_arguments, check_free, resolve_port, serve

DEFAULT_PORT = 7861

HELP = "explore results files in the browser (trajectories, error classes, runs side by side) or write HTML (-o)"
EXAMPLES = (
    "madqa view results.jsonl --split dev",
    "madqa view a.jsonl b.jsonl --split dev -o report.html",
    "madqa view results.jsonl --gold gold.jsonl --port 7871 --no-thumbnails",
)

logger = logging.getLogger(__name__)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``view`` arguments."""
    parser.add_argument("results", nargs="+", type=Path, help="results JSONL file(s) of `madqa run` (or any harness)")
    conventions.add_gold_arguments(parser, "labelled split the files answer", recorded_default=True)
    conventions.add_output_file(
        parser, "write a self-contained HTML report and exit", metavar="REPORT.html", old=("--export",)
    )
    add_serve_arguments(parser, DEFAULT_PORT)
    parser.add_argument("--no-thumbnails", action="store_true", help="do not render page thumbnails")
    conventions.add_kuiper_arguments(parser, order_and_seed=False)


def references(choice: GoldChoice) -> list[Any]:
    """Gold references from ``--gold`` or the chosen split of the chosen dataset (see the module docstring)."""
    from madqa.metric.inputs import InputError, parse_references, read_jsonl_text
    from madqa.space.explore.runs import ExploreError, load_gold_references, read_text

    try:
        if choice.gold is not None:
            rows = read_jsonl_text(read_text(choice.gold), str(choice.gold))
            return parse_references([r for _, r in rows], str(choice.gold))
        return load_gold_references(choice.split, choice.dataset)
    except (InputError, ExploreError) as exc:
        raise choice.load_failed(UserError(str(exc))) from None


def prepare(args: argparse.Namespace) -> tuple[Any, Any]:
    """The workspace and the thumbnail cache for ``args`` (nothing is served)."""
    from madqa.space.explore.runs import ExploreError, open_workspace, read_text
    from madqa.space.explore.thumbs import Thumbnails

    if len({str(p) for p in args.results}) != len(args.results):
        raise UserError("the same results file is given twice")
    if args.resamples < 1:
        raise UserError("--resamples must be positive")
    choice = choose_gold(args.results, args.split, args.dataset, args.gold)
    refs = references(choice)
    split = choice.split
    try:
        sources = [(str(p), read_text(p)) for p in args.results]
        ws = open_workspace(
            sources,
            refs,
            split=split,
            dataset=choice.dataset,
            resamples=args.resamples,
            refuse_unmatched=choice.refuse_unmatched,
        )
    except ExploreError as exc:
        raise UserError(str(exc)) from None
    for run in ws.runs:
        m = run.scored.matching
        if m.unknown:
            logger.warning("%s: %d line(s) match no %s question and are ignored", run.source, len(m.unknown), split)
        if m.missing_ids:
            logger.warning(
                "%s: %d %s question(s) have no line (shown as missing, scored incorrect)",
                run.source,
                len(m.missing_ids),
                split,
            )
    thumbs = Thumbnails(choice.dataset, enabled=not args.no_thumbnails and choice.gold is None)
    return ws, thumbs


def run(args: argparse.Namespace) -> int:
    """Export the report, or serve the explorer until interrupted."""
    from madqa.agents.harness.deps import require_extra

    require_extra("space", "madqa view -o REPORT.html" if args.output is not None else "madqa view")  # before scoring
    port = None if args.output is not None else resolve_port(args.port, DEFAULT_PORT)
    if port is not None:
        check_free(args.host, port)  # before the files are scored
    ws, thumbs = prepare(args)
    if args.output is not None:
        from madqa.space.explore.export import write_export

        path = write_export(ws, args.output)
        logger.info("wrote %s (%.1f KB)", path, path.stat().st_size / 1024)
        return 0
    import os

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from madqa.space.explore.ui import build_view_app
    from madqa.space.gradio_launch import launch as launch_gradio

    demo = build_view_app(ws, thumbs)
    assert port is not None

    def launch() -> Any:
        launch_gradio(demo, server_name=args.host, server_port=port, quiet=True, prevent_thread_lock=True)
        return demo

    return serve(launch, host=args.host, port=port, what="the explorer")

"""`madqa space`: launch the leaderboard Space locally on the sample (or the dataset in ``MADQA_DATASET``)."""

from __future__ import annotations

import argparse
import logging
import os

HELP = "launch the Gradio Space (leaderboard, submissions, agent tab) on http://127.0.0.1:PORT"

logger = logging.getLogger(__name__)


def configure(parser: argparse.ArgumentParser) -> None:
    """Options of `madqa space`."""
    parser.add_argument("--port", type=int, default=7860, help="port (default: 7860)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    parser.add_argument("--no-seed", action="store_true", help="do not seed an empty board with the baselines")


def run(args: argparse.Namespace) -> int:
    """Start the Space and serve until interrupted."""
    from madqa.cli import UserError

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    try:
        from madqa.space.app import launch
        from madqa.space.config import SpaceConfig
        from madqa.space.services import create_services
    except ImportError as exc:
        raise UserError(f"the Space needs its extra: pip install -e '.[space]' ({exc})") from None
    try:
        config = SpaceConfig.from_env()
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not config.labels_path.is_file() and not config.labels_repo:
        raise UserError(f"no test labels at {config.labels_path}: run `madqa setup` first (or set MADQA_SPACE_LABELS)")
    services = create_services(config, seed=not args.no_seed)
    logger.info("board: %d submission(s) in %s", services.store.count(), config.db_path)
    logger.info("serving the MADQA Space on http://%s:%d (Ctrl+C to stop)", args.host, args.port)
    launch(services, port=args.port, host=args.host)
    return 0

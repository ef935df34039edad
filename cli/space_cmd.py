"""`madqa space`: launch the leaderboard Space locally on the sample (or the dataset in ``MADQA_DATASET``).

It runs the Space's own start-up sequence (:mod:`madqa.space.startup`), so with no configuration it first builds
the sample when it is not built yet (as ``make demo`` does), and with ``MADQA_DATASET`` it prepares that dataset.
Unlike ``python app.py`` on a Space, which serves a page naming a wrong variable, a configuration error here fails
fast: one line naming the variable, exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import os

from madqa.cli.serve import add_serve_arguments, check_free, resolve_port, serve

DEFAULT_PORT = 7860
HELP = "launch the Gradio Space (leaderboard, submissions, agent tab) on http://127.0.0.1:PORT"
EXAMPLES = ("madqa space", "madqa space --port 7870 --no-seed")

logger = logging.getLogger(__name__)


def configure(parser: argparse.ArgumentParser) -> None:
    """Options of `madqa space`."""
    add_serve_arguments(parser, DEFAULT_PORT)
    parser.add_argument("--no-seed", action="store_true", help="do not seed an empty board with the baselines")


def run(args: argparse.Namespace) -> int:
    """Start the Space and serve until interrupted."""
    from madqa.agents.harness.deps import require_extra
    from madqa.cli.errors import UserError

    require_extra("space", "madqa space")  # before the port check and the set-up work
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    port = resolve_port(args.port, DEFAULT_PORT)
    check_free(args.host, port)  # before the set-up work, which can take a while
    from madqa.space.app import launch
    from madqa.space.startup import ConfigError, start

    try:
        services = start(seed=False if args.no_seed else None, progress=True)
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    logger.info("board: %d submission(s) in %s", services.store.count(), services.config.db_path)
    return serve(
        lambda: launch(services, port=port, host=args.host, prevent_thread_lock=True, quiet=True),
        host=args.host,
        port=port,
        what="the MADQA Space",
    )

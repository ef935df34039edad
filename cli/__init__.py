"""The ``madqa`` command line: one entry point, one module per subcommand (imported lazily).

To add a subcommand, write ``cli/<name>_cmd.py`` with ``HELP``, ``EXAMPLES`` (command lines its ``--help`` shows),
``configure(parser)`` (shared flags through :mod:`madqa.cli.conventions`) and ``run(args) -> int``, and list it in
:data:`SUBCOMMANDS`. Subcommand modules import their heavy dependencies inside ``run``, and raise
:class:`~madqa.cli.errors.UserError` (imported from ``madqa.cli.errors``, not from this package, which imports them).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from madqa.cli import conventions
from madqa.cli.console import console_handler
from madqa.cli.errors import UserError

__version__ = "0.1.0"
__all__ = ["EXAMPLES", "SUBCOMMANDS", "UserError", "build_parser", "main"]

#: (subcommand, module) pairs; ``bench`` groups the benchmarks (``madqa bench extract`` …).
SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("setup", "madqa.cli.setup_cmd"),
    ("info", "madqa.cli.info_cmd"),
    ("extract", "madqa.cli.extract_cmd"),
    ("bench", "madqa.cli.bench_cmd"),
    ("evaluate", "madqa.cli.evaluate_cmd"),
    ("calibrate", "madqa.cli.calibrate_cmd"),
    ("run", "madqa.cli.run_cmd"),
    ("space", "madqa.cli.space_cmd"),
    ("publish", "madqa.cli.publish_cmd"),
    ("human", "madqa.cli.human_cmd"),
    ("compare", "madqa.cli.compare_cmd"),
    ("figures", "madqa.cli.figures_cmd"),
    ("sweep", "madqa.cli.sweep_cmd"),
    ("view", "madqa.cli.view_cmd"),
    ("retrieval", "madqa.cli.retrieval_cmd"),
    ("import-inspect", "madqa.cli.import_inspect_cmd"),
    ("export", "madqa.cli.export_cmd"),
)


Parser = conventions.Parser


#: What ``madqa -h`` shows after the commands: the first steps.
EXAMPLES = (
    "madqa setup",
    "madqa info",
    "madqa evaluate results.jsonl --split dev",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every registered subcommand."""
    parser = Parser(prog="madqa", description=__doc__.splitlines()[0])
    conventions.add_examples(parser, EXAMPLES)
    parser.add_argument("--version", action="version", version=f"madqa {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module_name in SUBCOMMANDS:
        module = importlib.import_module(module_name)
        sp = sub.add_parser(name, help=module.HELP, description=module.HELP, formatter_class=conventions.HelpFormatter)
        module.configure(sp)
        conventions.add_examples(sp, getattr(module, "EXAMPLES", ()))  # the convention test requires them
        sp.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``madqa`` command line and return its exit status."""
    args = build_parser().parse_args(argv)
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    console = console_handler(verbose=args.verbose)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", handlers=[console])
    conventions.log_deprecations(args)
    try:
        return int(args._run(args) or 0)
    except UserError as exc:
        logging.getLogger("madqa").error("%s", exc)
        return 2
    except ImportError as exc:  # a missing optional package: one line naming its extra (agents.harness.deps)
        message = _missing_dependency_message(exc)
        if message is None:
            raise
        logging.getLogger("madqa").error("%s", message)
        return 2
    except KeyboardInterrupt:
        logging.getLogger("madqa").warning("interrupted (Ctrl+C)")
        return 130
    except Exception as exc:
        if not _is_dataset_error(exc):
            raise
        logging.getLogger("madqa").error("%s", exc)  # a dataset no command turned into a UserError: still one line
        return 2


def _missing_dependency_message(exc: ImportError) -> str | None:
    """The one line for a missing optional package (its ``pip install 'madqa[EXTRA]'``), or None for another error."""
    from madqa.agents.harness.deps import MissingDependencyError, missing_module_message

    if isinstance(exc, MissingDependencyError):
        return str(exc)
    if isinstance(exc, ModuleNotFoundError):
        return missing_module_message(exc)
    return None


def _is_dataset_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the data layer's "cannot read this dataset" error (its message names the fix)."""
    try:
        from madqa.loading_script.load import DatasetUnavailableError
    except ImportError:  # pragma: no cover - the loader's dependencies are not installed
        return False
    return isinstance(exc, DatasetUnavailableError)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

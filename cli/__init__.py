"""The ``madqa`` command line: one entry point, one module per subcommand (imported lazily).

To add a subcommand, write ``cli/<name>_cmd.py`` with ``HELP``, ``EXAMPLES`` (command lines its ``--help`` shows),
``configure(parser)`` (shared flags through :mod:`madqa.cli.conventions`) and ``run(args) -> int``, and list it in
:data:`COMMANDS` with its one-line help (the module is imported only when its command is chosen: ``madqa -h`` imports
none). Subcommand modules import their heavy dependencies inside ``run``, and raise
:class:`~madqa.cli.errors.UserError` (imported from ``madqa.cli.errors``, not from this package, which imports them).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import sys
from collections.abc import Sequence

from madqa.cli import conventions, lazy_parser
from madqa.cli.bench_cmd import HELP as BENCH_HELP
from madqa.cli.console import console_handler
from madqa.cli.errors import UserError

__version__ = "0.1.0"
__all__ = ["COMMANDS", "EXAMPLES", "SUBCOMMANDS", "UserError", "build_parser", "main"]

#: (subcommand, module, one line for ``madqa -h``): the module is imported only when its command is chosen, so the
#: line is here as well as in the module's ``HELP`` (tests/cli/test_lazy_subcommands.py keeps them equal).
COMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "setup",
        "madqa.cli.setup_cmd",
        "build the sample benchmark, or prepare a dataset such as OxRML/MADQA (fetch PDFs, pages, index) offline",
    ),
    (
        "info",
        "madqa.cli.info_cmd",
        "print a short summary of the sample benchmark, or of a dataset prepared by `madqa setup --dataset SPEC`",
    ),
    (
        "extract",
        "madqa.cli.extract_cmd",
        "extract the page-text corpus of a folder of PDFs, or of a dataset's documents (downloaded by URL)",
    ),
    ("bench", "madqa.cli.bench_cmd", BENCH_HELP),
    (
        "evaluate",
        "madqa.cli.evaluate_cmd",
        "score a results JSONL file: accuracy, Page/Doc F1, Kuiper, breakdowns (paper §3)",
    ),
    (
        "calibrate",
        "madqa.cli.calibrate_cmd",
        "estimate the judge's q0/q1 (specificity/sensitivity) from human labels and write a calibration file",
    ),
    (
        "run",
        "madqa.cli.run_cmd",
        "run an agent over a split's questions and write results JSONL (resumable; score it with `madqa evaluate`)",
    ),
    (
        "space",
        "madqa.cli.space_cmd",
        "launch the Gradio Space (leaderboard, submissions, agent tab) on http://127.0.0.1:PORT",
    ),
    (
        "publish",
        "madqa.cli.publish_cmd",
        "maintainers: push to the Hugging Face Hub the page corpus of a prepared dataset (pages), the hidden "
        "test labels (labels, private), the metric Space (metric), the benchmark's eval.yaml (benchmark) or agent "
        "traces (traces)",
    ),
    (
        "human",
        "madqa.cli.human_cmd",
        "serve the human-baseline study app (same search engine as the agents); answers go to a results JSONL",
    ),
    (
        "compare",
        "madqa.cli.compare_cmd",
        "compare runs (humans and agents): accuracy, Kuiper, Page F1, Cohen's kappa, only-A/only-B, budget curves",
    ),
    (
        "figures",
        "madqa.cli.figures_cmd",
        "the paper's Table 3 and figures for several runs: PNG, PDF and SVG, figures.json and one self-contained page",
    ),
    (
        "sweep",
        "madqa.cli.sweep_cmd",
        "run a list of configurations (agent, model, k, T, …) from a YAML file, one resumable results file each",
    ),
    (
        "view",
        "madqa.cli.view_cmd",
        "explore results files in the browser (trajectories, error classes, runs side by side) or write HTML (-o)",
    ),
    (
        "retrieval",
        "madqa.cli.retrieval_cmd",
        "retrieval quality of page retrievers against the gold evidence (Recall@k, nDCG, MRR; TREC runs)",
    ),
    (
        "import-inspect",
        "madqa.cli.import_inspect_cmd",
        "turn inspect_ai logs of the madqa/bm25 task into results lines (then `madqa evaluate` scores them)",
    ),
    (
        "export",
        "madqa.cli.export_cmd",
        "write a results file as Hub agent traces (Session Trace Simple Format), one session per question",
    ),
)

#: (subcommand, module) pairs.
SUBCOMMANDS: tuple[tuple[str, str], ...] = tuple((name, module) for name, module, _ in COMMANDS)


Parser = conventions.Parser


#: What ``madqa -h`` shows after the commands: the first steps.
EXAMPLES = (
    "madqa setup",
    "madqa info",
    "madqa evaluate results.jsonl --split dev",
)


def build_parser(*, lazy: bool = False) -> argparse.ArgumentParser:
    """Build the top-level parser with every registered subcommand.

    With ``lazy``, a subcommand's module is imported and its options added only when the parse meets its name
    (what :func:`main` does: ``madqa --help`` imports no command module); without, every one is configured now.
    """
    parser = Parser(prog="madqa", description=__doc__.splitlines()[0])
    conventions.add_examples(parser, EXAMPLES)
    parser.add_argument("--version", action="version", version=f"madqa {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, action=lazy_parser.LazySubParsersAction
    )
    for name, module_name, line in COMMANDS:
        sub.add_lazy(name, line, functools.partial(_configure, module_name), formatter_class=conventions.HelpFormatter)
    return parser if lazy else lazy_parser.configure_everything(parser)


def _configure(module_name: str, parser: argparse.ArgumentParser) -> None:
    """Import a subcommand's module and add its options, examples and ``run`` to its parser."""
    module = importlib.import_module(module_name)
    module.configure(parser)
    conventions.add_examples(parser, getattr(module, "EXAMPLES", ()))  # the convention test requires them
    parser.set_defaults(_run=module.run)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``madqa`` command line and return its exit status."""
    try:
        args = build_parser(lazy=True).parse_args(argv)
    except ImportError as exc:  # the chosen command's module needs a missing optional package
        message = _missing_dependency_message(exc)
        if message is None:
            raise
        logging.getLogger("madqa").error("%s", message)
        return 2
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

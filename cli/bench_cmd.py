"""`madqa bench …`: dispatch to the benchmarks of :mod:`madqa.bench` (figures measured side by side in one run)."""

from __future__ import annotations

import argparse
import functools
import importlib

#: (name, module, one line): each module has ``configure(parser)`` for its options and ``run(args) -> int``.
BENCHES: tuple[tuple[str, str, str], ...] = (
    ("extract", "madqa.bench.extract", "page extraction: text layer and OCR against raw PyMuPDF and tesseract"),
    ("metric", "madqa.bench.metric", "scoring 500 predictions and the Kuiper bootstrap CI"),
    ("search", "madqa.bench.search", "search index build and queries at full scale, and page rendering"),
    ("limits", "madqa.bench.limits", "whom the search's work limits refuse, and an accepted query's cost"),
    ("space", "madqa.bench.space", "the Space's submission, board refresh and start-up latency (gradio_client)"),
    ("view", "madqa.bench.view", "opening a large run in the explorer and switching questions"),
    ("human", "madqa.bench.human", "the human-study app's search and page latency in a real browser"),
    ("scale", "madqa.bench.scale", "a release-sized rehearsal: every stage's time and memory against its target"),
    ("provider", "madqa.bench.provider", "the runner's own cost per question against a real model server"),
    ("leakage", "madqa.bench.leakage", "the board-probing attack against a launched Space, and what it learns"),
    ("retrieval", "madqa.bench.retrieval", "build time, index size and query throughput of each retriever"),
    ("first-run", "madqa.bench.first_run", "minutes from a clean clone to a served demo and a first scored run"),
    ("startup", "madqa.bench.startup", "start-up wall time and peak memory of the commands users start most"),
)

HELP = "benchmarks, measured side by side in one run: " + ", ".join(name for name, _, _ in BENCHES)
EPILOG = "`madqa bench NAME -h` lists a benchmark's options."
EXAMPLES = ("madqa bench metric --json", "madqa bench search --no-render")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add one sub-parser per benchmark; a benchmark's module is imported when it is chosen (or by
    :func:`madqa.cli.lazy_parser.configure_everything`).

    A benchmark module has ``configure(parser)``, ``run(args)``, ``EXAMPLES`` and optionally ``DEPRECATED`` (old
    spelling → new); it may not import the command line, so the conventions (help format, examples, deprecated
    aliases) are applied here.
    """
    from madqa.cli import conventions, lazy_parser

    parser.epilog = EPILOG
    sub = parser.add_subparsers(dest="bench", metavar="BENCH", required=True, action=lazy_parser.LazySubParsersAction)
    for name, module_name, line in BENCHES:
        sub.add_lazy(name, line, functools.partial(_configure, module_name), formatter_class=conventions.HelpFormatter)


def _configure(module_name: str, parser: argparse.ArgumentParser) -> None:
    """Import one benchmark's module and add its options, deprecated aliases, examples and ``run``."""
    from madqa.cli import conventions

    module = importlib.import_module(module_name)
    module.configure(parser)
    for old, new in getattr(module, "DEPRECATED", {}).items():
        conventions.deprecated_alias(parser, parser._option_string_actions[new], old)
    conventions.add_examples(parser, module.EXAMPLES)
    parser.set_defaults(_bench=module.run)


def run(args: argparse.Namespace) -> int:
    """Dispatch to the chosen benchmark (its :class:`~madqa.bench.BenchError`, or a dataset that is not set up, is
    the user's mistake)."""
    from madqa.bench import BenchError
    from madqa.cli.errors import UserError
    from madqa.loading_script.load import DatasetUnavailableError

    try:
        return int(args._bench(args) or 0)
    except (BenchError, DatasetUnavailableError) as exc:
        raise UserError(str(exc)) from None

"""`madqa bench …`: dispatch to the benchmarks of :mod:`madqa.bench` (figures measured side by side in one run)."""

from __future__ import annotations

import argparse
import importlib

HELP = ("benchmarks: `madqa bench extract` (page extraction), `madqa bench metric` (scoring), `madqa bench search`, "
        "`madqa bench provider` (runner overhead against a real model server), …")

#: (name, module): each module has ``configure(parser)`` for its options and ``run(args) -> int``.
BENCHES: tuple[tuple[str, str], ...] = (
    ("extract", "madqa.bench.extract"),
    ("metric", "madqa.bench.metric"),
    ("search", "madqa.bench.search"),
    ("space", "madqa.bench.space"),
    ("view", "madqa.bench.view"),
    ("human", "madqa.bench.human"),
    ("scale", "madqa.bench.scale"),
    ("provider", "madqa.bench.provider"),
    ("leakage", "madqa.bench.leakage"),
    ("retrieval", "madqa.bench.retrieval"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add one sub-parser per benchmark (a benchmark whose module is missing is left out)."""
    sub = parser.add_subparsers(dest="bench", metavar="BENCH", required=True)
    for name, module_name in BENCHES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        sp = sub.add_parser(name, help=f"{name} benchmark")
        module.configure(sp)
        sp.set_defaults(_bench=module.run)


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

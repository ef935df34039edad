"""Benchmarks behind `madqa bench …`: one module per benchmark, all measuring with :mod:`.measure`."""


class BenchError(Exception):
    """A bad option or missing input of a benchmark: `madqa bench` prints it as one line (exit status 2).

    The benchmarks sit below the command line and do not import it; ``cli/bench_cmd.py`` turns this into its
    ``UserError``.
    """

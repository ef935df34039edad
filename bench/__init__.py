"""Benchmarks behind `madqa bench …`: one module per benchmark, all measuring with :mod:`.measure`."""

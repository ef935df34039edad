"""Help texts written for users: complete lists, the file formats they need, no pointers back at themselves."""

from __future__ import annotations

import ast

import pytest
from helpers.paths import ROOT

from madqa.cli import main


def help_of(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as info:
        main([*argv, "-h"])
    assert info.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps lines: compare words


def test_sweep_help_describes_the_yaml_and_does_not_point_at_itself(capsys) -> None:
    text = help_of(capsys, "sweep")
    assert "see `madqa sweep -h`" not in text
    for key in ("configurations:", "output_dir:", "name:", "agent:", "model:", "top_k:", "oracle:", "max_steps"):
        assert key in text, key
    assert "The configuration file (YAML)" in text


def _bench_modules() -> set[str]:
    """bench/ modules that are benchmarks: they define both ``configure`` and ``run`` at top level."""
    names = set()
    for path in (ROOT / "bench").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        if {"configure", "run"} <= defs:
            names.add(path.stem)
    return names


def test_bench_help_lists_every_benchmark_with_one_line(capsys) -> None:
    from madqa.cli.bench_cmd import BENCHES, HELP

    listed = {module.rsplit(".", 1)[1] for _, module, _ in BENCHES}  # `first-run` is bench/first_run.py
    assert _bench_modules() <= listed, "a benchmark module is missing from cli/bench_cmd.BENCHES"
    text = help_of(capsys, "bench")
    for name, _, line in BENCHES:
        assert name in HELP and " ".join(line.split()) in text, name
    assert "benchmark benchmark" not in text and "…" not in HELP


def test_top_level_help_names_every_benchmark(capsys) -> None:
    text = help_of(capsys)
    for name in ("extract", "metric", "search", "space", "view", "human", "scale", "provider", "leakage"):
        assert name in text.split("bench ", 1)[1], name


def test_publish_help_lists_labels(capsys) -> None:
    top = help_of(capsys, "publish")
    assert "labels" in top and "pages" in top and "metric" in top
    from madqa.cli import publish_cmd

    assert "labels" in publish_cmd.HELP

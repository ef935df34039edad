"""Subcommands imported on use (issue 47): ``madqa -h`` lists every command from the table without importing its
module, the table's lines are the modules' ``HELP``, and ``madqa X -h`` under :func:`madqa.cli.main` (lazy) is
the help the fully built parser shows."""

from __future__ import annotations

import argparse
import importlib

import pytest

from madqa.cli import COMMANDS, build_parser, main
from madqa.cli.bench_cmd import BENCHES


def help_of(parser: argparse.ArgumentParser, *path: str) -> str:
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser.format_help()


@pytest.mark.parametrize("name,module,line", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_the_table_line_is_the_module_s_help(name: str, module: str, line: str) -> None:
    assert importlib.import_module(module).HELP == line


def test_the_lazy_parser_has_every_command_and_configures_none() -> None:
    parser = build_parser(lazy=True)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == [name for name, _, _ in COMMANDS]
    assert all(len(p._actions) == 1 for p in sub.choices.values())  # only -h: nothing configured yet
    assert "score a results JSONL file" in " ".join(parser.format_help().split())  # evaluate's line, wrapped


@pytest.mark.parametrize(
    "path",
    [(name,) for name, _, _ in COMMANDS] + [("bench", name) for name, _, _ in BENCHES],
    ids=lambda p: " ".join(p),
)
def test_help_under_main_is_the_full_parser_s(path: tuple[str, ...], capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main([*path, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out == help_of(build_parser(), *path)


def test_a_lazy_parse_equals_the_full_one() -> None:
    argv = ["bench", "startup", "--repeat", "2", "--no-space"]
    lazy, full = build_parser(lazy=True).parse_args(argv), build_parser().parse_args(argv)
    assert vars(lazy) == vars(full) and lazy.repeat == 2 and lazy.no_space


def test_a_mistyped_command_still_gets_did_you_mean(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["evalute", "x.jsonl"])
    assert done.value.code == 2
    assert "did you mean 'evaluate'?" in capsys.readouterr().err

"""The command line's conventions (:mod:`madqa.cli.conventions`), checked on every subcommand's real parser.

The walk visits every parser ``madqa`` builds (subcommands, ``publish``'s and ``bench``'s nested ones) and checks:
no banned spelling except as a hidden deprecated alias, one ``--dataset`` help text, an example in every help that
parses with the real parser, ``--json`` and ``--no-progress`` where the tables below say a command prints a report
or shows a bar, and no default written by hand next to a real one.
"""

from __future__ import annotations

import argparse
import logging
import re
import shlex

import pytest
from helpers.one_line_errors import one_line_error

from madqa.cli import SUBCOMMANDS, build_parser, conventions, main

#: Subcommands not yet under these checks (none: every command follows the conventions).
PENDING: set[str] = set()

#: Subcommands that print a report a script wants (→ ``--json``). Those left out are in ``conventions.NO_JSON``.
PRINTS_REPORT = (
    {
        "run",
        "setup",
        "info",
        "extract",
        "evaluate",
        "calibrate",
        "publish pages",
        "publish labels",
        "publish metric",
        "publish benchmark",
        "publish traces",
        "export traces",
        "compare",
        "figures",
        "sweep",
        "retrieval",
    }
    | {f"bench {name}" for name in ("extract", "metric", "search", "limits", "space", "view", "human", "scale")}
    | {f"bench {name}" for name in ("provider", "leakage", "retrieval", "first-run", "startup")}
)
#: Subcommands that show a progress bar (→ ``--no-progress``). Those left out show none.
SHOWS_BAR = {"setup", "extract", "sweep", "retrieval"}


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, argparse.ArgumentParser]]:
    """``(command path, parser)`` of ``parser``'s subcommands, nested ones included (the top level left out)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((" ".join((*path, name)), sub))
                found += walk(sub, (*path, name))
    return found


PARSER = build_parser()
COMMANDS = [(name, sub) for name, sub in walk(PARSER) if name.split()[0] not in PENDING]
#: Options that other commands borrow from a PENDING command's module (`add_ray_options`, `--model-option` of
#: cli/run_cmd.py): their help texts are that module's, so they wait with it.
PENDING_OPTIONS = {
    option for name, sub in walk(PARSER) if name in PENDING for a in sub._actions for option in a.option_strings
} - {"-h", "--help", "-o", "--output", "--dataset", "--split", "--json", "--no-progress"}
LEAVES = [
    (name, sub) for name, sub in COMMANDS if not any(isinstance(a, argparse._SubParsersAction) for a in sub._actions)
]


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return dict(parser._option_string_actions)


def examples(parser: argparse.ArgumentParser) -> list[str]:
    epilog = parser.epilog or ""
    block = epilog.split("examples:\n", 1)[1] if "examples:\n" in epilog else ""
    return [line.strip() for line in block.splitlines() if line.strip().startswith("madqa ")]


def test_the_walk_sees_every_subcommand_and_benchmark() -> None:
    names = {name for name, _ in walk(PARSER)}
    assert {name for name, _ in SUBCOMMANDS} <= names
    assert {"bench metric", "bench search", "publish pages", "publish labels"} <= names
    assert len(LEAVES) >= 25


@pytest.mark.parametrize("name,parser", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_no_banned_spelling_except_as_a_hidden_deprecated_alias(name: str, parser: argparse.ArgumentParser) -> None:
    for spelling in conventions.BANNED:
        action = options(parser).get(spelling)
        if action is None or (name == "bench search" and spelling == "-k"):
            continue
        assert action.help is argparse.SUPPRESS and isinstance(action, conventions._DeprecatedAlias), (name, spelling)


def test_the_top_level_help_has_examples_that_parse() -> None:
    found = examples(PARSER)
    assert found
    for example in found:
        build_parser().parse_args(shlex.split(example)[1:])


@pytest.mark.parametrize("name,parser", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_help_has_an_example_that_parses(name: str, parser: argparse.ArgumentParser) -> None:
    found = examples(parser)
    assert found, f"`madqa {name} -h` shows no example"
    for example in found:
        argv = shlex.split(example)[1:]
        assert " ".join(argv).startswith(name), example
        args = build_parser().parse_args(argv)  # the real parser: a stale example exits with status 2
        assert not conventions.deprecation_notes(args), f"{example}: uses a deprecated spelling"


@pytest.mark.parametrize("name,parser", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_one_dataset_text_and_default(name: str, parser: argparse.ArgumentParser) -> None:
    action = options(parser).get("--dataset")
    if action is None:
        return
    assert action.help.startswith(conventions.DATASET_HELP), name
    rest = action.help[len(conventions.DATASET_HELP) :]
    default = conventions.DATASET_DEFAULT_EXCEPTIONS.get(name, conventions.DATASET_DEFAULT)
    assert rest in ("", f" (default: {default})"), (name, rest)
    assert action.metavar == "SPEC" and action.default is None, name


def test_json_and_no_progress_where_required() -> None:
    leaves = {name for name, _ in LEAVES}
    assert PRINTS_REPORT <= leaves and SHOWS_BAR <= leaves
    for name, parser in LEAVES:
        top = name.split()[0]
        if name in PRINTS_REPORT:
            assert "--json" in options(parser), f"`madqa {name}` prints a report but has no --json"
        else:
            assert top in conventions.NO_JSON, f"`madqa {name}`: --json, or the reason why not in NO_JSON"
        if name in SHOWS_BAR:
            assert "--no-progress" in options(parser), f"`madqa {name}` shows a bar but has no --no-progress"
    assert set(conventions.NO_PROGRESS) <= leaves and not set(conventions.NO_PROGRESS) & SHOWS_BAR


@pytest.mark.parametrize("name,parser", LEAVES, ids=[n for n, _ in LEAVES])
def test_no_default_written_by_hand_next_to_a_real_one(name: str, parser: argparse.ArgumentParser) -> None:
    formatter = parser._get_formatter()
    for action in parser._actions:
        if not action.option_strings or action.help in (None, argparse.SUPPRESS):
            continue
        if set(action.option_strings) & PENDING_OPTIONS:
            continue
        if conventions.shows_default(action):
            # the value comes from the action: the help may not spell it (it would drift from the code)
            assert not re.search(r"\bdefault\b", action.help.replace("%(default)s", "")), (name, action.help)
            shown = formatter._expand_help(action)
            assert f"(default: {action.default})" in shown, (name, shown)
        else:  # unset means something the help may say in words, but a number written here would drift
            assert not re.search(r"\bdefault:? \d", action.help), (name, action.help)
        assert isinstance(parser.formatter_class, type) and issubclass(
            parser.formatter_class, conventions.HelpFormatter
        )


@pytest.mark.parametrize(
    "argv, problem",
    [
        (["run", "--agent", "bm25"], "the following arguments are required: -o/--output"),
        (["run", "-o", "r.jsonl", "--workers", "many"], "argument --workers"),
        (["evaluate"], "the following arguments are required"),
    ],
)
def test_an_argument_error_comes_first_in_one_line_with_a_help_hint(argv, problem, capsys) -> None:
    """Issue 44, item 23: the problem, then a pointer to --help; not the usage block first (15 lines for run)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    lines = capsys.readouterr().err.splitlines()
    assert info.value.code == 2
    assert lines[0].startswith(f"madqa {argv[0]}: error: ") and problem in lines[0], lines
    assert lines[1:] == [f"(see `madqa {argv[0]} --help` for the options)"], lines


@pytest.mark.parametrize(
    "argv,dest,value,new",
    [
        (["extract", "--pdfs", "d", "--out", "p.jsonl"], "output", "p.jsonl", "-o/--output"),
        (["figures", "a.jsonl", "--out", "figs"], "output_dir", "figs", "--output-dir"),
        (["human", "--out-dir", "h"], "output_dir", "h", "--output-dir"),
        (["human", "--k", "3"], "top_k", 3, "--top-k"),
        (["human", "--backend", "tantivy"], "search_backend", "tantivy", "--search-backend"),
        (["retrieval", "--retriever", "bm25", "--runs-dir", "r"], "output_dir", "r", "--output-dir"),
        (["retrieval", "--retriever", "bm25", "--k", "4"], "missed_at", 4, "--missed-at"),
        (["view", "r.jsonl", "--export", "x.html"], "output", "x.html", "-o/--output"),
        (["compare", "a.jsonl", "b.jsonl", "--plot", "c.png"], "output", "c.png", "-o/--output"),
        (["import-inspect", "l", "-o", "r.jsonl", "--force"], "overwrite", True, "--overwrite"),
        (["setup", "--force"], "redo", True, "--redo"),
        (["bench", "human", "--backend", "tantivy"], "search_backend", "tantivy", "--search-backend"),
        (["bench", "limits", "--backend", "whoosh", "--search-backend", "tantivy"], "search_backend", None, None),
    ],
)
def test_old_spellings_still_work_and_name_the_new_one(argv, dest, value, new) -> None:
    args = build_parser().parse_args(argv)
    got = getattr(args, dest)
    if new is None:  # an append option: old and new spellings add to one list
        assert got == ["whoosh", "tantivy"]
        return
    assert (str(got) if isinstance(value, str) else got) == value
    (note,) = conventions.deprecation_notes(args)
    assert argv[argv.index(note.split()[0])] and f"use {new}" in note


def test_old_and_new_spelling_together_are_refused(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["extract", "--pdfs", "d", "--out", "a.jsonl", "-o", "b.jsonl"])
    assert info.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_main_logs_the_deprecation_once_logging_is_set_up(tmp_path, caplog) -> None:
    caplog.set_level(logging.WARNING)
    out = tmp_path / "r.jsonl"
    out.write_text("")
    assert main(["import-inspect", str(tmp_path / "none.eval"), "-o", str(out), "--force"]) == 2  # no inspect log
    assert "--force is deprecated" in caplog.text and "use --overwrite" in caplog.text


def test_a_mistyped_subcommand_gets_did_you_mean(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["evalute", "r.jsonl"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "did you mean 'evaluate'?" in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        main(["bench", "metrik"])
    assert "did you mean 'metric'?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["zzzz"])
    assert "did you mean" not in capsys.readouterr().err  # nothing close: no guess
    with pytest.raises(SystemExit):  # an agent name (run's own parser reads --agent first)
        main(["run", "--agent", "bm52", "-o", "r.jsonl"])
    assert "did you mean 'bm25'?" in capsys.readouterr().err


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("locl", "unknown model spec 'locl', did you mean 'local'?"),
        ("foo:bar", "unknown provider 'foo' in model spec 'foo:bar'"),
        ("opnai:gpt-4.1", "did you mean 'openai'?"),
        ("gpt-4", "model spec 'gpt-4' has no provider"),
    ],
)
def test_model_spec_mistakes_name_the_provider_and_a_guess(spec: str, expected: str) -> None:
    from madqa.agents.models.factory import PROVIDERS, parse_spec

    message = one_line_error(ValueError, parse_spec, spec)
    assert expected in message and ", ".join(PROVIDERS) in message


def test_a_bad_judge_spec_is_one_line_exit_2(layout, tmp_path, caplog) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text("")
    assert main(["evaluate", str(results), "--split", "dev", "--mode", "judge", "--judge", "locl"]) == 2
    (record,) = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "did you mean 'local'?" in record.getMessage() and "\n" not in record.getMessage()

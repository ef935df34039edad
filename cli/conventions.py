"""The command line's conventions, in one place: one spelling and one help text per idea, for every subcommand.

Every subcommand (and every ``madqa bench`` benchmark) adds the shared flags through these helpers rather than
spelling them itself, so that an idea has one name everywhere:

=====================  =====================================================================================
``-o/--output FILE``   the one file a command writes (results, pages, a report, a plot)
``--output-dir DIR``   the folder a command writes several files into
``--overwrite``        replace an existing output instead of refusing
``--dataset SPEC``     which dataset: one text (:data:`DATASET_HELP`), one default (:data:`DATASET_DEFAULT`)
``--json``             one JSON document on stdout; logs stay on stderr
``--no-progress``      hide the progress bars (they go to stderr)
``--top-k K``          results per search
``--search-backend``   the search engine (whoosh, tantivy)
=====================  =====================================================================================

Defaults are shown by :class:`HelpFormatter` from the real default (``%(default)s``), never written by hand in a
help text, so they cannot drift. Every subcommand module defines ``EXAMPLES`` (command lines starting with
``madqa``) that its ``--help`` shows after the options; ``tests/cli/test_cli_conventions.py`` parses each one with
the real parser.

Old spellings are accepted for one release (:func:`deprecated_alias`): hidden from ``--help``, they set the new
option and leave a WARNING naming the new spelling (logged by :func:`log_deprecations` once logging is set up).

``setup --force`` is renamed ``--redo`` (old spelling kept as a deprecated alias): everywhere else ``--force``
meant "replace an existing output", which is now ``--overwrite``; ``setup`` replaces no output of the user's, it
redoes its own steps, so it gets a word of its own rather than sharing ``--overwrite``'s meaning or keeping
``--force``'s ambiguity.

Commands that print no report a script wants, or show no bar, and so have no ``--json`` / ``--no-progress``:
see :data:`NO_JSON` and :data:`NO_PROGRESS` (the reasons, which the convention test reads).
"""

from __future__ import annotations

import argparse
import difflib
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

logger = logging.getLogger("madqa.cli")

#: The one help text of ``--dataset`` (the default is appended by :func:`add_dataset_argument`).
DATASET_HELP = "the dataset: sample, a folder in the release's schema, or a Hub id such as OxRML/MADQA"
#: The one default of ``--dataset`` (``madqa.loading_script.load.dataset_spec(None)``).
DATASET_DEFAULT = "$MADQA_DATASET, else sample"
#: Commands whose ``--dataset`` default differs (the convention test allows only these). ``setup`` builds the
#: sample unless told which dataset to prepare: reading ``$MADQA_DATASET`` there would change what a plain
#: ``madqa setup`` (``make demo``) does, so its help says so instead.
DATASET_DEFAULT_EXCEPTIONS = {
    "setup": "the embedded sample, whatever $MADQA_DATASET says",
    # the scoring commands score files against the gold they were run on unless told otherwise (their lines record it)
    **dict.fromkeys(
        ("evaluate", "compare", "figures", "view", "export traces"),
        "the dataset the files' lines were run on, else $MADQA_DATASET, else sample",
    ),
}
#: Commands without ``--json``, and why not.
NO_JSON = {
    "space": "serves the Space until interrupted; prints nothing",
    "view": "serves the explorer or writes an HTML report (-o); the numbers are `madqa compare --json`'s",
    "human": "serves the study app; --json applies to --list-batches, the one thing it prints",
    "import-inspect": "writes results lines (-o) and prints nothing; `madqa evaluate --json` reports on them",
}
#: Commands that show no progress bar, and so have no ``--no-progress``.
NO_PROGRESS = {
    "figures": "embeds with progress=False and renders in-process: no bar to hide",
}
#: Spellings no command may define except as a deprecated alias (the convention test checks every parser).
BANNED = ("--out", "--out-dir", "--runs-dir", "--export", "--plot", "--force", "--backend", "--k")
#: Where a deprecation warning says the old spelling goes.
REMOVAL = "the next release"
_NOTES = "_deprecated_spellings"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs (the examples) kept as written; a meaningful default appended as
    ``(default: %(default)s)`` to every option whose help does not show it already."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "%(default)" in text or not shows_default(action):
            return text
        return f"{text} (default: %(default)s)"


def shows_default(action: argparse.Action) -> bool:
    """Whether ``--help`` should state ``action``'s default: a real value, not "unset" (``None``), a switch's
    ``False``, an empty list or a suppressed one."""
    default = action.default
    if default is None or default is argparse.SUPPRESS or isinstance(default, bool) or default == []:
        return False
    return bool(action.option_strings) and action.help is not argparse.SUPPRESS


class _DeprecatedAlias(argparse.Action):
    """An old spelling: sets the new option's destination and notes the rename for :func:`log_deprecations`."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, store: str, **kwargs: Any) -> None:
        self.new, self.store = new, store
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: Any = None) -> None:
        notes = list(getattr(namespace, _NOTES, []))
        notes.append(f"{option} is deprecated and will be removed in {REMOVAL}; use {self.new}")
        setattr(namespace, _NOTES, notes)
        if self.store == "true":
            setattr(namespace, self.dest, True)
        elif self.store == "append":
            setattr(namespace, self.dest, [*(getattr(namespace, self.dest) or []), values])
        else:
            setattr(namespace, self.dest, values)


def deprecated_alias(target: Any, action: argparse.Action, *old: str) -> None:
    """Accept ``old`` spellings of ``action`` for one release (hidden from ``--help``, warned when used).

    ``target`` is where ``action`` was added (a parser or a group); the aliases join it.
    """
    if isinstance(action, argparse._StoreTrueAction):
        store, extra = "true", {"nargs": 0}
    elif isinstance(action, argparse._AppendAction):
        store, extra = "append", {"type": action.type, "choices": action.choices, "metavar": action.metavar}
    else:
        store, extra = "value", {"type": action.type, "choices": action.choices, "metavar": action.metavar}
        if action.nargs is not None:
            extra["nargs"] = action.nargs
    new = "/".join(action.option_strings)
    target.add_argument(
        *old, dest=action.dest, action=_DeprecatedAlias, new=new, store=store, help=argparse.SUPPRESS, **extra
    )


def deprecation_notes(args: argparse.Namespace) -> list[str]:
    """The renames the parsed command line used (one message each, naming the new spelling)."""
    return list(getattr(args, _NOTES, []))


def log_deprecations(args: argparse.Namespace) -> None:
    """One WARNING per old spelling used (called once logging is configured)."""
    for note in deprecation_notes(args):
        logger.warning("%s", note)


def _group(parser: argparse.ArgumentParser, required: bool, aliases: Sequence[str]) -> Any:
    """Where an option with old spellings goes: a mutually exclusive group, so that a required option is satisfied
    by its old spelling too and the two spellings cannot be given together."""
    return parser.add_mutually_exclusive_group(required=required) if aliases else parser


def add_output_file(
    parser: argparse.ArgumentParser,
    help: str,
    *,
    required: bool = False,
    metavar: str = "FILE",
    default: Any = None,
    old: Sequence[str] = (),
) -> argparse.Action:
    """``-o/--output FILE``: the one file the command writes (``old``: deprecated spellings)."""
    from pathlib import Path

    target = _group(parser, required, old)
    action = target.add_argument(
        "-o",
        "--output",
        type=Path,
        required=required and not old,
        metavar=metavar,
        default=default,
        help=help,
    )
    if old:
        deprecated_alias(target, action, *old)
    return action


def add_output_dir(
    parser: argparse.ArgumentParser, help: str, *, required: bool = False, default: Any = None, old: Sequence[str] = ()
) -> argparse.Action:
    """``--output-dir DIR``: the folder the command writes its files into."""
    from pathlib import Path

    target = _group(parser, required, old)
    action = target.add_argument(
        "--output-dir", type=Path, required=required and not old, metavar="DIR", default=default, help=help
    )
    if old:
        deprecated_alias(target, action, *old)
    return action


def add_overwrite(parser: argparse.ArgumentParser, what: str = "the output", *, old: Sequence[str] = ()) -> None:
    """``--overwrite``: replace an existing output instead of refusing."""
    action = parser.add_argument("--overwrite", action="store_true", help=f"replace {what} if it exists")
    if old:
        deprecated_alias(parser, action, *old)


def add_dataset_argument(target: Any, *, default_text: str | None = DATASET_DEFAULT) -> None:
    """``--dataset SPEC`` with the one help text (``target``: a parser or a group it belongs to; ``default_text``
    ``None`` where no default applies: one of a required group's choices)."""
    text = DATASET_HELP if default_text is None else f"{DATASET_HELP} (default: {default_text})"
    target.add_argument("--dataset", metavar="SPEC", help=text)


def add_gold_arguments(
    parser: argparse.ArgumentParser,
    split_help: str = "labelled split to score against",
    *,
    recorded_default: bool = False,
) -> None:
    """``--split NAME`` and, exclusive of each other, ``--gold FILE`` and ``--dataset SPEC`` (scoring commands).

    ``recorded_default`` (``evaluate``, ``compare``, ``figures``, ``view``): both default to what the results files'
    lines recorded (``None`` here; :mod:`madqa.cli.recorded_gold` reads the files), so that a run is scored against
    the gold it was run on.
    """
    from pathlib import Path

    if recorded_default:
        parser.add_argument(
            "--split", help=f"{split_help} (default: the split the files' lines were run on, else dev)"
        )
    else:
        parser.add_argument("--split", default="dev", help=split_help)
    gold = parser.add_mutually_exclusive_group()
    gold.add_argument("--gold", type=Path, metavar="PATH.jsonl", help="labelled questions JSONL instead of a split")
    add_dataset_argument(
        gold, default_text=DATASET_DEFAULT_EXCEPTIONS["evaluate"] if recorded_default else DATASET_DEFAULT
    )


def score_command(output: Any, split: str | None, dataset: str | None) -> str:
    """The shell command that scores results file ``output`` of ``split`` of ``dataset`` (a run's closing hint).

    ``--dataset`` is named whenever the dataset is not the sample (a relative folder made absolute, so the hint
    works from anywhere); every word is shell-quoted.
    """
    import shlex
    from pathlib import Path

    from madqa.loading_script.load import SAMPLE, dataset_spec

    words = ["madqa", "evaluate", str(output)] + (["--split", split] if split else [])
    spec = dataset_spec(dataset)
    if spec != SAMPLE:
        folder = Path(spec).expanduser()
        words += ["--dataset", str(folder.resolve()) if folder.is_dir() else spec]
    return shlex.join(words)


def add_kuiper_arguments(parser: argparse.ArgumentParser, *, order_and_seed: bool = True) -> None:
    """``--resamples N`` of the Kuiper CI's bootstrap and, with ``order_and_seed`` (``evaluate``, ``compare``,
    ``figures``), ``--kuiper-order`` and the bootstrap's ``--seed``: one option, one meaning, in every command."""
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples for the Kuiper CI")
    if not order_and_seed:
        return
    parser.add_argument(
        "--kuiper-order",
        choices=("block", "file"),
        default="block",
        help="block: ties in effort read as one block, independent of line order; "
        "file: D read at every k as in the paper's F.3, ties in file order",
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")


def add_json_flag(parser: argparse.ArgumentParser, what: str = "the report") -> None:
    """``--json``: one JSON document on stdout, the logs on stderr."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as one JSON document on stdout")


def add_no_progress_flag(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``: hide the progress bars."""
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def add_top_k(
    parser: argparse.ArgumentParser, help: str = "results per search", *, default: Any = None, old: Sequence[str] = ()
) -> None:
    """``--top-k K``: results per search."""
    action = parser.add_argument("--top-k", type=int, metavar="K", default=default, help=help)
    if old:
        deprecated_alias(parser, action, *old)


#: The search engines ``--search-backend`` chooses from.
SEARCH_BACKENDS = ("whoosh", "tantivy")


def add_search_backend(
    parser: argparse.ArgumentParser,
    help: str = "search engine",
    *,
    default: Any = None,
    append: bool = False,
    old: Sequence[str] = (),
) -> None:
    """``--search-backend NAME`` (``append``: may be given more than once)."""
    action = parser.add_argument(
        "--search-backend",
        choices=SEARCH_BACKENDS,
        action="append" if append else "store",
        default=default,
        help=help,
    )
    if old:
        deprecated_alias(parser, action, *old)


def add_examples(parser: argparse.ArgumentParser, examples: Iterable[str]) -> None:
    """Show ``examples`` after the options in ``parser``'s ``--help`` (after any epilog it has already)."""
    lines = list(examples)
    parser.formatter_class = HelpFormatter
    if not lines:
        return
    block = "examples:\n" + "\n".join(f"  {line}" for line in lines)
    parser.epilog = f"{parser.epilog.rstrip()}\n\n{block}" if parser.epilog else block


def examples_for(prog: str, examples: Iterable[str]) -> list[str]:
    """The ``examples`` that run ``prog`` (e.g. ``madqa publish pages``), for a nested parser's help."""
    return [e for e in examples if e == prog or e.startswith(prog + " ")]


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word`` when one is close enough to be a typo, else ``None``.

    >>> did_you_mean("evalute", ["evaluate", "extract"]), did_you_mean("zzz", ["evaluate"])
    ('evaluate', None)
    """
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


class Parser(argparse.ArgumentParser):
    """``argparse`` with "did you mean" for a mistyped choice (a subcommand, a benchmark, a ``choices`` value)."""

    _INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")

    def error(self, message: str):  # noqa: ANN201 - argparse's signature (it never returns)
        found = self._INVALID_CHOICE.search(message)
        if found:
            close = did_you_mean(found.group(1), re.findall(r"'([^']*)'", found.group(2)))
            if close is not None:
                message = f"{message}; did you mean '{close}'?"
        # The problem first, in one line, and where to read more: argparse's default puts the whole usage (15 lines
        # for `madqa run`) before it, so the error scrolls out of a terminal's view (issue 44, item 23).
        self.exit(2, f"{self.prog}: error: {message}\n(see `{self.prog} --help` for the options)\n")

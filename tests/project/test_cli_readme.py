"""The README's shell blocks, run top to bottom in one folder as a newcomer does, never clash: every results file a
command reads was written by an earlier block, and no two commands write the same file (a second `-o r.jsonl`
would resume, or refuse, the first run's file)."""

from __future__ import annotations

import re
import shlex

from helpers.paths import ROOT

README = ROOT / "README.md"
#: Options whose value is a file or folder the command writes.
WRITES = ("-o", "--output", "--output-dir", "--out", "--export", "--plot")  # new spellings, then the deprecated
#: Subcommands whose positional ``*.jsonl`` arguments are results files they read.
READERS = ("evaluate", "compare", "view", "figures")


def commands(text: str) -> list[tuple[int, list[str]]]:
    """``(line, argv)`` of every ``madqa`` command in the ```bash blocks, in order (comments dropped)."""
    out = []
    for block in re.finditer(r"```bash\n(.*?)```", text, re.S):
        first = text[: block.start()].count("\n") + 2
        for offset, raw in enumerate(block.group(1).splitlines()):
            try:
                argv = shlex.split(raw, comments=True)
            except ValueError:  # a line continued with a backslash: its words are enough here
                argv = raw.split("#", 1)[0].replace("\\", " ").split()
            while argv and "=" in argv[0] and not argv[0].startswith("-"):
                argv = argv[1:]  # VAR=value prefixes
            if argv and argv[0].endswith("madqa"):
                out.append((first + offset, argv[1:]))
    return out


def effects(argv: list[str]) -> tuple[list[str], list[str]]:
    """(files read, files written) of one command line."""
    written = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in WRITES]
    read: list[str] = []
    if argv and argv[0] in READERS:
        values = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a.startswith("-")}
        read = [a for a in argv[1:] if a.endswith(".jsonl") and a not in values]
    return read, written


def problems(text: str) -> list[str]:
    """Every clash of the README's commands, as ``line N: …``."""
    seen: dict[str, int] = {}
    found = []
    for line, argv in commands(text):
        read, written = effects(argv)
        found += [f"line {line}: reads {f}, which no earlier command writes" for f in read if f not in seen]
        for f in written:
            if f in seen:
                found.append(f"line {line}: writes {f}, already written on line {seen[f]}")
            seen.setdefault(f, line)
    return found


def test_the_checker_finds_both_kinds_of_clash() -> None:
    text = (
        "```bash\nmadqa run -o r.jsonl\nmadqa evaluate r.jsonl --split dev\n```\n"
        "```bash\nmadqa run --agent repl -o r.jsonl   # again\n"
        "madqa compare me.jsonl r.jsonl --names a b\n```\n"
    )
    assert problems(text) == [
        "line 6: writes r.jsonl, already written on line 2",
        "line 7: reads me.jsonl, which no earlier command writes",
    ]


def test_readme_commands_run_in_sequence_without_clashing() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(commands(text)) >= 10  # the checker sees the blocks
    assert problems(text) == []


def test_docs_pages_never_write_one_file_twice() -> None:
    """A docs page's blocks are read top to bottom too: no two of its commands write the same file. (A page may read
    a results file another page wrote, e.g. the figures page reads the runs of the quick start.)"""
    pages = sorted((ROOT / "docs").rglob("*.md"))
    assert sum(len(commands(p.read_text(encoding="utf-8"))) for p in pages) >= 30
    twice = {
        str(p.relative_to(ROOT)): [x for x in problems(p.read_text(encoding="utf-8")) if "already written" in x]
        for p in pages
    }
    assert {page: found for page, found in twice.items() if found} == {}

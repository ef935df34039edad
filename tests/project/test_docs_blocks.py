"""Every shell block of the README and the documentation site runs in a test or says why not.

The line before each ```bash block is a marker:

* ``<!-- block: run -->``: run here with bash, in order with the page's other runnable blocks, in one temporary
  folder per page (``docs/`` linked into it, as in a checkout), with ``MADQA_HOME`` built once per session by
  ``madqa setup`` and the venv's ``madqa`` first on ``PATH``;
* ``<!-- block: run slow -->``: the same, in :func:`test_slow_blocks_run` (blocks that take minutes);
* ``<!-- block: covered-by tests/x/test_y.py::test_z -->``: an existing test runs the same commands (checked: the
  file and the test exist);
* ``<!-- block: needs keys|hub|root|gpu|long -->``: not run, for that reason.

An unmarked block, or a marker of another form, fails :func:`test_every_block_is_marked`. Every ``madqa`` command
of every block must also be accepted by the real command-line parser.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.paths import ROOT

#: A slow block's limit: a guard against a hang, not a speed target (the README's three local-model questions take
#: about 2 min on an idle 2-core machine and passed 15 min at load 15; speed lives in `madqa bench`).
HANG_S = 3600

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
NEEDS = ("keys", "hub", "root", "gpu", "long")
MARKER = re.compile(r"<!-- block: (.*?) -->")
FENCE = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
EXAMPLE = ROOT / "docs" / "examples" / "echo_model.py"


@dataclass(frozen=True)
class Block:
    """One ```bash block: where it is, its marker (``None``: unmarked) and its text."""

    page: Path
    line: int
    marker: str | None
    text: str

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path, text: str | None = None) -> list[Block]:
    """The ```bash blocks of ``page`` (or of ``text``, read as that page), in order."""
    text = page.read_text(encoding="utf-8") if text is None else text
    found = []
    for fence in FENCE.finditer(text):
        line = text[: fence.start()].count("\n") + 1
        before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = MARKER.fullmatch(before)
        found.append(Block(page, line, marker.group(1).strip() if marker else None, fence.group(1)))
    return found


def defined_tests(path: Path) -> set[str]:
    """The names of the test functions defined in the file ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def marker_problem(block: Block) -> str | None:
    """Why ``block``'s marker is not acceptable, or ``None``."""
    if block.marker is None:
        return f"{block.where()}: a ```bash block without a marker (<!-- block: run|covered-by …|needs … -->)"
    kind, _, rest = block.marker.partition(" ")
    if kind == "run" and rest in ("", "slow"):
        return None
    if kind == "needs" and rest in NEEDS:
        return None
    if kind == "covered-by" and rest:
        file, _, name = rest.partition("::")
        path = ROOT / file
        if not path.is_file():
            return f"{block.where()}: covered-by names {file}, which does not exist"
        if name and name not in defined_tests(path):
            return f"{block.where()}: covered-by names {name}, which {file} does not define"
        return None
    known = f"run, run slow, covered-by FILE::TEST, needs {'|'.join(NEEDS)}"
    return f"{block.where()}: unknown marker {block.marker!r} ({known})"


def madqa_commands(block: Block) -> list[list[str]]:
    """The argument lists of the ``madqa`` commands of ``block`` (comments, ``VAR=value`` prefixes dropped)."""
    commands = []
    for raw in block.text.replace("\\\n", " ").splitlines():
        for part in re.split(r"&&|;", raw.split(" #", 1)[0]):
            argv = shlex.split(part)
            while argv and "=" in argv[0] and not argv[0].startswith("-"):
                argv = argv[1:]
            if argv and argv[0] == "madqa":
                commands.append(argv[1:])
    return commands


def test_the_checker_refuses_unmarked_and_unknown_blocks() -> None:
    page = ROOT / "README.md"
    text = (
        "<!-- block: run -->\n```bash\nmadqa info\n```\n\n```bash\nmadqa setup\n```\n"
        "<!-- block: needs coffee -->\n```bash\nmadqa info\n```\n"
        "<!-- block: covered-by tests/project/test_docs_blocks.py::no_such_test -->\n```bash\nmadqa info\n```\n"
    )
    found = [marker_problem(b) for b in blocks(page, text)]
    assert found[0] is None
    assert found[1] == "README.md:6: a ```bash block without a marker (<!-- block: run|covered-by …|needs … -->)"
    assert found[2] is not None and "unknown marker 'needs coffee'" in found[2]
    assert found[3] is not None and "no_such_test, which tests/project/test_docs_blocks.py does not define" in found[3]


def test_every_block_is_marked() -> None:
    every = [b for page in PAGES for b in blocks(page)]
    assert len(every) >= 30  # the checker sees the blocks
    assert [p for p in map(marker_problem, every) if p] == []


def test_every_madqa_command_is_accepted_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    from madqa.cli import build_parser

    parser, refused = build_parser(), []
    for page in PAGES:
        for block in blocks(page):
            for argv in madqa_commands(block):
                try:
                    parser.parse_args(argv)
                except SystemExit:
                    refused.append(f"{block.where()}: madqa {shlex.join(argv)}: {capsys.readouterr().err.strip()}")
    assert refused == []


def run_blocks(page: Path, kinds: tuple[str, ...], home: Path, folder: Path) -> None:
    """Run ``page``'s blocks marked with one of ``kinds``, in order, in ``folder`` (``docs/`` linked into it)."""
    chosen = [b for b in blocks(page) if b.marker in kinds]
    if not chosen:
        return
    folder.mkdir()
    (folder / "docs").symlink_to(ROOT / "docs")
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {**os.environ, "MADQA_HOME": str(home), "PATH": path}
    env.pop("MADQA_DATASET", None)  # the blocks read the sample, as a newcomer's shell does
    for block in chosen:
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.text],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_S,
        )
        assert done.returncode == 0, f"{block.where()} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_run_blocks_run(page: Path, built_home: Path, tmp_path: Path) -> None:
    run_blocks(page, ("run",), built_home, tmp_path / "page")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_slow_blocks_run(page: Path, built_home: Path, tmp_path: Path) -> None:
    run_blocks(page, ("run", "run slow"), built_home, tmp_path / "page")


def test_the_readme_shows_the_example_model_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.findall(r"^```python\n(.*?)^```", readme, re.S | re.M)
    assert EXAMPLE.read_text(encoding="utf-8") in shown
    assert len(EXAMPLE.read_text(encoding="utf-8").splitlines()) <= 25


def test_the_example_model_factory_runs(built_home: Path, tmp_path: Path) -> None:
    import json

    import jsonschema

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE.parent), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "echo.jsonl"
    argv = ["run", "--model", "py:echo_model:make_model", "--split", "dev", "--limit", "1", "-o", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "madqa.cli", *argv, "--no-progress"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    [line] = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert line["error"] is None and line["steps"] == 1, line  # one search, then the answer
    [cited] = line["citations"]
    assert line["answer"] == [cited["document"]] and cited["page"] >= 1
    assert cited["page"] == line["search_history"][0]["results"][0]["page"]  # the first page shown
    schema = json.loads((ROOT / "metric" / "results.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(line, schema)  # what `madqa run` writes is what the published schema describes
    scored = subprocess.run(
        [sys.executable, "-m", "madqa.cli", "evaluate", str(out), "--split", "dev", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["n_predicted"] == 1


def test_the_readmes_links_into_the_checkout_resolve() -> None:
    """The front door links to the docs pages by path (mkdocs checks the site's own links with --strict)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = {t.split("#")[0] for t in re.findall(r"\]\(([^)]+)\)", readme) if not t.startswith("http")}
    assert len(targets) >= 15
    assert sorted(t for t in targets if not (ROOT / t).exists()) == []

"""The test tree mirrors the packages and shares its helpers in one place.

* every test file sits under ``tests/<folder>/…`` where ``<folder>/…`` is a source package of the project (or
  ``tests/project/`` for repository-wide checks), and basenames are unique (pytest imports test files by name);
* no test file imports another one, by ``import`` or by a ``py:test_…`` model spec: what tests share lives in
  ``tests/helpers/`` (ports, stand-ins, browsers, servers, fixtures), and a test file does not redefine a helper;
* the markers say what a test needs: a file that drives a browser is marked ``browser``, one that starts a server
  (a Gradio app, llama.cpp's server, a stand-in provider) is marked ``server`` (or ``browser``), so that
  ``make test-fast`` (``-m "not slow and not browser and not server"``) leaves them out.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest
from helpers.paths import ROOT, TESTS

HELPERS = TESTS / "helpers"
#: Folders of tests/ that mirror no package: repository-wide checks.
PROJECT = "project"
#: A test file that uses one of these starts a server / drives a browser.
SERVER_USES = (
    "free_port",
    "launch_gradio",
    "LlamaServer",
    "provider_standin",
    "launch_human",
    "gradio_client",
    "serving_human",
    "dev_human_app",
    "serving_view_app",
    "view_app_url_fixture",
    "launched_space",
)
BROWSER_USES = ("browser_page", "require_browser", "chromium", "watched_page")


def all_test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def _markers(tree: ast.Module) -> set[str]:
    """The marks of the module's ``pytestmark`` (``pytest.mark.x`` or a list of them)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            return {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute) and n.attr != "mark"}
    return set()


def test_every_test_file_mirrors_a_package_and_basenames_are_unique() -> None:
    bad = []
    for path in all_test_files():
        folder = path.parent.relative_to(TESTS)
        if folder.parts[:1] == (PROJECT,) and len(folder.parts) == 1:
            continue
        if not folder.parts or folder.parts[0] == "helpers" or not (ROOT / folder / "__init__.py").is_file():
            bad.append(f"  {path.relative_to(ROOT)}: tests/{folder} mirrors no package ({folder}/__init__.py)")
    names = Counter(p.name for p in all_test_files())
    bad += [f"  {name}: {count} files of that name" for name, count in names.items() if count > 1]
    assert not list(HELPERS.glob("test_*.py")), "tests/helpers/ holds helpers, not tests"
    assert not bad, "test files out of place:\n" + "\n".join(bad)


def _definitions(tree: ast.Module) -> dict[str, str]:
    """Top-level functions and classes by name, as their AST without docstrings (a copy differs only in those)."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            out[node.name] = ast.dump(type(node)(**{**node.__dict__, "body": body}), include_attributes=False)
    return out


def test_no_test_file_imports_another_or_copies_a_helper() -> None:
    helpers = {
        shape: f"helpers/{path.name}:{name}"
        for path in HELPERS.glob("*.py")
        for name, shape in _definitions(ast.parse(path.read_text(encoding="utf-8"))).items()
    }
    bad = []
    for path in [*all_test_files(), *sorted(HELPERS.glob("*.py"))]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif _is_str(node):
                names = re.findall(r"(?:^|\s|;)(?:from|import) (test_\w+)", node.value)
                names += re.findall(r"py:(test_\w+):", node.value)
            for name in names:
                if name.split(".")[0].startswith("test_") and name.split(".")[0] != path.stem:
                    bad.append(f"  {where}:{getattr(node, 'lineno', 0)} uses the test file {name}")
        for name, shape in _definitions(tree).items() if path.parent != HELPERS else ():
            if shape in helpers:
                bad.append(f"  {where}: {name} is a copy of {helpers[shape]} (import it)")
    assert not bad, "tests that share code outside tests/helpers/:\n" + "\n".join(bad)


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def test_markers_say_what_a_test_needs() -> None:
    bad = []
    for path in all_test_files():
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        marks = _markers(ast.parse(text))
        uses = set(re.findall(r"\b\w+\b", text))
        where = path.relative_to(ROOT)
        if uses & set(BROWSER_USES) and "browser" not in marks:
            bad.append(f"  {where}: drives a browser ({', '.join(sorted(uses & set(BROWSER_USES)))}) unmarked")
        elif uses & set(SERVER_USES) and not marks & {"server", "browser"}:
            bad.append(f"  {where}: starts a server ({', '.join(sorted(uses & set(SERVER_USES)))}) unmarked")
    assert not bad, "files without the marker `make test-fast` needs (pytestmark = pytest.mark.…):\n" + "\n".join(bad)


def test_the_fast_layer_leaves_out_the_marked_tests(pytestconfig: pytest.Config) -> None:
    """The markers are registered (an unknown mark would only warn) and the Makefile's fast target filters them."""
    registered = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert {"slow", "browser", "server", "network"} <= registered
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert '-m "not slow and not browser and not server"' in makefile

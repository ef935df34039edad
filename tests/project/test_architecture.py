"""The import graph of the installed folders: no cycles, the allowed layer directions, small modules.

Every module of the folders that pyproject installs under ``madqa.`` is parsed with :mod:`ast` (nothing is
imported). An edge A -> B is any import of B written in A: at module level, inside functions (lazy imports) and
under ``if TYPE_CHECKING:`` alike (a lazy import hides a cycle, it does not remove it), with relative imports
resolved. A string constant that is exactly a module name (``"madqa.bench.extract"``, or a ``py:MODULE:NAME``
spec) counts too: that is how the command registry and ``importlib`` dispatch import their modules.

The layers (arrows = "may import"), also written down in ARCHITECTURE.md:

* ``metric`` -> nothing of the project (it is uploaded to the Hub on its own; relative imports only);
* ``dataset_card`` -> nothing (the card template: data, read by the builder as package data);
* ``loading_script`` -> ``dataset_card`` only (the data pipeline; the metric's offline installation is the
  ``madqa setup`` command's job, not the pipeline's);
* ``agents`` -> ``metric`` (record types, scoring), ``loading_script`` (dataset and page loaders);
* ``space`` -> ``metric``, ``agents``, ``loading_script``;
* ``bench`` -> everything below it, ``space`` included (it measures the Space), but not ``cli``;
* ``cli`` -> everything (one module per command, dispatch only).

So nothing imports ``space`` except ``cli`` and ``bench``, and nothing imports ``cli`` or ``bench`` except
``cli``.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.paths import ROOT

PREFIX = "madqa"

#: Folder -> the other folders its modules may import (a DAG, so folder cycles are impossible when it holds).
ALLOWED: dict[str, frozenset[str]] = {
    "dataset_card": frozenset(),
    "metric": frozenset(),
    "loading_script": frozenset({"dataset_card"}),
    "agents": frozenset({"metric", "loading_script"}),
    "space": frozenset({"metric", "agents", "loading_script"}),
    "bench": frozenset({"metric", "agents", "loading_script", "space"}),
    "cli": frozenset({"metric", "agents", "loading_script", "space", "bench"}),
}

#: Hard cap on a module's length in ruff-formatted lines (`make lint` checks the formatting; split by concept first).
MAX_LINES = 500

_SPEC = re.compile(rf"^(?:py:)?({PREFIX}(?:\.\w+)+)(?::[\w.]+)?$")


@dataclass(frozen=True)
class Module:
    """One source file: its dotted name, path, whether it is a package ``__init__``, and its folder."""

    name: str
    path: Path
    is_package: bool
    folder: str


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``line`` of the source file."""

    source: str
    target: str
    line: int


def installed_folders() -> dict[str, Path]:
    """``madqa.<folder>`` -> source folder, from pyproject's ``package-dir`` (folders with Python files)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    return {
        name.split(".", 1)[1]: ROOT / path
        for name, path in package_dir.items()
        if name.count(".") == 1 and any((ROOT / path).glob("*.py"))
    }


def collect_modules(folders: dict[str, Path]) -> dict[str, Module]:
    """Every ``.py`` file under the folders, keyed by its dotted ``madqa.…`` name."""
    modules: dict[str, Module] = {}
    for folder, base in folders.items():
        for path in sorted(base.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = [PREFIX, folder, *path.relative_to(base).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            name = ".".join(parts)
            modules[name] = Module(name, path, is_package, folder)
    return modules


def _resolve(name: str, modules: dict[str, Module]) -> str | None:
    """The module that ``import name`` loads last: ``name`` itself, or its longest prefix that is a module."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _targets(node: ast.AST, module: Module, modules: dict[str, Module]) -> Iterable[str]:
    """Dotted names (possibly missing modules) that one AST node imports."""
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names if a.name == PREFIX or a.name.startswith(PREFIX + "."))
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            package = module.name if module.is_package else module.name.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{node.module}" if node.module else package
        else:
            base = node.module or ""
        if base != PREFIX and not base.startswith(PREFIX + "."):
            return
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            yield submodule if submodule in modules else base  # `from pkg import submodule` vs a name
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _names_a_module(node):
        match = _SPEC.match(node.value)
        if match and _resolve(match.group(1), modules) is not None:
            yield match.group(1)


def _names_a_module(node: ast.Constant) -> bool:
    """Whether a string is used as an import: a ``py:`` spec, an entry of a registry (tuple, list, dict value) or
    the argument of ``importlib.import_module``; not, say, a logger named after its module."""
    parent = getattr(node, "parent", None)
    if node.value.startswith("py:") or isinstance(parent, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
        return True
    if isinstance(parent, ast.Call):
        func = parent.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in ("import_module", "__import__")
    return False


def import_edges(modules: dict[str, Module]) -> tuple[list[Edge], list[str]]:
    """All import edges between project modules, and the imports of project names that resolve to no module."""
    edges: list[Edge] = []
    unresolved: list[str] = []
    for module in modules.values():
        tree = ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                child.parent = parent  # type: ignore[attr-defined]
        for node in ast.walk(tree):
            for name in _targets(node, module, modules):
                target = _resolve(name, modules)
                if target is None:
                    unresolved.append(f"{_where(module, node)}: imports {name}, which is not a module of the project")
                elif target != module.name:
                    edges.append(Edge(module.name, target, getattr(node, "lineno", 0)))
    return edges, unresolved


def _where(module: Module, node: ast.AST) -> str:
    return f"{module.path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of size > 1 (each sorted), iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def cycle_report(component: list[str], edges: list[Edge]) -> str:
    """The edges inside one strongly connected component, with file lines, one per line."""
    members = set(component)
    inside = sorted({(e.source, e.target, e.line) for e in edges if e.source in members and e.target in members})
    lines = [f"    {s} -> {t} (line {n})" for s, t, n in inside]
    return f"  cycle among {', '.join(component)}:\n" + "\n".join(lines)


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, Module], list[Edge], list[str]]:
    modules = collect_modules(installed_folders())
    edges, unresolved = import_edges(modules)
    return modules, edges, unresolved


def _fail(title: str, violations: list[str]) -> None:
    if violations:
        pytest.fail(f"{title} ({len(violations)}):\n" + "\n".join(violations), pytrace=False)


def test_the_graph_covers_every_installed_folder(graph):
    modules, edges, _ = graph
    assert {m.folder for m in modules.values()} == set(ALLOWED), "a new installed folder needs its row in ALLOWED"
    assert len(edges) > 100  # the parser sees the imports (a broken walk would make every test below pass)
    assert any(e.source == "madqa.cli.bench_cmd" and e.target == "madqa.bench.extract" for e in edges)  # dispatch


def test_every_project_import_names_an_existing_module(graph):
    _, _, unresolved = graph
    _fail("imports of project names that are no module", sorted(unresolved))


def test_no_import_cycles_between_modules(graph):
    modules, edges, _ = graph
    adjacency: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        adjacency[e.source].add(e.target)
    components = strongly_connected({m: adjacency.get(m, set()) for m in modules})
    _fail("import cycles between modules (lazy imports included)", [cycle_report(c, edges) for c in components])


def test_folders_import_only_in_the_allowed_directions(graph):
    modules, edges, _ = graph
    bad = set()
    for e in edges:
        source, target = modules[e.source], modules[e.target]
        if source.folder != target.folder and target.folder not in ALLOWED[source.folder]:
            allowed = ", ".join(sorted(ALLOWED[source.folder])) or "nothing else"
            bad.add(
                f"  {source.path.relative_to(ROOT)}:{e.line}: {e.source} imports {e.target} "
                f"({source.folder} may import {allowed})"
            )
    bad = sorted(bad)
    _fail("imports against the layering", bad)


def test_no_import_cycles_between_folders(graph):
    modules, edges, _ = graph
    adjacency: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        if modules[e.source].folder != modules[e.target].folder:
            adjacency[modules[e.source].folder].add(modules[e.target].folder)
    components = strongly_connected({f: adjacency.get(f, set()) for f in ALLOWED})
    folder_edges = [Edge(modules[e.source].folder, modules[e.target].folder, 0) for e in edges]
    _fail("import cycles between folders", [cycle_report(c, folder_edges) for c in components])


def test_metric_uses_relative_imports_only(graph):
    """The metric folder is copied to evaluate's cache and the Hub: an absolute ``madqa.`` import breaks there."""
    modules, _, _ = graph
    bad = []
    for module in modules.values():
        if module.folder != "metric":
            continue
        for node in ast.walk(ast.parse(module.path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == PREFIX for a in node.names):
                bad.append(f"  {_where(module, node)}: absolute import of the project")
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == PREFIX:
                bad.append(f"  {_where(module, node)}: absolute import of the project")
    _fail("metric/ must import its siblings relatively", bad)


def project_python_files() -> list[Path]:
    """Every Python file of the project: the packages, tests/, scripts/, docs/ (no hidden folder, e.g. .venv or .git,
    and no build output)."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in ("build", "node_modules"))
        found += [Path(folder) / name for name in sorted(files) if name.endswith(".py")]
    return found


def test_no_module_over_the_line_cap():
    """Product code and tests alike (a long test file is split by concept too)."""
    long = sorted(
        (len(path.read_text(encoding="utf-8").splitlines()), str(path.relative_to(ROOT)))
        for path in project_python_files()
    )
    _fail(
        f"modules over {MAX_LINES} lines (split them by concept)",
        [f"  {path}: {n} lines" for n, path in long if n > MAX_LINES],
    )


#: The one module that may name the agents of ``agents/baselines/``: the registry, by ``MODULE:NAME`` string.
AGENT_LOOKUP = "madqa.agents.harness.registry"
BASELINES = "madqa.agents.baselines."


def _baseline(module: str) -> str | None:
    """``bm25`` for ``madqa.agents.baselines.bm25.prepare``; ``None`` outside the baselines."""
    return module[len(BASELINES) :].split(".")[0] if module.startswith(BASELINES) else None


def test_no_agent_imports_another_agent_and_only_the_registry_names_them(graph):
    """Shared machinery lives in harness/, models/, corpus/, sandbox/ or search_loop/, never inside a peer agent, so
    an agent can be removed (or added as a plugin) without touching another."""
    _, edges, _ = graph
    bad = []
    for edge in edges:
        target = _baseline(edge.target)
        if target is None or _baseline(edge.source) == target or edge.source == AGENT_LOOKUP:
            continue
        bad.append(f"  {edge.source} (line {edge.line}) imports the agent {target!r} ({edge.target})")
    _fail("imports of an agent from outside it (move what they share out of the agent)", bad)


@pytest.mark.slow
def test_no_formatter_escapes():
    """The cap counts formatted lines, so nothing may opt out of ``ruff format`` (``make lint`` checks the rest)."""
    escapes = re.compile(r"#\s*fmt:\s*(skip|off)\b")
    hits = []
    for path in project_python_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if escapes.search(line):
                hits.append(f"  {path.relative_to(ROOT)}:{number}")
    _fail("formatter escapes (format the code; split a module that grows past the cap)", hits)


def architecture_layers(text: str) -> dict[str, frozenset[str]]:
    """The layer table of ARCHITECTURE.md (the rows after its ``<!-- layers`` marker): folder -> may import."""
    rows: dict[str, frozenset[str]] = {}
    lines = text.split("<!-- layers", 1)[1].splitlines()[1:]
    for line in lines:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        folder = cells[0].strip("`")
        if folder in ("folder", "---"):
            continue
        rows[folder] = frozenset(x.strip().strip("`") for x in cells[1].split(",") if x.strip() not in ("", "—"))
    return rows


def test_architecture_md_states_the_enforced_layers_and_names_every_package(graph):
    modules, _, _ = graph
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert architecture_layers(text) == ALLOWED, "ARCHITECTURE.md's layer table differs from ALLOWED here"
    folders = installed_folders()
    missing = sorted(
        f"{m.path.parent.relative_to(ROOT).as_posix()}/"
        for m in modules.values()
        if m.is_package and f"`{m.path.parent.relative_to(ROOT).as_posix()}/`" not in text
    )
    assert set(folders) <= {m.folder for m in modules.values()}
    _fail("packages that ARCHITECTURE.md's folder map does not name", [f"  {p}" for p in missing])


def test_the_checker_finds_cycles_and_layer_breaks(tmp_path, monkeypatch):
    """The checks themselves, on a made-up tree: a lazy relative-import cycle, a spec, a registry and a logger."""
    (tmp_path / "low").mkdir()
    (tmp_path / "high").mkdir()
    (tmp_path / "low" / "__init__.py").write_text("")
    (tmp_path / "low" / "a.py").write_text("from . import b\n")
    (tmp_path / "low" / "b.py").write_text("def f():\n    from .a import g\n    from madqa.high.c import h\n")
    (tmp_path / "high" / "__init__.py").write_text("")
    (tmp_path / "high" / "c.py").write_text(
        "from madqa.low import a\nNAME = 'py:madqa.low.b:f'\n"
        "log = logging.getLogger('madqa.low.a')\nTABLE = ('madqa.high',)\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    modules = collect_modules({"low": tmp_path / "low", "high": tmp_path / "high"})
    edges, unresolved = import_edges(modules)
    assert unresolved == []
    assert sorted((e.source, e.target, e.line) for e in edges) == [
        ("madqa.high.c", "madqa.high", 4),  # a registry entry
        ("madqa.high.c", "madqa.low.a", 1),  # not line 3: a logger's name is no import
        ("madqa.high.c", "madqa.low.b", 2),  # a py:MODULE:NAME spec
        ("madqa.low.a", "madqa.low.b", 1),  # `from . import b` is the submodule
        ("madqa.low.b", "madqa.high.c", 3),  # lazy, absolute
        ("madqa.low.b", "madqa.low.a", 2),  # lazy, relative
    ]
    adjacency: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        adjacency[e.source].add(e.target)
    components = strongly_connected({m: adjacency[m] for m in modules})
    assert components == [["madqa.high.c", "madqa.low.a", "madqa.low.b"]]
    assert "madqa.low.b -> madqa.high.c (line 3)" in cycle_report(components[0], edges)

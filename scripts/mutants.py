"""Seed listed slips into the security- and scoring-critical modules, one at a time, and check the tests catch each.

Usage::

    .venv/bin/python scripts/mutants.py                 # every mutant of scripts/mutants.yaml
    .venv/bin/python scripts/mutants.py --only repl-ptrace-allowed fetch-429-not-retried
    .venv/bin/python scripts/mutants.py --list          # the list, without running anything

Each mutant of ``scripts/mutants.yaml`` names a source file, an exact snippet in it (which must occur exactly
once), its replacement, the test files (or node ids) that must catch it and a one-line description. The script
copies the working tree's files (``git ls-files --cached --others --exclude-standard``: committed and new files, not
ignored ones) into a temporary folder, and runs the listed tests there with the repository's ``.venv``. The package
is installed editable with a ``package-dir`` mapping (``madqa.agents`` -> ``agents/``, ...) whose finder is consulted
*after* ``sys.path``; so the copy is made importable as ``madqa.*`` by a folder of symbolic links named in
``PYTHONPATH`` (``madqa/agents -> COPY/agents``, ...), outside the copy's root (a ``madqa/`` folder there would shadow
``load_dataset("madqa")``). Before any mutant, the script checks that ``madqa`` is imported from the copy (by its
``__file__``, and by a canary: the first mutant's module made unloadable must fail its first test file) and that the
listed tests pass on the unmutated copy. The shared working tree is never written to.

A mutant is *killed* when its tests fail (or time out); *survived* when they pass. Prints a table and exits 1 if
any mutant survived (2: a setup problem: a snippet not found once, the baseline failing, the copy not imported).
Not part of ``make test``: it runs the listed tests once per mutant (minutes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LIST = Path(__file__).with_name("mutants.yaml")


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    find: str
    replace: str
    tests: tuple[str, ...]
    description: str


def load_mutants(path: Path = LIST) -> list[Mutant]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    mutants = [
        Mutant(
            str(m["id"]),
            str(m["file"]),
            str(m["find"]),
            str(m["replace"]),
            tuple(m["tests"]),
            " ".join(str(m["description"]).split()),
        )
        for m in raw["mutants"]
    ]
    ids = [m.id for m in mutants]
    if len(set(ids)) != len(ids):
        raise SystemExit(f"{path}: duplicate mutant ids")
    return mutants


def check_snippets(mutants: list[Mutant], root: Path) -> list[str]:
    problems = []
    for m in mutants:
        text = (root / m.file).read_text(encoding="utf-8")
        if text.count(m.find) != 1:
            problems.append(f"{m.id}: the snippet occurs {text.count(m.find)} times in {m.file} (expected once)")
        if m.find == m.replace:
            problems.append(f"{m.id}: the replacement equals the snippet")
    return problems


def make_copy(dest: Path) -> Path:
    """Copy the working tree's committed and new (not ignored) files to ``dest/repo``; link ``dest/site/madqa``."""
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    repo = dest / "repo"
    for name in filter(None, files):
        src = ROOT / name
        if not src.is_file() or src.is_symlink():
            continue
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    site = dest / "site" / "madqa"
    site.mkdir(parents=True)
    for package, folder in mapping.items():
        (site / package.split(".", 1)[1]).symlink_to(repo / folder, target_is_directory=True)
    return repo


def environment(dest: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(dest / "site") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def imported_from_copy(dest: Path) -> str | None:
    """``None`` when ``madqa.*`` resolves into the copy, else where it comes from."""
    probe = (
        "import madqa.metric, madqa.agents.sandbox.walls as w, madqa.space; print(madqa.metric.__file__, w.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=dest / "repo", env=environment(dest), capture_output=True, text=True
    )
    paths = out.stdout.split()
    if out.returncode or not paths or not all(str(Path(os.path.realpath(p))).startswith(str(dest)) for p in paths):
        return (out.stdout + out.stderr).strip() or "nothing printed"
    return None


def run_tests(dest: Path, tests: tuple[str, ...], timeout_s: float) -> tuple[str, float, str]:
    """``("passed" | "failed" | "timeout", seconds, tail of the output)``."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-o", "addopts=", *tests]
    start = time.monotonic()
    try:
        out = subprocess.run(
            cmd, cwd=dest / "repo", env=environment(dest), capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired as exc:
        tail = (exc.stdout or b"")[-600:] if isinstance(exc.stdout, bytes) else (exc.stdout or "")[-600:]
        return "timeout", time.monotonic() - start, str(tail)
    status = "passed" if out.returncode == 0 else "failed"
    return status, time.monotonic() - start, (out.stdout + out.stderr)[-1500:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="ID", help="run only these mutants")
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per test run (default 300)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run of the tests on the unmutated copy")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the output tail of each run")
    args = parser.parse_args(argv)

    mutants = load_mutants()
    if args.only:
        unknown = set(args.only) - {m.id for m in mutants}
        if unknown:
            parser.error(f"unknown mutant id(s): {', '.join(sorted(unknown))}")
        mutants = [m for m in mutants if m.id in args.only]
    if args.list:
        for m in mutants:
            print(f"{m.id:34} {m.file:34} {m.description}")
        return 0
    problems = check_snippets(mutants, ROOT)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="madqa-mutants-") as tmp:
        dest = Path(tmp)
        repo = make_copy(dest)
        where = imported_from_copy(dest)
        if where is not None:
            print(f"madqa is not imported from the copy: {where}", file=sys.stderr)
            return 2
        canary = mutants[0]  # a deliberate failing mutant: its module cannot be loaded at all; its tests must fail
        path = repo / canary.file
        original = path.read_text(encoding="utf-8")
        path.write_text('raise RuntimeError("mutants.py canary")\n' + original, encoding="utf-8")
        try:
            status, seconds, tail = run_tests(dest, canary.tests[:1], args.timeout)
        finally:
            path.write_text(original, encoding="utf-8")
        print(f"canary ({canary.file} unloadable, {canary.tests[0]}): {status} in {seconds:.0f} s", flush=True)
        if status != "failed":
            print("the canary was not caught: the tests do not import the copy", file=sys.stderr)
            return 2
        if not args.no_baseline:
            union = tuple(dict.fromkeys(t for m in mutants for t in m.tests))
            status, seconds, tail = run_tests(dest, union, args.timeout * 2)
            print(f"baseline (unmutated copy, {len(union)} test target(s)): {status} in {seconds:.0f} s", flush=True)
            if status != "passed":
                print(tail, file=sys.stderr)
                return 2
        rows = []
        for m in mutants:
            path = repo / m.file
            original = path.read_text(encoding="utf-8")
            path.write_text(original.replace(m.find, m.replace, 1), encoding="utf-8")
            try:
                status, seconds, tail = run_tests(dest, m.tests, args.timeout)
            finally:
                path.write_text(original, encoding="utf-8")
            verdict = "survived" if status == "passed" else ("killed (timeout)" if status == "timeout" else "killed")
            rows.append((m, verdict, seconds))
            print(f"{verdict:16} {seconds:6.1f} s  {m.id}", flush=True)
            if args.verbose or verdict == "survived":
                print("    " + tail.strip().replace("\n", "\n    "), flush=True)
    total = time.monotonic() - started
    print()
    print(f"{'mutant':34} {'file':36} {'result':16} {'time':>7}  description")
    for m, verdict, seconds in rows:
        print(f"{m.id:34} {m.file:36} {verdict:16} {seconds:6.1f}s  {m.description}")
    survived = [m.id for m, verdict, _ in rows if verdict == "survived"]
    print(
        f"\n{len(rows) - len(survived)} of {len(rows)} killed, {len(survived)} survived ({total / 60:.1f} min in all)"
    )
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())

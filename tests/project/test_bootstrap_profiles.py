"""``scripts/bootstrap.sh demo`` (``make demo``) needs no root where Tesseract is installed, and says in one line what
to install where it is not; ``make test`` keeps the full profile. Run on a PATH of stand-ins (``id``, ``tesseract``,
``apt-get``, ``python3``) so that nothing is installed: each run stops at the Python check, before the venv."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from helpers.paths import ROOT

SCRIPT = ROOT / "scripts" / "bootstrap.sh"


def stand_ins(tmp_path: Path, *, tesseract_langs: str | None) -> Path:
    """A bin folder: a non-root ``id``, an ``apt-get`` that records its calls, a ``python3`` too old to go on, and
    a ``tesseract`` listing ``tesseract_langs`` (none at all for ``None``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "id": "echo 1000",
        "apt-get": f'echo "$@" >> {tmp_path}/apt-calls; exit 0',
        "python3": "exit 1",  # the version check fails: the script stops before creating .venv
    }
    if tesseract_langs is not None:
        scripts["tesseract"] = f'printf "List of available languages (1):\\n{tesseract_langs}\\n"'
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    for tool in ("dirname", "grep", "sha256sum", "cut", "cat"):  # what the script runs besides the stand-ins
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return bin_dir


def bootstrap(tmp_path: Path, bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    return subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_demo_with_tesseract_installed_needs_no_apt(tmp_path: Path) -> None:
    done = bootstrap(tmp_path, stand_ins(tmp_path, tesseract_langs="eng\nosd"), "demo")
    assert "MADQA needs Python >= 3.11" in done.stderr  # it went past the Tesseract step without apt or root
    assert "Debian packages" not in done.stderr
    assert not (tmp_path / "apt-calls").exists()


def test_demo_without_tesseract_and_root_says_what_to_install_in_one_line(tmp_path: Path) -> None:
    for langs in (None, "osd"):  # no tesseract at all; a tesseract without English
        work = tmp_path / ("none" if langs is None else "no-eng")
        work.mkdir()
        done = bootstrap(work, stand_ins(work, tesseract_langs=langs), "demo")
        assert done.returncode == 1
        assert done.stderr.splitlines() == [
            "bootstrap: missing Debian packages and no root to install them: "
            "apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd"
        ]
        assert not (work / "apt-calls").exists()


def test_the_profile_is_demo_or_test_and_test_is_the_default(tmp_path: Path) -> None:
    bin_dir = stand_ins(tmp_path, tesseract_langs="eng")
    done = bootstrap(tmp_path, bin_dir, "dmeo")
    assert done.returncode == 2 and "unknown profile 'dmeo'" in done.stderr
    # With no argument (and no dpkg on this PATH) the test profile asks for its full set of Debian packages.
    done = bootstrap(tmp_path, bin_dir)
    assert done.returncode == 1
    assert re.search(
        r"apt-get install tesseract-ocr .*tesseract-ocr-deu poppler-utils fonts-dejavu-core$", done.stderr.strip()
    )


def test_make_demo_uses_the_demo_profile_and_make_test_the_full_one() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^install-demo:\n\tbash scripts/bootstrap.sh demo$", makefile, re.M)
    assert re.search(r"^demo: install-demo$", makefile, re.M)
    assert "MADQA_WITH_BROWSER=1 bash scripts/bootstrap.sh test" in makefile
    assert os.access(SCRIPT, os.R_OK)

"""Publish the metric folder as an evaluate metric Space (``madqa publish metric --repo ORG/NAME``).

A metric Space's repository root is the metric folder: ``evaluate.load("ORG/NAME")`` downloads ``madqa.py`` and
the modules it imports relatively, and the Space runs ``app.py`` (named by the card's ``app_file``). So exactly
that set is staged, never the whole folder: no tests, caches, ``__init__.py`` or publishing code. The staged
README must carry the Space header (``sdk``, ``app_file``); a folder that lacks a file or the header is refused
before anything is sent. evaluate fetches ``<NAME>.py`` from ``ORG/NAME``, so for a Space not named ``madqa`` the
script is staged a second time under that name (``app.py`` keeps loading ``madqa.py``).
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: The metric's script (what ``app.py`` loads).
SCRIPT = "madqa.py"

#: Files a metric Space needs besides ``madqa.py`` and its relative imports.
SPACE_FILES = ("app.py", "README.md", "requirements.txt")
#: Card keys the Hub needs to build the Space.
REQUIRED_CARD_KEYS = ("sdk", "sdk_version", "app_file")
#: A Space name evaluate can use as its script's module name.
_SPACE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class PublishMetricResult:
    """What was published: the Space's URL and commit (``None`` for a dry run) and the staged file names."""

    repo_id: str
    url: str | None
    commit: str | None
    files: list[str] = field(default_factory=list)
    staged_dir: Path | None = None


def _metric_dir() -> Path:
    from madqa.metric import install

    return Path(install.__file__).resolve().parent


def card_header(readme: Path) -> dict[str, Any]:
    """The YAML front matter of a card (empty when it has none)."""
    import yaml

    text = readme.read_text(encoding="utf-8")
    if not text.startswith("---"):
        return {}
    meta = yaml.safe_load(text.split("---", 2)[1])
    return meta if isinstance(meta, dict) else {}


def space_files(metric_dir: Path | None = None) -> list[Path]:
    """The files of the metric Space: ``madqa.py``, its relative imports, ``app.py``'s, and :data:`SPACE_FILES`.

    Raises:
        madqa.cli.UserError: a file is missing, or the card lacks the Space header.
    """
    from madqa.cli.errors import UserError
    from madqa.metric.install import module_files, relative_imports

    folder = metric_dir or _metric_dir()
    try:
        files = module_files(folder)
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    extra = [folder / name for name in SPACE_FILES]
    if (folder / "app.py").is_file():
        extra += [folder / f"{name}.py" for name in relative_imports(folder / "app.py")]
    for path in extra:
        if not path.is_file():
            raise UserError(f"{path}: missing (a metric Space needs it)")
        if path not in files:
            files.append(path)
    header = card_header(folder / "README.md")
    missing = [key for key in REQUIRED_CARD_KEYS if not header.get(key)]
    if missing:
        raise UserError(f"{folder / 'README.md'}: the front matter lacks {', '.join(missing)} (needed by a Space)")
    if header["app_file"] != "app.py":
        raise UserError(f"{folder / 'README.md'}: app_file is {header['app_file']!r}; the staged app is app.py")
    return files


def stage(target: Path, metric_dir: Path | None = None, script_name: str = SCRIPT) -> list[str]:
    """Copy the Space's files flat into ``target`` (created; must be empty) and return their names, sorted.

    ``script_name`` is the file name evaluate fetches (``<NAME>.py`` of ``ORG/NAME``); when it is not
    ``madqa.py`` the script is copied under both names.
    """
    from madqa.cli.errors import UserError

    target.mkdir(parents=True, exist_ok=True)
    if any(target.iterdir()):
        raise UserError(f"{target}: not empty (the staged folder must hold only the Space's files)")
    paths = space_files(metric_dir)
    names = [path.name for path in paths]
    if script_name != SCRIPT and script_name in names:
        raise UserError(f"a Space named {script_name[:-3]!r} would make evaluate load {script_name} as the metric")
    for path in paths:
        shutil.copyfile(path, target / path.name)
    if script_name not in names:
        shutil.copyfile(target / SCRIPT, target / script_name)
        names.append(script_name)
    return sorted(names)


def publish_metric(
    repo_id: str,
    *,
    token: str | None = None,
    private: bool = False,
    api: Any = None,
    dry_run_dir: Path | None = None,
    metric_dir: Path | None = None,
) -> PublishMetricResult:
    """Stage the metric Space and push it to ``repo_id`` (a gradio Space, created if absent).

    Args:
        repo_id: ``ORG/NAME`` of the Space.
        token: Hub token (default: the logged-in one); ignored when ``api`` is given.
        private: create the Space private (an existing Space keeps its visibility).
        api: an ``HfApi``-like object (tests pass a fake); default ``HfApi(token=token)``.
        dry_run_dir: stage into this folder and stop (nothing is sent).
        metric_dir: the metric folder (default: the installed ``madqa.metric``).

    Raises:
        madqa.cli.UserError: a bad repo id, a missing file or card key, or a Hub error (one line).
    """
    from madqa.cli.errors import UserError

    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise UserError(f"--repo {repo_id!r}: expected ORG/NAME")
    name = repo_id.split("/")[1]
    if not _SPACE_NAME.fullmatch(name):
        raise UserError(
            f"--repo {repo_id!r}: NAME may hold only letters, digits, '-' and '_' (evaluate imports "
            f"NAME.py as a module)"
        )
    script_name = f"{name}.py"
    if dry_run_dir is not None:
        files = stage(Path(dry_run_dir), metric_dir, script_name)
        logger.info("staged %d files for %s in %s (dry run: nothing sent)", len(files), repo_id, dry_run_dir)
        return PublishMetricResult(repo_id, None, None, files, Path(dry_run_dir))
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="madqa-metric-space-") as tmp:
        files = stage(Path(tmp) / "space", metric_dir, script_name)
        try:
            repo = api.create_repo(repo_id, repo_type="space", space_sdk="gradio", exist_ok=True, private=private)
            # delete_patterns: a module dropped from the metric must not linger on the Space
            commit = api.upload_folder(
                folder_path=str(Path(tmp) / "space"),
                repo_id=repo_id,
                repo_type="space",
                commit_message=f"Publish the MADQA metric ({len(files)} files)",
                delete_patterns=["*.py"],
            )
        except Exception as exc:  # Hub errors (auth, network, offline mode): one line naming the repo
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UserError(f"cannot publish the metric Space {repo_id}: {type(exc).__name__}: {first}") from None
    url = str(getattr(repo, "url", None) or repo or f"https://huggingface.co/spaces/{repo_id}")
    oid = getattr(commit, "oid", None) or getattr(commit, "commit_url", None)
    logger.info("published %d files to %s", len(files), url)
    return PublishMetricResult(repo_id, url, None if oid is None else str(oid), files)

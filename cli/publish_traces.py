"""Publish a folder of agent traces (``madqa export traces``) to a Hub dataset or storage bucket.

``madqa publish traces DIR --repo ORG/NAME`` creates the dataset repo if needed and uploads the folder's session
files (``*.jsonl``) under ``--path-in-repo`` (default: the root) with ``upload_folder``; with ``--bucket`` it creates
the storage bucket and syncs the folder into ``hf://buckets/ORG/NAME/<path>`` (``HfApi.sync_bucket``, in the
huggingface_hub versions with storage buckets). The Hub renders either in its trace viewer. Every file is checked first
(:func:`madqa.agents.export.check.session_problems`: the format's required fields, tool results linked to calls, no
string left that looks like a key or a local path); one bad file refuses the whole upload, before anything is sent.

A dataset gets a dataset card too (:mod:`madqa.agents.export.card`: the run's agent, model, split, harness version,
how the traces were redacted), as its ``README.md``, uploaded after the sessions; not with ``--path-in-repo`` (the
repo then holds several runs: its card is the maintainers'), nor with ``--no-card``, nor for a bucket (a bucket has
no card).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from madqa.cli.errors import UserError

logger = logging.getLogger(__name__)
#: The dataset card's file name in the repo.
CARD_NAME = "README.md"


@dataclass(frozen=True)
class PublishedTraces:
    """Where the sessions went: the repo or bucket id, its URL, the commit (a dataset), the session files sent, and
    the dataset card's path in the repo (``None`` when none was written)."""

    repo_id: str
    url: str
    commit: str | None
    files: list[str]
    card: str | None = None


def session_files(folder: Path) -> list[Path]:
    """The session files of ``folder``, each checked.

    Raises:
        UserError: no such folder, no ``*.jsonl`` in it, or a file that fails a check (the first problems named).
    """
    from madqa.agents.export.check import session_problems
    from madqa.agents.export.redact import Redactor

    if not folder.is_dir():
        raise UserError(f"{folder}: no such folder (write one with `madqa export traces RUN --output-dir DIR`)")
    files = sorted(folder.rglob("*.jsonl"))
    if not files:
        raise UserError(f"{folder}: no session files (*.jsonl) in it")
    redactor = Redactor()
    problems = [p for path in files for p in session_problems(path, redactor)]
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise UserError("; ".join(problems[:3]) + more)
    return files


def publish_traces(
    folder: Path,
    repo: str,
    *,
    bucket: bool = False,
    private: bool = False,
    path_in_repo: str = "",
    card: bool = True,
    api: Any = None,
) -> PublishedTraces:
    """Check the folder's sessions and upload them to the dataset (or, with ``bucket``, the storage bucket) ``repo``.

    ``card``: also write the dataset's ``README.md`` (a dataset at its root only; see the module docstring).
    ``api``: an ``HfApi``-like object (tests pass a fake); default ``HfApi()`` with the saved token or ``HF_TOKEN``.
    """
    files = session_files(folder)
    names = [str(p.relative_to(folder)) for p in files]
    prefix = path_in_repo.strip("/")
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    if bucket:
        if not hasattr(api, "sync_bucket"):
            raise UserError("--bucket needs a huggingface_hub with storage buckets (HfApi.sync_bucket); upgrade it")
        created = api.create_bucket(repo, private=private, exist_ok=True)
        api.sync_bucket(str(folder), f"hf://buckets/{repo}" + (f"/{prefix}" if prefix else ""), include=["*.jsonl"])
        url = str(getattr(created, "url", "") or f"https://huggingface.co/buckets/{repo}")
        return PublishedTraces(repo, url, None, names)
    readme = None
    if card and not prefix:  # built before anything is sent: a card that fails its check refuses the upload
        from madqa.agents.export.card import read_headers, traces_card

        try:
            readme = traces_card(read_headers(files), repo)
        except ValueError as exc:
            raise UserError(f"{folder}: {exc}") from None
    created = api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(
        folder_path=str(folder),
        repo_id=repo,
        repo_type="dataset",
        path_in_repo=prefix or None,
        allow_patterns=["*.jsonl"],
        commit_message=f"MADQA traces: {len(names)} session(s)",
    )
    if readme is not None:
        commit = api.upload_file(
            path_or_fileobj=readme.encode("utf-8"),
            path_in_repo=CARD_NAME,
            repo_id=repo,
            repo_type="dataset",
            commit_message="MADQA traces: dataset card",
        )
    url = str(getattr(created, "url", "") or f"https://huggingface.co/datasets/{repo}")
    return PublishedTraces(repo, url, getattr(commit, "oid", None), names, CARD_NAME if readme is not None else None)

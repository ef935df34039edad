"""A stand-in for ``huggingface_hub.HfApi`` in publishing tests: it records each call and keeps a copy of what an
upload would push, so a test checks what reaches the Hub without the network."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any


class _Reply(str):
    """What the Hub answers: a string (as ``RepoUrl`` and ``CommitInfo`` are) with their attributes."""

    url: str
    oid: str


def _reply(text: str, **attributes: str) -> _Reply:
    reply = _Reply(text)
    for name, value in attributes.items():
        setattr(reply, name, value)
    return reply


class FakeHfApi:
    """``calls`` holds ``(method, keyword arguments)`` (``create_repo``'s ``repo_id`` among them); ``pushed``
    receives a copy of every uploaded folder; ``repo_info`` reports a repo as ``private``."""

    def __init__(self, pushed: Path | None = None, *, private: bool = True) -> None:
        self.pushed, self.private = pushed, private
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @property
    def methods(self) -> list[str]:
        """The methods called, in order."""
        return [name for name, _ in self.calls]

    def create_repo(self, repo_id: str, **kwargs: Any) -> _Reply:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))
        kind = kwargs.get("repo_type") or "model"
        url = f"https://huggingface.co/{'' if kind == 'model' else kind + 's/'}{repo_id}"
        return _reply(url, url=url)

    def repo_info(self, repo_id: str, **kwargs: Any) -> Any:
        return SimpleNamespace(private=self.private)

    def upload_folder(self, *, folder_path: str, **kwargs: Any) -> _Reply:
        self.calls.append(("upload_folder", kwargs))
        if self.pushed is not None:
            shutil.copytree(folder_path, self.pushed, dirs_exist_ok=True)
        return _reply("commit", oid="c0ffee")

    def upload_file(self, **kwargs: Any) -> _Reply:
        self.calls.append(("upload_file", kwargs))
        return _reply("commit", oid="c0ffee")
